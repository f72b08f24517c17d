package execute

import (
	"bytes"
	"context"
	"io"

	"svc.dev/svc/providers"
)

// Batch fetches: the most requests one call carries, and the largest planned object that goes
// in one (a larger one is fetched alone, streamed: batching saves a round trip, which matters
// for small objects only).
const (
	maxFetchBatch       = 256
	maxBatchFetchObject = 256 << 10
)

// fetchBatcher gathers the fetches of one source into batch calls, for a provider that has
// providers.BatchFetcher, as trashBatcher does for trashes: an asset hands over its request
// (its FETCHING is journaled, which need not be durable: a fetch only reads) and waits for its
// own outcome; one goroutine at a time sends whatever is waiting (up to maxFetchBatch requests
// and providers.MaxFetchBatchBytes of planned content) in one call. No timer holds back a lone
// fetch. Each outcome is handed to its asset as soon as the provider produced it, so the first
// assets of a batch are vaulting while the provider reads the rest.
type fetchBatcher struct {
	bf   providers.BatchFetcher
	pace interface{ Wait(context.Context) error }

	queue batchQueue[*fetchCall]
}

// fetchCall is one asset's fetch in a batch.
type fetchCall struct {
	req   providers.FetchRequest
	size  int64 // planned
	out   providers.FetchOutcome
	whole bool // the batch call failed as a whole before this request's outcome
	done  chan struct{}
}

// fetch fetches req's object (of planned size bytes) in a batch with whatever else is waiting,
// and returns its outcome; whole reports that the batch call failed as a whole before it
// (out.Err is that failure).
func (b *fetchBatcher) fetch(ctx context.Context, req providers.FetchRequest, size int64) (out providers.FetchOutcome, whole bool) {
	c := &fetchCall{req: req, size: size, done: make(chan struct{})}
	if b.queue.push(c) {
		go b.send(ctx) // the caller's step context: ended by a shutdown only
	}
	<-c.done
	return c.out, c.whole
}

// send sends batches until nothing waits.
func (b *fetchBatcher) send(ctx context.Context) {
	for {
		calls, ok := b.queue.next(fetchBatchSize)
		if !ok {
			return
		}
		b.call(ctx, calls)
	}
}

// fetchBatchSize is how many of the waiting fetches go in one call: up to maxFetchBatch, and
// providers.MaxFetchBatchBytes of planned content (the first always goes).
func fetchBatchSize(waiting []*fetchCall) int {
	n, bytes := 0, int64(0)
	for n < len(waiting) && n < maxFetchBatch && (n == 0 || bytes+waiting[n].size <= providers.MaxFetchBatchBytes) {
		bytes += waiting[n].size
		n++
	}
	return n
}

// call makes one batch call (paced as one provider call), handing each asset its outcome as it
// comes; the assets without one when the call ends get its error, as a failure of the whole.
func (b *fetchBatcher) call(ctx context.Context, calls []*fetchCall) {
	reqs := make([]providers.FetchRequest, len(calls))
	for i, c := range calls {
		reqs[i] = c.req
	}
	handed := make([]bool, len(calls))
	err := b.pace.Wait(ctx)
	if err == nil {
		err = b.bf.FetchBatch(ctx, reqs, func(i int, out providers.FetchOutcome) {
			if i < 0 || i >= len(calls) || handed[i] {
				return // a provider's mistake; that asset gets the call's end
			}
			handed[i] = true
			calls[i].out = out
			close(calls[i].done)
		})
	}
	for i, c := range calls {
		if handed[i] {
			continue
		}
		if err == nil {
			err = errNoOutcome
		}
		c.out, c.whole = providers.FetchOutcome{Err: err}, true
		close(c.done)
	}
}

// errNoOutcome is the failure of a request a batch call ended without answering.
var errNoOutcome = &providers.Error{Op: "fetch batch", Err: providers.ErrTransient}

// content is a batch outcome as the content a Fetch returns.
func batchContent(out providers.FetchOutcome) *providers.Content {
	return &providers.Content{Object: out.Object, Body: io.NopCloser(bytes.NewReader(out.Content))}
}

// fetchBatcher returns the batcher of a source whose provider fetches in batches, or nil.
func (r *runner) fetchBatcher(sourceID string, src providers.Provider, pace interface{ Wait(context.Context) error }) *fetchBatcher {
	bf, ok := providers.AsBatchFetcher(src)
	if !ok {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.fetchers == nil {
		r.fetchers = map[string]*fetchBatcher{}
	}
	b := r.fetchers[sourceID]
	if b == nil {
		b = &fetchBatcher{bf: bf, pace: pace}
		r.fetchers[sourceID] = b
	}
	return b
}
