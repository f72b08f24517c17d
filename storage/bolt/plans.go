package bolt

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"slices"

	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/storage"
)

// Plans keeps each plan as records written in one transaction: its header (the plan
// without its objects, small whatever the plan's size) and its objects in chunks of planChunk,
// stored as plans holding only objects under the ids "pln_.../000000", "pln_.../000001", ...
// Lists, grant checks and state changes read headers; a whole plan is assembled only where it
// is needed (hashing, executing, Connect responses), and REST streams a plan's objects chunk
// by chunk, so a response holds one chunk in memory at a time whatever the plan's size.
// Objects never change once a plan is stored. Plans stored before the split keep their
// objects in the header and read as they always did.
type Plans struct {
	headers *Collection[*svcv1.Plan]
	chunks  *Collection[*svcv1.Plan]
}

var _ storage.Plans = (*Plans)(nil)

// PlanChunk is how many objects one chunk record holds (about 200 KiB).
const PlanChunk = 1024

const planChunk = PlanChunk

// NewPlans returns the plans of db.
func NewPlans(db *DB) *Plans {
	newPlan := func() *svcv1.Plan { return &svcv1.Plan{} }
	return &Plans{headers: NewCollection(db, "plans", newPlan).WithOwnerIndex(), chunks: NewCollection(db, "plan_objects", newPlan)}
}

// Headers is the collection of plan headers, for lists that filter in their transaction.
func (ps *Plans) Headers() *Collection[*svcv1.Plan] { return ps.headers }

func chunkID(planID string, i int) string { return fmt.Sprintf("%s/%06d", planID, i) }

// Put stores a new plan and also in one transaction.
func (ps *Plans) Put(ctx context.Context, tenant string, p *svcv1.Plan, also ...storage.Write) error {
	extras, err := extrasOf(also)
	if err != nil {
		return err
	}
	objs := p.Objects
	for i := 0; i*planChunk < len(objs); i++ {
		chunk := &svcv1.Plan{Objects: objs[i*planChunk : min(len(objs), (i+1)*planChunk)]}
		extras = append(extras, PutExtra(ps.chunks, tenant, chunkID(p.PlanId, i), chunk))
	}
	p.Objects = nil // PutWith encodes p before it returns
	defer func() { p.Objects = objs }()
	return ps.headers.PutWith(ctx, tenant, p.PlanId, p, extras...)
}

// Header returns a plan without its objects (a plan stored before the split has them).
func (ps *Plans) Header(ctx context.Context, tenant, id string) (*svcv1.Plan, error) {
	return ps.headers.Get(ctx, tenant, id)
}

// Get returns a whole plan.
func (ps *Plans) Get(ctx context.Context, tenant, id string) (*svcv1.Plan, error) {
	p, err := ps.headers.Get(ctx, tenant, id)
	if err != nil {
		return nil, err
	}
	return p, ps.Fill(ctx, tenant, p)
}

// Fill reads the objects of a plan header into it.
func (ps *Plans) Fill(ctx context.Context, tenant string, p *svcv1.Plan) error {
	if len(p.Objects) > 0 {
		return nil // stored whole, before the split
	}
	for objs, err := range ps.Objects(ctx, tenant, p.PlanId) {
		if err != nil {
			return err
		}
		p.Objects = append(p.Objects, objs...)
	}
	return nil
}

// FillSmall reads the objects of plan headers in one read transaction when they hold at most
// limit objects in all, and reports whether it did; with more, it fills none of them.
func (ps *Plans) FillSmall(ctx context.Context, tenant string, plans []*svcv1.Plan, limit int) (bool, error) {
	total := 0
	for _, p := range plans {
		if total += int(p.GetProjection().GetObjectCount()); total > limit {
			return false, nil
		}
	}
	found := make([][]*svcv1.PlanObject, len(plans))
	small := true
	err := ps.chunks.View(ctx, func(r *Reader) error {
		total := 0
		for i, p := range plans {
			if len(p.Objects) > 0 {
				continue // stored whole, before the split
			}
			for k := 0; ; k++ {
				c, err := GetIn(r, ps.chunks, tenant, chunkID(p.PlanId, k))
				if errors.Is(err, ErrNotFound) {
					break
				}
				if err != nil {
					return err
				}
				if total += len(c.GetObjects()); total > limit {
					small = false // the projection undercounted: stream instead
					return nil
				}
				found[i] = append(found[i], c.GetObjects()...)
			}
		}
		return nil
	})
	if err != nil || !small {
		return false, err
	}
	for i, p := range plans {
		if len(p.Objects) == 0 {
			p.Objects = found[i]
		}
	}
	return true, nil
}

// Objects yields a plan's objects chunk by chunk, each read in its own short transaction; a
// plan stored whole (before plans were split) yields its objects in chunks of the same size.
func (ps *Plans) Objects(ctx context.Context, tenant, planID string) iter.Seq2[[]*svcv1.PlanObject, error] {
	return func(yield func([]*svcv1.PlanObject, error) bool) {
		h, err := ps.headers.Get(ctx, tenant, planID)
		if err != nil {
			yield(nil, err)
			return
		}
		if len(h.Objects) > 0 {
			for objs := range slices.Chunk(h.Objects, planChunk) {
				if !yield(objs, nil) {
					return
				}
			}
			return
		}
		for i := 0; ; i++ {
			c, err := ps.chunks.Get(ctx, tenant, chunkID(planID, i))
			if errors.Is(err, ErrNotFound) {
				return
			}
			if !yield(c.GetObjects(), err) || err != nil {
				return
			}
		}
	}
}

// Page returns up to limit objects of a plan from index start, and whether more follow.
func (ps *Plans) Page(ctx context.Context, tenant string, h *svcv1.Plan, start, limit int) ([]*svcv1.PlanObject, bool, error) {
	if len(h.Objects) > 0 { // stored whole
		end := min(len(h.Objects), start+limit)
		if start >= end {
			return nil, false, nil
		}
		return h.Objects[start:end], end < len(h.Objects), nil
	}
	var out []*svcv1.PlanObject
	for i := start / planChunk; len(out) < limit; i++ {
		c, err := ps.chunks.Get(ctx, tenant, chunkID(h.PlanId, i))
		if errors.Is(err, ErrNotFound) {
			return out, false, nil
		}
		if err != nil {
			return nil, false, err
		}
		objs := c.GetObjects()
		if i == start/planChunk {
			objs = objs[min(len(objs), start%planChunk):]
		}
		take := min(len(objs), limit-len(out))
		out = append(out, objs[:take]...)
		if take < len(objs) {
			return out, true, nil
		}
	}
	// The page is full at a chunk's end: more follow when the next chunk exists.
	_, err := ps.chunks.Get(ctx, tenant, chunkID(h.PlanId, (start+len(out))/planChunk))
	if errors.Is(err, ErrNotFound) {
		return out, false, nil
	}
	return out, err == nil, err
}

// Update applies fn to the whole stored plan and stores its header, with also, in one
// transaction. The objects are read before the transaction (they never change); fn runs on
// the plan with them, and the plan it changed keeps them after Update returns.
// UpdateHeader applies fn to the stored header (a plan stored whole, from before plans were
// split, comes with its objects) and stores it, with also, in one transaction.
func (ps *Plans) UpdateHeader(ctx context.Context, tenant, id string, fn func(*svcv1.Plan) error, also ...storage.Write) error {
	extras, err := extrasOf(also)
	if err != nil {
		return err
	}
	return ps.headers.UpdateWith(ctx, tenant, id, fn, extras...)
}

func (ps *Plans) Update(ctx context.Context, tenant, id string, fn func(*svcv1.Plan) error, also ...storage.Write) error {
	extras, err := extrasOf(also)
	if err != nil {
		return err
	}
	whole, err := ps.Get(ctx, tenant, id)
	if err != nil {
		return err
	}
	objs := whole.Objects
	var split bool
	var stored *svcv1.Plan
	err = ps.headers.UpdateWith(ctx, tenant, id, func(h *svcv1.Plan) error {
		stored = h
		if split = len(h.Objects) == 0; split {
			h.Objects = objs
		}
		if err := fn(h); err != nil {
			return err
		}
		if split {
			h.Objects = nil
		}
		return nil
	}, extras...)
	if stored != nil && split {
		stored.Objects = objs
	}
	return err
}

// Scan calls fn with each of the tenant's plan headers, oldest first, until it returns false.
func (ps *Plans) Scan(ctx context.Context, tenant string, fn func(*svcv1.Plan) bool) error {
	return ps.headers.Scan(ctx, tenant, fn)
}
