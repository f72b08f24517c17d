package bolt

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"sync"

	bbolt "go.etcd.io/bbolt"
)

// maxGroup bounds the calls one group commit runs in its transaction.
const maxGroup = 1024

// groupCommit queues the write functions of concurrent callers for batch.
type groupCommit struct {
	mu      sync.Mutex
	queue   []*groupCall
	leading bool // a goroutine is committing; it hands over to the next leader when done
}

type groupCall struct {
	fn   func(*bbolt.Tx) error
	done chan error
}

// batch runs fn in a write transaction shared with concurrent callers and returns once that
// transaction is durable (or fn failed). It is bbolt's Batch without the timer: the first
// caller commits at once with what is queued, and the callers that arrive while a transaction
// is being committed (its fsyncs) are committed together in the next one. Under load every
// transaction carries everything that queued during the previous one; alone, a call costs no
// more than Update. As with Batch, fn may run more than once (when another function of its
// group fails, the group is retried without it), so it must only write to the transaction.
func (db *DB) batch(fn func(*bbolt.Tx) error) error {
	// The caller waits for a transaction (its own or a leader's): it must hold none itself.
	defer db.guard.enter()()
	c := &groupCall{fn: fn, done: make(chan error, 1)}
	g := &db.group
	g.mu.Lock()
	g.queue = append(g.queue, c)
	lead := !g.leading
	g.leading = true
	g.mu.Unlock()
	if lead {
		db.lead(true)
	}
	return <-c.done
}

// lead commits one group from the queue, then hands over to a new leader if more queued
// meanwhile, so that the caller that led returns as soon as its own group is durable. marked
// says the goroutine already holds the nested-transaction guard (a caller of batch does).
func (db *DB) lead(marked bool) {
	g := &db.group
	g.mu.Lock()
	n := min(len(g.queue), maxGroup)
	calls := g.queue[:n:n]
	g.queue = g.queue[n:]
	g.mu.Unlock()
	db.commitGroup(calls, marked)
	g.mu.Lock()
	more := len(g.queue) > 0
	if !more {
		g.leading = false
		g.queue = nil
	}
	g.mu.Unlock()
	if more {
		go db.lead(false)
	}
}

type groupFailure struct {
	i   int
	err error
}

func (e *groupFailure) Error() string { return e.err.Error() }

// commitGroup runs calls in one transaction. A failing function is taken out: the rest are
// committed together and it runs alone, so that it gets its own error (as bbolt's Batch does).
func (db *DB) commitGroup(calls []*groupCall, marked bool) {
	update := db.update
	if marked {
		update = db.bolt.Update
	}
	err := update(func(tx *bbolt.Tx) error {
		for i, c := range calls {
			if err := c.fn(tx); err != nil {
				return &groupFailure{i: i, err: err}
			}
		}
		return nil
	})
	var gf *groupFailure
	if errors.As(err, &gf) && len(calls) > 1 {
		failed := calls[gf.i]
		rest := append(calls[:gf.i:gf.i], calls[gf.i+1:]...)
		db.commitGroup(rest, marked)
		failed.done <- update(failed.fn)
		return
	}
	if gf != nil {
		err = gf.err
	}
	for _, c := range calls {
		c.done <- err
	}
}

// AppendLogs appends values, in order, to the stream of the log name (an execution's
// journal, say) in one transaction, and returns once they are durable. Concurrent calls are
// group-committed (see batch): many journals' writes share one transaction and its fsyncs.
func (db *DB) AppendLogs(ctx context.Context, name, stream string, values [][]byte) error {
	if err := ctxErr(ctx); err != nil {
		return err
	}
	if len(values) == 0 {
		return nil
	}
	return db.batch(func(tx *bbolt.Tx) error {
		b, err := bucket(tx, "log_"+name)
		if err != nil {
			return err
		}
		prefix := []byte(stream + "/")
		for _, v := range values {
			seq, err := b.NextSequence()
			if err != nil {
				return err
			}
			if err := b.Put(binary.BigEndian.AppendUint64(prefix[:len(prefix):len(prefix)], seq), v); err != nil {
				return err
			}
		}
		return nil
	})
}

// UpsertBatched applies fn to the resource id of tenant, or to create()'s resource when there
// is none, and stores the result and extras, in a transaction group-committed with concurrent
// calls (batch): many assets' updates share one fsync. fn and create may run more than once;
// each run starts from what is stored. If fn fails nothing is stored.
//
// The new value is made before the transaction, from what is stored then: decoding, fn and
// encoding run in the caller's goroutine, in parallel with the other callers', not one after
// the other in the group's transaction. The transaction stores it if the resource is still
// as it was read; if another writer changed it meanwhile, fn runs again in the transaction.
func (c *Collection[T]) UpsertBatched(ctx context.Context, tenant, id string, create func() (T, error), fn func(T) error, extras ...Extra) error {
	if err := ctxErr(ctx); err != nil {
		return err
	}
	var prev []byte
	err := c.db.view(func(tx *bbolt.Tx) error {
		if b := tx.Bucket([]byte(c.bucket)); b != nil {
			if v := b.Get(resourceKey(tenant, id)); v != nil {
				prev = bytes.Clone(v)
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	out, err := c.apply(id, prev, create, fn)
	if err != nil {
		return err
	}
	return c.db.batch(func(tx *bbolt.Tx) error {
		b, err := bucket(tx, c.bucket)
		if err != nil {
			return err
		}
		if cur := b.Get(resourceKey(tenant, id)); (cur == nil) != (prev == nil) || !bytes.Equal(cur, prev) {
			return c.modify(tx, tenant, id, create, fn, extras) // changed since it was read
		}
		if err := c.put(tx, tenant, id, out); err != nil {
			return err
		}
		return applyExtras(tx, extras)
	})
}
