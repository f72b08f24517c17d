package plan

import (
	"runtime"
	"strings"
	"sync"

	svcv1 "svc.dev/svc/gen/svc/v1"
)

// compactChunk is how many plan objects share one block of memory after compaction.
const compactChunk = 4096

// compact re-allocates objs, already in canonical order, so that each run of compactChunk
// objects lies in a few contiguous blocks in that order: the messages in one slice, their
// strings in one string (the source id, one per source, stays shared), their version and hash pointers and their actions in one slice each.
// Sorting by asset id leaves the objects scattered across the heap in listing order, and
// everything that walks a large plan in canonical order (the hash, the store's encoder,
// executions) then waits on a cache miss for every field; after compaction it reads memory
// sequentially. The objects' values are unchanged. Chunks are compacted on all cores.
func compact(objs []*svcv1.PlanObject) {
	if len(objs) < 2*compactChunk {
		return // small plans fit in cache
	}
	workers := runtime.GOMAXPROCS(0)
	next := make(chan int)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for start := range next {
				compactRun(objs[start:min(start+compactChunk, len(objs))])
			}
		})
	}
	for start := 0; start < len(objs); start += compactChunk {
		next <- start
	}
	close(next)
	wg.Wait()
}

// compactRun replaces every object of objs by a copy in contiguous memory.
func compactRun(objs []*svcv1.PlanObject) {
	var size, nacts, nptrs int
	for _, o := range objs {
		size += len(o.AssetId) + len(o.ProviderObjectId) + len(o.GetExpectedVersion()) + len(o.GetExpectedSha256())
		nacts += len(o.Actions)
		if o.ExpectedVersion != nil {
			nptrs++
		}
		if o.ExpectedSha256 != nil {
			nptrs++
		}
	}
	var sb strings.Builder
	sb.Grow(size)
	for _, o := range objs {
		sb.WriteString(o.AssetId)
		sb.WriteString(o.ProviderObjectId)
		sb.WriteString(o.GetExpectedVersion())
		sb.WriteString(o.GetExpectedSha256())
	}
	all := sb.String()
	take := func(n int) string { s := all[:n]; all = all[n:]; return s }
	slab := make([]svcv1.PlanObject, len(objs))
	acts := make([]svcv1.PlanAction, 0, nacts)
	ptrs := make([]string, 0, nptrs)
	ptr := func(s string) *string { ptrs = append(ptrs, s); return &ptrs[len(ptrs)-1] }
	for i, o := range objs {
		n := &slab[i]
		n.AssetId = take(len(o.AssetId))
		n.ProviderObjectId = take(len(o.ProviderObjectId))
		n.SourceId = o.SourceId // one string per source, shared
		if o.ExpectedVersion != nil {
			n.ExpectedVersion = ptr(take(len(*o.ExpectedVersion)))
		}
		if o.ExpectedSha256 != nil {
			n.ExpectedSha256 = ptr(take(len(*o.ExpectedSha256)))
		}
		start := len(acts)
		acts = append(acts, o.Actions...)
		n.Actions = acts[start:len(acts):len(acts)]
		n.Provider = o.Provider
		n.ExpectedSizeBytes = o.ExpectedSizeBytes
		n.StorageClass = o.StorageClass
		n.StorageClassReason = o.StorageClassReason // interned by Build: shared
		n.PreservationElected = o.PreservationElected
		objs[i] = n
	}
}
