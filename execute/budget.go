package execute

import (
	"sync"

	svcv1 "svc.dev/svc/gen/svc/v1"
)

// Memory an asset in flight is assumed to hold: its content up to what a streamed write keeps
// buffered at once (the vault holds at most a few 1 MiB segments of a large object), plus a
// fixed overhead for the step's own buffers and records.
const (
	streamedBytes = 8 << 20
	assetOverhead = 64 << 10
)

func inFlightBytes(o *svcv1.PlanObject) int64 {
	return min(max(o.GetExpectedSizeBytes(), 0), streamedBytes) + assetOverhead
}

// budget bounds the memory of the assets in flight, so that many small assets (a mailbox) run
// together, which is what lets the vault and the journal commit them in large groups, while
// large files run a few at a time.
type budget struct {
	mu        sync.Mutex
	used, max int64
	freed     chan struct{}
}

func newBudget(max int64) *budget { return &budget{max: max, freed: make(chan struct{}, 1)} }

// tryAcquire takes n bytes if they fit, or if nothing is in flight (an asset larger than the
// whole budget still runs, alone).
func (b *budget) tryAcquire(n int64) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.used > 0 && b.used+n > b.max {
		return false
	}
	b.used += n
	return true
}

func (b *budget) release(n int64) {
	b.mu.Lock()
	b.used -= n
	b.mu.Unlock()
	select {
	case b.freed <- struct{}{}:
	default:
	}
}
