package svc

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"time"

	"svc.dev/svc/storage"
	"svc.dev/svc/vault"
	"svc.dev/svc/vault/search"
)

// SearchIndex is a vault search index: by default vault/search's bleve index in the data
// directory (DIR/search), kept by this process; Options.SearchIndex gives another, such as
// storage/postgres's (pgsearch: PostgreSQL full-text search, shared by every replica on the
// database). An index that also keeps its place in the vault's change feed itself (Position
// and Follow, as pgsearch does) is fed batch by batch under that place, by whichever process
// gets to it first (docs/search.md, "Search in a cluster").
type SearchIndex interface {
	Search(ctx context.Context, tenant string, q search.Query) (search.Result, error)
	Put(ctx context.Context, tenant string, docs ...search.Doc) error
	Remove(ctx context.Context, tenant string, ids ...string) error
	Rebuild(ctx context.Context, tenant string, docs func(yield func(search.Doc, error) bool), progress func(int)) (int, error)
	Size(tenant string) (int64, error)
	Exists(tenant string) bool
	StoresText(tenant string) (bool, error)
	Drop(tenant string) error
	Close() error
}

// feedFollower is an index that keeps its place in the vault's change feed itself, shared by
// every process that uses it (pgsearch.Index).
type feedFollower interface {
	// Position is how far the index has applied the feed, in any process.
	Position(ctx context.Context) (uint64, error)
	// Follow calls next with the position, exclusively across processes, and applies the
	// changes it returns with the new position in one transaction; it returns the position.
	Follow(ctx context.Context, next func(ctx context.Context, after uint64) (search.Changes, uint64, error)) (uint64, error)
}

// vaultIndex keeps the search index (DIR/search) in step with the vault from the store's
// durable change feed (storage.VaultChanges): every commit, tier move and deletion, and every
// manifest stored for a preserved asset, writes an entry in its own transaction, so a crash
// cannot leave the index behind what was stored. A background worker (run) reads the feed in
// order, indexes or removes the objects in large bleve batches, off the execution's path, then
// deletes the entries it applied; an entry applied twice (a crash in between) is harmless. A
// search first waits until every entry written before it was applied (sync). The index is
// derived data: an update that fails is logged, and ReindexVault rebuilds it from the vault.
type vaultIndex struct {
	index  SearchIndex
	shared feedFollower // the index's own place in the feed (nil: applied is this process's)
	c      *core
	feed   storage.VaultChanges

	mu       sync.Mutex
	applied  uint64        // the feed's entries up to this sequence number are applied
	progress chan struct{} // closed and replaced when applied moves
	wake     chan struct{} // something was written to the feed
	hurry    chan struct{} // a search waits: apply now, without gathering a larger batch

	stop context.CancelFunc // ends run
	done chan struct{}      // closed when run returned
}

// Indexing pace. After it is woken, the worker gathers entries for indexGather, and longer
// while an execution runs, up to indexMaxDefer: indexing is CPU-heavy (word analysis, segment
// building and merging) and would take it from the clean-up; the entries wait in the feed,
// durable. A search does not wait for either (hurry). It then applies up to indexBatch entries
// per bleve batch: larger batches make fewer segments to merge, but hold more in memory while
// they are analysed. indexPoll picks up entries nobody woke it for (written by an offline
// command).
const (
	indexGather   = time.Second
	indexMaxDefer = 10 * time.Minute
	indexBatch    = 1024
	indexPoll     = 30 * time.Second
)

// openSearch opens the search index on c's feed: the one open makes (Options.SearchIndex),
// else the bleve index of data directory dir (dir/search).
func openSearch(dir string, c *core, open func(*search.Options) (SearchIndex, error)) (*vaultIndex, error) {
	ix := &vaultIndex{c: c, feed: c.store.VaultChanges(), progress: make(chan struct{}),
		wake: make(chan struct{}, 1), hurry: make(chan struct{}, 1)}
	// The index stores no text: snippets are cut at search time from the object's verified
	// text, read again from the vault (docs/search.md).
	opts := &search.Options{Text: ix.text}
	var err error
	if open != nil {
		ix.index, err = open(opts)
	} else {
		ix.index, err = search.OpenWith(filepath.Join(dir, SearchDir), opts)
	}
	if err != nil {
		return nil, fmt.Errorf("open the search index: %w", err)
	}
	ix.shared, _ = ix.index.(feedFollower)
	return ix, nil
}

// text is the index's TextSource: the document of an object as it is indexed, read from the
// vault and verified.
func (ix *vaultIndex) text(ctx context.Context, tenant, id string) (search.Doc, error) {
	o, err := ix.c.vault.Get(ctx, tenant, id)
	if err != nil {
		return search.Doc{}, err
	}
	return ix.doc(ctx, tenant, o)
}

// start runs the worker until close.
func (ix *vaultIndex) start() {
	ctx, stop := context.WithCancel(context.Background())
	ix.stop, ix.done = stop, make(chan struct{})
	go func() {
		defer close(ix.done)
		ix.run(ctx)
	}()
}

// close stops the worker (what is left stays in the feed for the next start) and closes the
// index.
func (ix *vaultIndex) close() {
	if ix.stop != nil {
		ix.stop()
		<-ix.done
	}
	ix.index.Close()
}

// changed wakes the worker: a vault change is in the feed already.
func (ix *vaultIndex) changed() { ix.poke(ix.wake) }

func (ix *vaultIndex) poke(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// run applies the feed until ctx ends.
func (ix *vaultIndex) run(ctx context.Context) {
	work := context.WithoutCancel(ctx)
	poll := time.NewTicker(indexPoll)
	defer poll.Stop()
	ix.drain(ctx, work) // what a previous process left
	for {
		select {
		case <-ix.wake:
			ix.hold(ctx)
		case <-ix.hurry:
		case <-poll.C:
		case <-ctx.Done():
			return
		}
		ix.drain(ctx, work)
	}
}

// hold waits before a drain: indexGather, and while an execution runs up to indexMaxDefer,
// unless a search hurries it.
func (ix *vaultIndex) hold(ctx context.Context) {
	start := time.Now()
	tick := time.NewTicker(indexGather)
	defer tick.Stop()
	for {
		select {
		case <-ix.hurry:
			return
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if ix.c.engine == nil || ix.c.engine.Running() == 0 || time.Since(start) >= indexMaxDefer {
			return
		}
	}
}

// drain applies the feed's entries until none is left (or stop ends): per batch and tenant,
// one bleve batch of documents and one of removals; an object named twice is indexed once, as
// it is now.
func (ix *vaultIndex) drain(stop, ctx context.Context) {
	if ix.shared != nil {
		ix.drainShared(stop, ctx)
		return
	}
	for stop.Err() == nil {
		ix.mu.Lock()
		after := ix.applied
		ix.mu.Unlock()
		batch, last, err := ix.feed.Read(ctx, after, indexBatch)
		if err != nil {
			ix.c.log.Error("search index: read the vault's change feed", "err", err)
			return
		}
		if len(batch) == 0 {
			// Nothing is left up to the feed's last sequence number (entries applied by an
			// earlier process were deleted, and their numbers are not reused).
			ix.advance(last)
			return
		}
		upTo := batch[len(batch)-1].Seq
		ix.apply(ctx, batch)
		if err := ix.feed.Ack(ctx, upTo); err != nil {
			ix.c.log.Error("search index: acknowledge the vault's change feed", "err", err)
		}
		ix.advance(upTo)
	}
}

// advance records that the feed is applied up to seq and wakes the searches waiting for it.
func (ix *vaultIndex) advance(seq uint64) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if seq <= ix.applied {
		return
	}
	ix.applied = seq
	close(ix.progress)
	ix.progress = make(chan struct{})
}

// drainShared is drain for an index that keeps its own place in the feed: each batch is
// read after that place and applied with it moved, in one transaction of the index's, which
// waits while another process applies one (Follow). Entries are deleted from the feed once
// the place has passed them.
func (ix *vaultIndex) drainShared(stop, ctx context.Context) {
	for stop.Err() == nil {
		empty := false
		pos, err := ix.shared.Follow(ctx, func(ctx context.Context, after uint64) (search.Changes, uint64, error) {
			batch, last, err := ix.feed.Read(ctx, after, indexBatch)
			if err != nil {
				return search.Changes{}, 0, err
			}
			if empty = len(batch) == 0; empty {
				// Nothing is left up to the feed's last sequence number: what is missing below
				// it was applied and deleted.
				return search.Changes{}, last, nil
			}
			return ix.changes(ctx, batch), batch[len(batch)-1].Seq, nil
		})
		if err != nil {
			ix.c.log.Error("search index: apply the vault's change feed", "err", err)
			return
		}
		if err := ix.feed.Ack(ctx, pos); err != nil {
			ix.c.log.Error("search index: acknowledge the vault's change feed", "err", err)
		}
		ix.advance(pos)
		if empty {
			return
		}
	}
}

// apply indexes or removes the objects of a batch of feed entries.
func (ix *vaultIndex) apply(ctx context.Context, batch []storage.VaultChange) {
	ch := ix.changes(ctx, batch)
	for tenant, docs := range ch.Put {
		if err := ix.index.Put(ctx, tenant, docs...); err != nil {
			ix.c.log.Error("search index update", "tenant", tenant, "objects", len(docs), "err", err)
		}
	}
	for tenant, ids := range ch.Remove {
		if err := ix.index.Remove(ctx, tenant, ids...); err != nil {
			ix.c.log.Error("search index update", "tenant", tenant, "objects", len(ids), "err", err)
		}
	}
}

// changes are what a batch of feed entries asks of the index: each object named indexed as
// it is now (committed or cold), or removed; an object named twice is considered once. An
// object that cannot be read is logged and left out (the index is derived data: a rebuild
// repairs it).
func (ix *vaultIndex) changes(ctx context.Context, batch []storage.VaultChange) search.Changes {
	seen := map[[2]string]bool{}
	var todo []storage.VaultChange
	for _, c := range batch {
		if k := [2]string{c.Tenant, c.ObjectID}; !seen[k] {
			seen[k] = true
			todo = append(todo, c)
		}
	}
	// What each entry asks: a document to put, or a removal (neither: left out).
	type change struct {
		doc    *search.Doc
		remove bool
	}
	out := make([]change, len(todo))
	consider := func(i int) {
		c := todo[i]
		o, err := ix.c.vault.Get(ctx, c.Tenant, c.ObjectID)
		switch {
		case errors.Is(err, vault.ErrNotFound):
			out[i].remove = true
			return
		case err != nil:
			ix.c.log.Error("search index: read vault object", "tenant", c.Tenant, "vault_object_id", c.ObjectID, "err", err)
			return
		}
		switch o.State {
		case vault.StateCommitted, vault.StateCold:
			d, err := ix.doc(ctx, c.Tenant, o)
			if err != nil {
				ix.c.log.Error("search index: read vault object", "tenant", c.Tenant, "vault_object_id", o.ID, "err", err)
				return
			}
			out[i].doc = &d
		case vault.StateDeleting, vault.StateDeleted:
			out[i].remove = true
		}
	}
	// A shared index's store is a database over the network: reading an object's record,
	// manifest and text is mostly waiting for round trips, so several are read at once. The
	// local index's reads are the process's own CPU, kept to one at a time off the
	// execution's path.
	readers := 1
	if ix.shared != nil {
		readers = sharedReaders
	}
	var wg sync.WaitGroup
	next := make(chan int)
	for range min(readers, len(todo)) {
		wg.Go(func() {
			for i := range next {
				consider(i)
			}
		})
	}
	for i := range todo {
		next <- i
	}
	close(next)
	wg.Wait()
	puts, removes := map[string][]search.Doc{}, map[string][]string{}
	for i, c := range todo {
		switch {
		case out[i].doc != nil:
			puts[c.Tenant] = append(puts[c.Tenant], *out[i].doc)
		case out[i].remove:
			removes[c.Tenant] = append(removes[c.Tenant], c.ObjectID)
		}
	}
	return search.Changes{Put: puts, Remove: removes}
}

// sharedReaders is how many objects the worker of a shared index reads at once.
const sharedReaders = 8

// sync waits until every entry written to the feed before it was applied.
func (ix *vaultIndex) sync(ctx context.Context) error {
	target, err := ix.feed.Last(ctx)
	if err != nil {
		return err
	}
	for {
		ix.mu.Lock()
		done, ch := ix.applied >= target, ix.progress
		ix.mu.Unlock()
		if !done && ix.shared != nil {
			// Another process may have applied it: the index's place is in the index.
			pos, err := ix.shared.Position(ctx)
			if err != nil {
				return err
			}
			done = pos >= target
		}
		if done {
			return nil
		}
		ix.poke(ix.hurry)
		select {
		case <-ch:
		case <-time.After(sharedPoll):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// sharedPoll is how often a search waiting for a shared index looks at its place again (its
// own worker may be waiting for another process's batch, or none of its own is due).
const sharedPoll = 50 * time.Millisecond
