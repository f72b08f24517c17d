package plan

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"runtime/debug"
	"slices"
	"time"

	svcv1 "svc.dev/svc/gen/svc/v1"
)

// Defaults of a plan's Budget. A million objects is what the plan benchmark builds (about
// 620 MiB of heap at its peak, docs/benchmarks.md); 256 MiB of the listed strings a plan keeps
// is that million with ids, versions and senders of ordinary length. Under a soft memory limit
// (debug.SetMemoryLimit, GOMEMLIMIT; svc serve sets 512 MiB) the defaults shrink so that one
// plan's peak stays within it: an object per bytesPerObjectLimit bytes of the limit, and a
// quarter of the limit of metadata.
const (
	DefaultMaxObjects       = 1_000_000
	DefaultMaxMetadataBytes = 256 << 20
	DefaultMaxDuration      = 5 * time.Minute

	bytesPerObjectLimit = 1 << 10 // the peak is about 650 bytes an object: this leaves room
)

// limitedDefaults are the default object and metadata budgets under the process's soft memory
// limit (none: the constants).
func limitedDefaults() (int, int64) {
	limit := debug.SetMemoryLimit(-1) // reads it
	objs, meta := DefaultMaxObjects, int64(DefaultMaxMetadataBytes)
	if limit <= 0 || limit == math.MaxInt64 {
		return objs, meta
	}
	return min(objs, int(limit/bytesPerObjectLimit)), min(meta, limit/4)
}

// Budget bounds what building one plan may take, whatever the sources' listings do (a
// provider that lists without end, or ids of a kilobyte). Zero fields take the defaults.
type Budget struct {
	// MaxObjects is the most objects the sources may list in all (planned and excluded).
	MaxObjects int
	// MaxMetadataBytes is the most bytes of listed metadata the plan keeps: each object's id,
	// version, SHA-256, sender and thread id.
	MaxMetadataBytes int64
	// MaxDuration bounds reading the listings.
	MaxDuration time.Duration
}

func (b Budget) withDefaults() Budget {
	objs, meta := limitedDefaults()
	b.MaxObjects = cmp.Or(b.MaxObjects, objs)
	b.MaxMetadataBytes = cmp.Or(b.MaxMetadataBytes, meta)
	b.MaxDuration = cmp.Or(b.MaxDuration, DefaultMaxDuration)
	return b
}

// The budgets a BudgetError names.
const (
	BudgetObjects       = "objects"
	BudgetMetadataBytes = "metadata_bytes"
	BudgetTime          = "time"
)

// ErrBudgetExceeded is returned, as a *BudgetError, when building a plan would take more than
// its Budget. The request cannot succeed as it is: retrying it does not help; a plan over fewer
// sources, or a policy that narrows them, might.
var ErrBudgetExceeded = errors.New("plan budget exceeded")

// BudgetError names the budget a plan exceeded.
type BudgetError struct {
	Budget   string // BudgetObjects, BudgetMetadataBytes or BudgetTime
	Limit    int64  // objects, bytes or seconds
	SourceID string // the source being listed when it was exceeded
}

func (e *BudgetError) Error() string {
	var what string
	switch e.Budget {
	case BudgetObjects:
		what = fmt.Sprintf("the sources list more than %d objects", e.Limit)
	case BudgetMetadataBytes:
		what = fmt.Sprintf("the sources' listings hold more than %d bytes of ids, versions and senders", e.Limit)
	default:
		what = fmt.Sprintf("listing the sources took more than %d s", e.Limit)
	}
	return fmt.Sprintf("%v (%s): %s, while listing source %s", ErrBudgetExceeded, e.Budget, what, e.SourceID)
}

// Unwrap returns ErrBudgetExceeded.
func (e *BudgetError) Unwrap() error { return ErrBudgetExceeded }

// spending counts what a plan's listings have cost so far.
type spending struct {
	start   time.Time
	objects int
	bytes   int64
	next    int32
}

// add counts a page, or returns the budget it exceeds.
func (s *spending) add(objs []Object, b Budget, sourceID string) error {
	s.objects += len(objs)
	if s.objects > b.MaxObjects {
		return &BudgetError{Budget: BudgetObjects, Limit: int64(b.MaxObjects), SourceID: sourceID}
	}
	for i := range objs {
		o := &objs[i]
		s.bytes += int64(len(o.ID) + len(o.Version) + len(o.SHA256) + len(o.From) + len(o.ThreadID))
	}
	if s.bytes > b.MaxMetadataBytes {
		return &BudgetError{Budget: BudgetMetadataBytes, Limit: b.MaxMetadataBytes, SourceID: sourceID}
	}
	if time.Since(s.start) > b.MaxDuration {
		return &BudgetError{Budget: BudgetTime, Limit: int64(b.MaxDuration / time.Second), SourceID: sourceID}
	}
	return nil
}

// seq returns the next position in the listing.
func (s *spending) seq() int32 {
	s.next++
	return s.next - 1
}

// RepeatedIDDetail is the detail of the exclusion a plan records for an object its provider
// listed more than once.
const RepeatedIDDetail = "the provider listed this object more than once (a repeated id); it is planned once, as first listed"

// markRepeats finds the objects listed more than once (the same asset: the same source and
// provider object id), which a provider's listing must never do but offset pagination over a
// changing account does. The first listing of an object stands; later ones are marked repeat
// (a candidate) or dropped (an exclusion), and an object first planned gets one exclusion
// saying it was listed again (reason low_confidence), so that it is planned once and is never
// "a duplicate of itself". It returns the exclusions.
func markRepeats(cands []candidate, excluded []*svcv1.Exclusion, exSeq []int32) []*svcv1.Exclusion {
	type ref struct {
		asset string
		seq   int32
		i     int32 // a candidate, or len(cands)+ an exclusion
	}
	refs := make([]ref, 0, len(cands)+len(excluded))
	for i := range cands {
		refs = append(refs, ref{cands[i].obj.AssetId, cands[i].seq, int32(i)})
	}
	for j, e := range excluded {
		refs = append(refs, ref{e.AssetId, exSeq[j], int32(len(cands) + j)})
	}
	slices.SortFunc(refs, func(a, b ref) int { return cmp.Or(cmp.Compare(a.asset, b.asset), cmp.Compare(a.seq, b.seq)) })
	var drop []bool
	var again []*svcv1.Exclusion
	for k := 1; k < len(refs); k++ {
		if refs[k].asset != refs[k-1].asset {
			continue
		}
		first := k - 1
		for first > 0 && refs[first-1].asset == refs[k].asset {
			first--
		}
		if r := refs[k]; int(r.i) < len(cands) {
			cands[r.i].repeat = true
		} else {
			if drop == nil {
				drop = make([]bool, len(excluded))
			}
			drop[int(r.i)-len(cands)] = true
		}
		if first == k-1 && int(refs[first].i) < len(cands) {
			again = append(again, &svcv1.Exclusion{AssetId: refs[k].asset,
				Reason: svcv1.ExclusionReason_EXCLUSION_REASON_LOW_CONFIDENCE, Detail: RepeatedIDDetail})
		}
	}
	if drop == nil && again == nil {
		return excluded
	}
	out := excluded[:0]
	for j, e := range excluded {
		if drop == nil || !drop[j] {
			out = append(out, e)
		}
	}
	return append(out, again...)
}
