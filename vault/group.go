package vault

import (
	"context"
	"errors"
	"fmt"
	"io"
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
	done   chan struct{}
	res    Object
	err    error
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
type committer struct {
	v       *Vault
	t       *tenant
	mu      sync.Mutex
	queue   []*pending
	running bool
}

func (c *committer) submit(p *pending) (Object, error) {
	c.mu.Lock()
	c.queue = append(c.queue, p)
	lead := !c.running
	if lead {
		c.running = true
		c.v.work.Add(1)
	}
	c.mu.Unlock()
	if lead {
		c.run()
	}
	<-p.done
	return p.res, p.err
}

func (c *committer) run() {
	defer c.v.work.Done()
	if d := c.v.opts.GroupCommitDelay; d > 0 {
		time.Sleep(d)
	}
	c.mu.Lock()
	var batch []*pending
	var size int64
	for len(c.queue) > 0 && (len(batch) == 0 || size+int64(len(c.queue[0].data)) <= c.v.opts.MaxPackSize) {
		size += int64(len(c.queue[0].data))
		batch = append(batch, c.queue[0])
		c.queue = c.queue[1:]
	}
	c.mu.Unlock()
	c.commitGroup(batch)
	c.mu.Lock()
	if len(c.queue) > 0 {
		c.v.work.Add(1)
		go c.run()
	} else {
		c.running = false
		c.queue = nil
	}
	c.mu.Unlock()
}

// entry is one sealed stream in a pack being written.
type entry struct {
	digest Digest // of the content the entry belongs to
	text   bool   // the entry is that content's extracted text
	plain  Digest // of the entry's plaintext
	size   int64
	p      Placement
	err    error
}

// commitGroup writes one group: the new content (and text) of the group in
// one pack file, durably, read back and verified entry by entry, then every
// object of the group committed in one metadata transaction.
func (c *committer) commitGroup(batch []*pending) {
	v, t := c.v, c.t
	ctx := context.Background()
	byDigest := map[Digest]*pending{} // the first pending of each digest
	var keys []string
	for _, p := range batch {
		if byDigest[p.digest] == nil {
			byDigest[p.digest] = p
			keys = append(keys, lockKey(t, p.digest))
		}
	}
	unlock := v.locks.lock(keys...)
	defer unlock()
	fail := func(err error, ps ...*pending) {
		for _, p := range ps {
			if p.done != nil && p.err == nil {
				p.err = err
			}
		}
	}
	defer func() {
		for _, p := range batch {
			p.finish(p.res, p.err)
		}
	}()

	// Which content is stored already, and which of it has text.
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
		return nil
	}); err != nil {
		fail(err, batch...)
		return
	}
	// Reused content is verified now, as new content is below.
	for d, b := range blobs {
		if !b.Hot.good() {
			continue
		}
		p := byDigest[d]
		err := v.verifyPlacement(ctx, v.hot, b.Hot, t.dataKey, purposeContent, d, b.Size, "vault object "+p.draft.ID, nil)
		if errors.Is(err, ErrInvalidData) {
			v.markCopyCorrupt(ctx, t, d, b.Hot.Name, b.Hot.Offset, false)
			b.Hot.Corrupt = true
			blobs[d] = b
		} else if err != nil {
			fail(err, pendingsOf(batch, d)...)
		}
	}

	// Seal what must be written into one pack.
	name := t.packName()
	var buf []byte
	var entries []*entry
	add := func(e *entry, plain []byte, purpose string) {
		off := len(buf)
		var err error
		buf, err = seal.Seal(buf, plain, t.dataKey, purpose)
		if err != nil {
			e.err = err
			buf = buf[:off]
			return
		}
		e.p = Placement{Name: name, Offset: int64(off), Length: int64(len(buf) - off), Pack: true}
		entries = append(entries, e)
	}
	for _, p := range batch {
		if byDigest[p.digest] != p || p.err != nil {
			continue
		}
		b, found := blobs[p.digest]
		if !found || !b.Hot.good() {
			add(&entry{digest: p.digest, plain: p.digest, size: int64(len(p.data))}, p.data, purposeContent)
		}
		if len(p.text) > 0 && (!found || (b.Text == nil || b.Text.Corrupt) && !b.TextIsContent) {
			add(&entry{digest: p.digest, text: true, plain: Sum(p.text), size: int64(len(p.text))}, p.text, purposeText)
		}
	}
	if len(entries) > 0 {
		if err := backend.Save(ctx, v.hot, name, buf); err != nil {
			fail(fmt.Errorf("write pack: %w", err), batch...)
			return
		}
		v.stats.durableWrite(true)
		c.readBack(ctx, name, buf, entries)
	}
	hot := map[Digest]*entry{}
	text := map[Digest]*entry{}
	for _, e := range entries {
		switch {
		case e.text && e.err == nil:
			text[e.digest] = e
		case !e.text && e.err != nil:
			fail(fmt.Errorf("read back: %w", e.err), pendingsOf(batch, e.digest)...)
		case !e.text:
			hot[e.digest] = e
		}
	}

	// One transaction commits the group.
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
			if p.err != nil {
				continue
			}
			in := &commitInput{draft: p.draft, digest: p.digest, size: int64(len(p.data)), tself: p.tself}
			if e := hot[p.digest]; e != nil {
				in.hot = &e.p
			}
			if e := text[p.digest]; e != nil {
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
		if live > 0 {
			return tx.PutPack(Pack{Name: name, Size: int64(len(buf)), Live: live, CreatedAt: now})
		}
		return nil
	})
	if err != nil {
		fail(fmt.Errorf("commit: %w", err), batch...)
		if len(entries) > 0 {
			_ = v.hot.Remove(ctx, name)
		}
		return
	}
	usedPack := false
	for i, p := range batch {
		if p.err != nil {
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
	if len(entries) > 0 && !usedPack {
		_ = v.hot.Remove(ctx, name)
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

// readBack reads a written pack and verifies every entry against the
// plaintext digest it was sealed from.
func (c *committer) readBack(ctx context.Context, name string, written []byte, entries []*entry) {
	fail := func(err error) {
		for _, e := range entries {
			e.err = err
		}
	}
	rc, err := c.v.hot.Open(ctx, name, 0, -1)
	if err != nil {
		fail(err)
		return
	}
	defer rc.Close()
	data, err := io.ReadAll(io.LimitReader(rc, int64(len(written))+1))
	if err != nil {
		fail(err)
		return
	}
	var plain []byte
	for _, e := range entries {
		end := e.p.Offset + e.p.Length
		if end > int64(len(data)) {
			e.err = fmt.Errorf("pack %s is %d bytes, entry ends at %d: %w", name, len(data), end, ErrInvalidData)
			continue
		}
		plain, err = seal.Open(plain[:0], data[e.p.Offset:end], c.t.dataKey, map[bool]string{false: purposeContent, true: purposeText}[e.text])
		if err != nil {
			e.err = fmt.Errorf("pack %s: %w: %w", name, ErrInvalidData, err)
			continue
		}
		if int64(len(plain)) != e.size || Sum(plain) != e.plain {
			e.err = fmt.Errorf("pack %s: entry at %d reads back as other content: %w", name, e.p.Offset, ErrInvalidData)
			continue
		}
		e.p.VerifiedAt = c.v.now()
	}
}
