package execute

import (
	"fmt"
	"io"
	"iter"

	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/providers"
)

// FetchLimit is the most content a fetch may stream for an object the plan expects to be
// expected bytes: the expected size plus a tolerance of an eighth and 1 MiB, for providers
// that list sizes loosely (a mail service's size estimate, a message re-encoded between the
// listing and the fetch). What a plan authorized bounds what lands on disk: an object larger
// than this is not read past the limit and its asset fails (providers.ErrTooLarge).
func FetchLimit(expected int64) int64 {
	return max(expected, 0) + max(expected, 0)/8 + 1<<20
}

// bounded checks a fetched object's declared size against limit and makes its body fail with
// providers.ErrTooLarge once more than limit bytes were read, whatever the object declared
// (an in-process provider need not honour FetchRequest.MaxBytes; the plugin host does).
func bounded(c *providers.Content, limit int64) (*providers.Content, error) {
	if c.Object.SizeBytes > limit {
		c.Body.Close()
		return nil, fmt.Errorf("%q declares %d bytes, more than the %d the plan allows: %w", c.Object.ID, c.Object.SizeBytes, limit, providers.ErrTooLarge)
	}
	return &providers.Content{Object: c.Object, Body: &limitedBody{rc: c.Body, left: limit, limit: limit, id: c.Object.ID}}, nil
}

// limitedBody fails a read that goes past its limit.
type limitedBody struct {
	rc          io.ReadCloser
	left, limit int64
	id          string
}

func (b *limitedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		// One byte more would pass the limit: see whether there is one.
		var one [1]byte
		n, err := b.rc.Read(one[:])
		if n > 0 {
			return 0, fmt.Errorf("%q streams more than the %d bytes the plan allows: %w", b.id, b.limit, providers.ErrTooLarge)
		}
		return 0, err
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.rc.Read(p)
	b.left -= int64(n)
	return n, err
}

func (b *limitedBody) Close() error { return b.rc.Close() }

// uniqueObjects drops a plan object whose asset id is the one before it: a plan must hold
// each asset once (plan.Build has planned a repeated id once since issue 27), but a plan
// stored before may not, and its receipt could never be built. Plans are stored in asset id
// order, so a repeat follows its first.
func uniqueObjects(objects iter.Seq2[[]*svcv1.PlanObject, error]) iter.Seq2[[]*svcv1.PlanObject, error] {
	return func(yield func([]*svcv1.PlanObject, error) bool) {
		prev := ""
		for objs, err := range objects {
			if err != nil {
				yield(nil, err)
				return
			}
			out, copied := objs, false
			for i, o := range objs {
				if prev != "" && o.GetAssetId() == prev {
					if !copied {
						out, copied = append(make([]*svcv1.PlanObject, 0, len(objs)), objs[:i]...), true
					}
					continue
				}
				prev = o.GetAssetId()
				if copied {
					out = append(out, o)
				}
			}
			if !yield(out, nil) {
				return
			}
		}
	}
}
