package execute

import (
	"context"
	"fmt"
	"sync"

	"svc.dev/svc/providers"
)

// maxTrashBatch is the most trashes one batch call carries.
const maxTrashBatch = 256

// trashBatcher gathers the trashes of one source into batch calls, for a provider that has
// providers.BatchTrasher. An asset hands over its request once its ACTION_QUEUED is durable,
// and waits for its own outcome; one goroutine at a time sends whatever is waiting (up to
// maxTrashBatch) in one call. A batch is thus what queued during the previous call: no timer
// holds back a lone trash, and under load one call carries many. The journal rule is
// unchanged: each asset's intent is durable before the call that may trash it, and each
// outcome is journaled by its own asset after the call.
type trashBatcher struct {
	bt   providers.BatchTrasher
	pace interface{ Wait(context.Context) error }

	queue batchQueue[*trashCall]
}

// trashCall is one asset's trash in a batch.
type trashCall struct {
	req   providers.ActionRequest
	out   providers.ActionOutcome
	whole bool // the batch call failed as a whole: the object may or may not be trashed
	done  chan struct{}
}

// trash trashes req's object in a batch with whatever else is waiting, and returns its
// outcome; whole reports that the batch call failed as a whole (out.Err is that failure).
func (b *trashBatcher) trash(ctx context.Context, req providers.ActionRequest) (out providers.ActionOutcome, whole bool) {
	c := &trashCall{req: req, done: make(chan struct{})}
	if b.queue.push(c) {
		go b.send(ctx) // the caller's step context: ended by a shutdown only
	}
	<-c.done
	return c.out, c.whole
}

// send sends batches until nothing waits.
func (b *trashBatcher) send(ctx context.Context) {
	for {
		calls, ok := b.queue.next(func(w []*trashCall) int { return min(len(w), maxTrashBatch) })
		if !ok {
			return
		}
		b.call(ctx, calls)
	}
}

// call makes one batch call (paced as one provider call) and hands each asset its outcome.
func (b *trashBatcher) call(ctx context.Context, calls []*trashCall) {
	reqs := make([]providers.ActionRequest, len(calls))
	for i, c := range calls {
		reqs[i] = c.req
	}
	var outs []providers.ActionOutcome
	err := b.pace.Wait(ctx)
	if err == nil {
		outs, err = b.bt.TrashBatch(ctx, reqs)
	}
	if err == nil && len(outs) != len(calls) {
		err = fmt.Errorf("trash batch: %d outcomes for %d requests: %w", len(outs), len(calls), providers.ErrInvalidData)
	}
	for i, c := range calls {
		if err != nil {
			c.out, c.whole = providers.ActionOutcome{Err: err}, true
		} else {
			c.out = outs[i]
		}
		close(c.done)
	}
}

// trashBatcher returns the batcher of a source whose provider trashes in batches, or nil.
func (r *runner) trashBatcher(sourceID string, src providers.Provider, pace interface{ Wait(context.Context) error }) *trashBatcher {
	bt, ok := providers.AsBatchTrasher(src)
	if !ok {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.batchers == nil {
		r.batchers = map[string]*trashBatcher{}
	}
	b := r.batchers[sourceID]
	if b == nil {
		b = &trashBatcher{bt: bt, pace: pace}
		r.batchers[sourceID] = b
	}
	return b
}

// batchQueue holds the calls waiting for a batcher's next batch call, and whether a goroutine
// is sending them: one at a time sends what queued during the previous call.
type batchQueue[C any] struct {
	mu      sync.Mutex
	waiting []C
	sending bool
}

// push queues c and reports whether the caller must start the sender (none was running).
func (q *batchQueue[C]) push(c C) (start bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.waiting = append(q.waiting, c)
	if q.sending {
		return false
	}
	q.sending = true
	return true
}

// next takes the next batch, the first size(waiting) calls (at least one); when none wait it
// reports false and the sender must stop.
func (q *batchQueue[C]) next(size func(waiting []C) int) ([]C, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.waiting) == 0 {
		q.sending = false
		q.waiting = nil
		return nil, false
	}
	n := max(1, min(size(q.waiting), len(q.waiting)))
	calls := make([]C, n)
	copy(calls, q.waiting)
	q.waiting = append(q.waiting[:0], q.waiting[n:]...)
	return calls, true
}
