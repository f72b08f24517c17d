package vault

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"svc.dev/svc/vault/backend"
	"svc.dev/svc/vault/internal/seal"
)

// pending is a small Put waiting for its group commit.
type pending struct {
	draft  Object
	data   []byte
	digest Digest
	text   []byte
	tself  bool
	trange Range // the text is this range of data (text is nil)
	done   chan struct{}
	res    Object
	err    error
	stored bool // the object was committed before with this content: res is it
}

func (p *pending) finish(o Object, err error) {
	p.res, p.err = o, err
	close(p.done)
}

// committer gathers a tenant's small Puts into group commits: whatever
// arrives while one group is being written forms the next, so under
// concurrency many objects share one pack file, one fsync and one metadata
// transaction, and alone an object waits for nobody. The first Put to find
// the committer idle leads; after its group it hands over to a new
// goroutine if more are queued.
//
// A group commit has two stages: writing (look up what is stored, seal, append
// to the pack, sync, read back and verify) and recording (the metadata
// transaction). Writing is one group at a time (write); with groupsInFlight
// above one, a group records while the next one writes.
type committer struct {
	v       *Vault
	t       *tenant
	mu      sync.Mutex
	queue   []*pending
	running int // groups being committed
	// preparing counts the Puts that hold their content in memory and are
	// hashing it (and finding its text) before they queue; arrived is
	// signalled when one queues.
	preparing int
	arrived   chan struct{}
	// answered is how many Puts the last group answered: under load their
	// callers come back with their next content at once.
	answered int

	write sync.Mutex // held while a group is written; guards pack
	pack  *openPack  // the pack groups are appended to (backend.Appender only)
}

// openPack is a tenant's pack file open for appending.
type openPack struct {
	name string
	f    backend.AppendFile
	size int64
	// recording counts the groups written into the pack whose records are
	// not yet stored: the pack is only closed (and removed if unused) once
	// they are.
	recording sync.WaitGroup
}

// groupsInFlight is how many groups of a tenant may be committed at once. With
// two, one is written while the one before it is recorded; on the project's
// machine (2 cores, bbolt records) that halved the groups (11 objects instead
// of 16 with 32 Puts in flight), and since the store's commit costs per commit
// (two fdatasyncs and 35 or more page writes) more than per object, it cost
// 10-20% more CPU per object for no clear gain in rate. So a tenant writes and
// records one group at a time; the stages stay apart (and an open pack waits
// for the groups being recorded) so that a cheaper store can raise it.
var groupsInFlight = 1

func (c *committer) submit(p *pending) (Object, error) {
	// Close waits for every queued Put: count this one, unless closed.
	c.v.mu.Lock()
	if c.v.closed {
		c.v.mu.Unlock()
		c.unprepare()
		return Object{}, ErrClosed
	}
	c.v.work.Add(1)
	c.v.mu.Unlock()
	defer c.v.work.Done()

	c.mu.Lock()
	c.queue = append(c.queue, p)
	c.preparing--
	select {
	case c.arrived <- struct{}{}:
	default:
	}
	lead := c.running < groupsInFlight
	if lead {
		c.running++
	}
	c.mu.Unlock()
	if lead {
		c.run()
	}
	<-p.done
	return p.res, p.err
}

func (c *committer) run() {
	if d := c.v.opts.GroupCommitDelay; d > 0 {
		time.Sleep(d)
	}
	// The group is taken once it may be written: what queued meanwhile
	// joins it, and what is about to queue is waited for.
	c.write.Lock()
	c.awaitPreparing()
	c.mu.Lock()
	var batch []*pending
	var size int64
	for len(c.queue) > 0 && (len(batch) == 0 || size+int64(len(c.queue[0].data)) <= c.v.opts.MaxPackSize) {
		size += int64(len(c.queue[0].data))
		batch = append(batch, c.queue[0])
		c.queue = c.queue[1:]
	}
	c.mu.Unlock()
	if len(batch) > 0 {
		g := c.writeGroup(batch)
		c.write.Unlock()
		c.record(g)
	} else {
		c.write.Unlock()
	}
	c.mu.Lock()
	if len(c.queue) > 0 {
		go c.run() // a queued Put is counted in v.work until its group is done
	} else {
		c.running--
		if len(c.queue) == 0 {
			c.queue = nil
		}
	}
	c.mu.Unlock()
}

// maxCohortWait bounds how long a group waits for the Puts that are preparing.
const maxCohortWait = time.Millisecond

// prepare counts a Put that holds its content and will queue once it is hashed
// (submit, or unprepare if it fails before).
func (c *committer) prepare() {
	c.mu.Lock()
	c.preparing++
	c.mu.Unlock()
}

// unprepare uncounts a Put that will not queue after all.
func (c *committer) unprepare() {
	c.mu.Lock()
	c.preparing--
	c.mu.Unlock()
	select {
	case c.arrived <- struct{}{}:
	default:
	}
}

// awaitPreparing lets a group wait (at most maxCohortWait) for the Puts about to
// queue: those preparing (hashing content they hold), and the callers the last
// group answered, who under load come back together with their next content,
// until none has come for cohortSettle. Without it, 32 callers split into two
// cohorts of 16 that alternate, each group's callers coming back while the next
// group is written; with it they form one group of about 32, which halves the
// metadata commits (each costs more than the objects in it: two fdatasyncs and
// 50 or more page writes on bbolt) for 15-20% less CPU per object in A/B runs. A
// caller alone waits for nobody.
func (c *committer) awaitPreparing() {
	c.mu.Lock()
	want := len(c.queue)
	if c.answered > 1 { // one caller alone comes back to lead: nobody to wait for
		want += c.answered
	}
	c.answered = 0
	c.mu.Unlock()
	var timer *time.Timer
	for {
		c.mu.Lock()
		n, q := c.preparing, len(c.queue)
		c.mu.Unlock()
		if n <= 0 && q >= want {
			return
		}
		if timer == nil {
			timer = time.NewTimer(maxCohortWait)
			defer timer.Stop()
		}
		settle := time.NewTimer(cohortSettle)
		select {
		case <-c.arrived:
			settle.Stop()
		case <-settle.C:
			if n <= 0 {
				return // nobody came back meanwhile
			}
		case <-timer.C:
			settle.Stop()
			return
		}
	}
}

// cohortSettle: a group stops waiting for the last group's callers when none
// has come back for this long.
const cohortSettle = 100 * time.Microsecond

// closeOpen closes the open pack (see closePack) once no group is being written.
func (c *committer) closeOpen(ctx context.Context) {
	c.write.Lock()
	defer c.write.Unlock()
	c.closePack(ctx)
}

// entry is one sealed stream in a pack being written.
type entry struct {
	digest Digest // of the content the entry belongs to
	text   bool   // the entry is that content's extracted text
	plain  Digest // of the entry's plaintext
	data   []byte // the plaintext, which the read-back must give again
	size   int64
	p      Placement
	err    error
}

// sealers are a group commit's sealed-stream groups, one per purpose: every entry of
// a group commit is sealed under one stream key per purpose (seal.Group, format
// version 2), derived once for the group instead of once per entry, and the read-back
// opens the entries with the same keys after checking that the stored headers are
// the ones written.
type sealers struct{ content, text *seal.Group }

// newSealers starts the groups of a group commit: version 4 (every entry
// bound to the tenant, its purpose and its content's digest), or version 2
// in legacy mode.
func (v *Vault) newSealers(t *tenant) (*sealers, error) {
	group := func(purpose string) (*seal.Group, error) {
		if v.legacy {
			return seal.NewGroup(t.dataKey, purpose)
		}
		return seal.NewBoundGroup(t.dataKey, purpose, t.name)
	}
	c, err := group(purposeContent)
	if err != nil {
		return nil, err
	}
	tx, err := group(purposeText)
	if err != nil {
		return nil, err
	}
	return &sealers{content: c, text: tx}, nil
}

// format is the Placement.Format of the entries the sealers write.
func (s *sealers) format() uint8 {
	if s.content.Version() == seal.VersionGroup4 {
		return seal.VersionGroup4
	}
	return 0
}

func (s *sealers) of(text bool) *seal.Group {
	if text {
		return s.text
	}
	return s.content
}

// groupCommit is one group between its two stages.
type groupCommit struct {
	batch   []*pending
	unlock  func()            // the group's content locks, held until it is recorded
	entries []*entry          // written, read back and verified (or failed)
	name    string            // the pack written to ("" when nothing was written)
	end     int64             // the end of the region written
	pack    *openPack         // the open pack written to, whose recording count is held
	hot     map[Digest]*entry // verified fresh copies of content
	text    map[Digest]*entry // verified fresh copies of text
}

// writeGroup is a group's first stage: the new content (and text) of the group
// sealed into one pack region, made durable, read back and verified entry by entry.
// It runs with c.write held.
func (c *committer) writeGroup(batch []*pending) *groupCommit {
	v, t := c.v, c.t
	ctx := context.Background()
	g := &groupCommit{batch: batch}
	byDigest := map[Digest]*pending{} // the first pending of each digest
	var keys []string
	for _, p := range batch {
		if byDigest[p.digest] == nil {
			byDigest[p.digest] = p
			keys = append(keys, lockKey(t, p.digest))
		}
	}
	g.unlock = v.locks.lock(keys...)
	fail := func(err error, ps ...*pending) {
		for _, p := range ps {
			if p.err == nil {
				p.err = err
			}
		}
	}

	// Which content is stored already, and which of it has text; and the
	// objects the Puts name, which may exist (a redo).
	blobs := map[Digest]Blob{}
	if err := v.meta.View(ctx, t.name, func(tx MetaTx) error {
		for d := range byDigest {
			b, err := tx.Blob(d)
			if err == nil {
				blobs[d] = b
			} else if !errors.Is(err, ErrNotFound) {
				return err
			}
		}
		for _, p := range batch {
			o, err := tx.Object(p.draft.ID)
			if errors.Is(err, ErrNotFound) {
				continue
			} else if err != nil {
				return err
			}
			p.err = existing(o, p.digest)
			if p.err == nil && (o.State == StateCommitted || o.State == StateCold) {
				p.res, p.stored = o, true // the same content, committed before
			}
		}
		return nil
	}); err != nil {
		fail(fmt.Errorf("look up: %w", err), batch...)
		return g
	}
	// byDigest names a pending that still wants its content written.
	for d, p := range byDigest {
		if p.err == nil && !p.stored {
			continue
		}
		delete(byDigest, d)
		for _, q := range pendingsOf(batch, d) {
			if q.err == nil && !q.stored {
				byDigest[d] = q
				break
			}
		}
	}
	// Reused content is verified now, as new content is below.
	for d, b := range blobs {
		p := byDigest[d]
		if p == nil || !b.Hot.good() {
			continue
		}
		err := v.verifyPlacement(ctx, v.hot, t, b.Hot, purposeContent, d, d, b.Size, "vault object "+p.draft.ID, nil)
		if errors.Is(err, ErrInvalidData) {
			v.markCopyCorrupt(ctx, t, d, b.Hot.Name, b.Hot.Offset, false)
			b.Hot.Corrupt = true
			blobs[d] = b
		} else if err != nil {
			fail(err, pendingsOf(batch, d)...)
		}
	}

	// Seal what must be written into one pack, in a buffer sized for all of it up front
	// (growing it by append copied the pack about five times over: most of what a clean-up of
	// small messages allocated), taken from a pool.
	sl, err := v.newSealers(t)
	if err != nil {
		fail(err, batch...)
		return g
	}
	size := 0
	for _, p := range batch {
		if byDigest[p.digest] != p || p.err != nil {
			continue
		}
		size += int(sl.content.SealedSize(int64(len(p.data))) + sl.text.SealedSize(int64(len(p.text))))
	}
	buf := getBuf(size)
	defer func() { putBuf(buf) }()
	add := func(e *entry, plain []byte) {
		off := len(buf)
		var err error
		// Text is bound to the content it was extracted from, as content is to itself.
		buf, err = sl.of(e.text).SealFor(buf, plain, e.digest)
		if err != nil {
			e.err = err
			buf = buf[:off]
			return
		}
		e.p = Placement{Offset: int64(off), Length: int64(len(buf) - off), Pack: true, Format: sl.format()} // in buf until written
		g.entries = append(g.entries, e)
	}
	for _, p := range batch {
		if byDigest[p.digest] != p || p.err != nil {
			continue
		}
		b, found := blobs[p.digest]
		if !found || !b.Hot.good() {
			add(&entry{digest: p.digest, plain: p.digest, data: p.data, size: int64(len(p.data))}, p.data)
		}
		if len(p.text) > 0 && (!found || (b.Text == nil || b.Text.Corrupt) && !b.TextIsContent) {
			add(&entry{digest: p.digest, text: true, plain: Sum(p.text), data: p.text, size: int64(len(p.text))}, p.text)
		}
	}
	if len(g.entries) > 0 {
		var base int64
		if g.name, base, g.pack, err = c.writePack(ctx, buf); err != nil {
			fail(fmt.Errorf("write pack: %w", err), batch...)
			g.entries = nil
			return g
		}
		g.end = base + int64(len(buf))
		v.stats.durableWrite(true)
		for _, e := range g.entries {
			e.p.Name = g.name
			e.p.Offset += base
		}
		c.readBack(ctx, g.name, base, buf, g.entries, sl)
	}
	g.hot, g.text = map[Digest]*entry{}, map[Digest]*entry{}
	for _, e := range g.entries {
		switch {
		case e.text && e.err == nil:
			g.text[e.digest] = e
		case !e.text && e.err != nil:
			fail(fmt.Errorf("read back: %w", e.err), pendingsOf(batch, e.digest)...)
		case !e.text:
			g.hot[e.digest] = e
		}
	}
	return g
}

// existing checks a Put of content d into an object that exists already: a
// redo of an unfinished Put, or of one committed with the same content (nothing
// to write), is fine; other content in a committed object, or an object being
// deleted, is refused.
func existing(o Object, d Digest) error {
	switch {
	case o.State == StateDeleting || o.State == StateDeleted:
		return &TransitionError{ID: o.ID, From: o.State, To: StateUploading}
	case (o.Held || o.State == StateCommitted || o.State == StateCold) && o.SHA256 != d:
		return fmt.Errorf("committed earlier with sha256 %s, not %s: %w", o.SHA256, d, ErrInvalidState)
	}
	return nil
}

// record is a group's second stage: every object of the group committed in one
// metadata transaction, then the Puts answered. It runs without c.write, while the
// next group is written.
func (c *committer) record(g *groupCommit) {
	v, t := c.v, c.t
	ctx := context.Background()
	batch := g.batch
	defer func() {
		g.unlock()
		c.mu.Lock()
		c.answered = len(batch)
		c.mu.Unlock()
		for _, p := range batch {
			p.finish(p.res, p.err)
		}
	}()
	if g.pack != nil {
		defer g.pack.recording.Done()
	}
	waiting := false
	for _, p := range batch {
		waiting = waiting || p.err == nil && !p.stored
	}
	if !waiting && g.name == "" {
		return
	}
	_, appending := v.hot.(backend.Appender)
	var removals []removal
	var results []commitResult
	var errs []error // per pending: refused by the state machine
	packed, committed := 0, 0
	now := v.now()
	err := v.meta.Update(ctx, t.name, func(tx MetaTx) error {
		// fn may run more than once: start from scratch.
		removals, results, errs, packed, committed = nil, make([]commitResult, len(batch)), make([]error, len(batch)), 0, 0
		live := 0
		for i, p := range batch {
			if p.err != nil || p.stored {
				continue
			}
			in := &commitInput{draft: p.draft, digest: p.digest, size: int64(len(p.data)), tself: p.tself, trange: p.trange}
			if e := g.hot[p.digest]; e != nil {
				in.hot = &e.p
			}
			if e := g.text[p.digest]; e != nil {
				in.text, in.tdig, in.tsize = &e.p, e.plain, e.size
			}
			res, err := v.commit(tx, in, now)
			if err != nil {
				if !errors.Is(err, ErrInvalidState) && !errors.Is(err, ErrInvalidData) {
					return err // a storage failure fails the transaction
				}
				errs[i] = err
				continue
			}
			results[i] = res
			removals = append(removals, res.rm...)
			if res.usedHot {
				live++
			}
			if res.usedText {
				live++
			}
			if !res.alreadyStored {
				committed++
				if in.hot != nil || res.usedHot {
					packed++
				}
			}
		}
		if live == 0 && !(appending && g.name != "") {
			return nil
		}
		// An appended pack is recorded from its first group, so that its
		// file is accounted for even before an entry lives in it.
		pk, err := tx.Pack(g.name)
		if errors.Is(err, ErrNotFound) {
			pk, err = Pack{Name: g.name, CreatedAt: now}, nil
		}
		if err != nil {
			return err
		}
		pk.Live += live
		pk.Size = max(pk.Size, g.end)
		return tx.PutPack(pk)
	})
	if err != nil {
		for _, p := range batch {
			if p.err == nil && !p.stored {
				p.err = fmt.Errorf("commit: %w", err)
			}
		}
		if g.name != "" && !appending {
			_ = v.hot.Remove(ctx, g.name)
		} // an appended region nobody uses is dead space in its pack
		return
	}
	usedPack := false
	for i, p := range batch {
		if p.err != nil || p.stored {
			continue
		}
		if errs[i] != nil {
			p.err = errs[i]
			continue
		}
		r := results[i]
		p.res = r.obj
		usedPack = usedPack || r.usedHot || r.usedText
	}
	if g.name != "" && !usedPack && !appending {
		_ = v.hot.Remove(ctx, g.name)
	}
	v.remove(ctx, removals)
	v.stats.committed(committed, packed)
}

func pendingsOf(batch []*pending, d Digest) []*pending {
	var out []*pending
	for _, p := range batch {
		if p.digest == d {
			out = append(out, p)
		}
	}
	return out
}
