package vault

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"
)

// CoverageWindows are the windows Coverage reports by default: 7, 30 and 90
// days.
var CoverageWindows = []time.Duration{7 * 24 * time.Hour, 30 * 24 * time.Hour, 90 * 24 * time.Hour}

// Coverage says how much of a vault was re-read from the medium and verified
// recently: of the committed and cold objects (corrupt ones count as not
// verified), how many, and how many of their bytes, have a MediumVerifiedAt
// within each window.
type Coverage struct {
	At      time.Time        `json:"at"`
	Objects int64            `json:"objects"`
	Bytes   int64            `json:"bytes"`
	Windows []CoverageWindow `json:"windows"`
	// Never counts the objects never verified from the medium (written
	// before verification times were recorded, or on a backend that cannot
	// read around its cache), and NeverBytes their bytes.
	Never      int64 `json:"never"`
	NeverBytes int64 `json:"never_bytes"`
	// Corrupt counts corrupt objects (in Objects, verified in no window).
	Corrupt int64 `json:"corrupt"`
}

// CoverageWindow is the share of a vault verified from the medium within a
// window.
type CoverageWindow struct {
	Within  time.Duration `json:"within"` // nanoseconds in JSON
	Days    int           `json:"days"`
	Objects int64         `json:"objects"`
	Bytes   int64         `json:"bytes"`
	// ObjectShare and ByteShare are Objects and Bytes over the vault's
	// (0..1); 1 for an empty vault (nothing is unverified).
	ObjectShare float64 `json:"object_share"`
	ByteShare   float64 `json:"byte_share"`
}

// Coverage computes a tenant's verification coverage now, for windows
// (none: CoverageWindows). It reads every object record (one pass).
func (v *Vault) Coverage(ctx context.Context, tenant string, windows ...time.Duration) (Coverage, error) {
	if err := validTenant(tenant); err != nil {
		return Coverage{}, err
	}
	c := newCoverage(v.now(), windows)
	err := v.meta.View(ctx, tenant, func(tx MetaTx) error {
		c.reset()
		return tx.Objects("", func(o Object) bool {
			c.add(&o)
			return ctx.Err() == nil
		})
	})
	if err == nil {
		err = ctx.Err()
	}
	if err != nil {
		return Coverage{}, fmt.Errorf("vault coverage: %w", err)
	}
	c.shares()
	return c, nil
}

// CoverageOf sums the coverage of several tenants (the vault as a whole,
// for an operator): each must have been computed for the same windows.
func CoverageOf(cs ...Coverage) Coverage {
	var out Coverage
	for i, c := range cs {
		if i == 0 {
			out = c
			out.Windows = slices.Clone(c.Windows)
			continue
		}
		if c.At.After(out.At) {
			out.At = c.At
		}
		out.Objects += c.Objects
		out.Bytes += c.Bytes
		out.Never += c.Never
		out.NeverBytes += c.NeverBytes
		out.Corrupt += c.Corrupt
		for j := range out.Windows {
			if j < len(c.Windows) {
				out.Windows[j].Objects += c.Windows[j].Objects
				out.Windows[j].Bytes += c.Windows[j].Bytes
			}
		}
	}
	out.shares()
	return out
}

func newCoverage(now time.Time, windows []time.Duration) Coverage {
	if len(windows) == 0 {
		windows = CoverageWindows
	}
	windows = slices.SortedFunc(slices.Values(windows), cmp.Compare)
	c := Coverage{At: now}
	for _, w := range windows {
		c.Windows = append(c.Windows, CoverageWindow{Within: w, Days: int(w / (24 * time.Hour))})
	}
	return c
}

func (c *Coverage) reset() {
	c.Objects, c.Bytes, c.Never, c.NeverBytes, c.Corrupt = 0, 0, 0, 0, 0
	for i := range c.Windows {
		c.Windows[i].Objects, c.Windows[i].Bytes = 0, 0
	}
}

func (c *Coverage) add(o *Object) {
	switch o.State {
	case StateCommitted, StateCold:
	case StateCorrupt:
		c.Objects++
		c.Bytes += o.SizeBytes
		c.Corrupt++
		return
	default:
		return
	}
	c.Objects++
	c.Bytes += o.SizeBytes
	if o.MediumVerifiedAt.IsZero() {
		c.Never++
		c.NeverBytes += o.SizeBytes
		return
	}
	age := c.At.Sub(o.MediumVerifiedAt)
	for i := range c.Windows {
		if age <= c.Windows[i].Within {
			c.Windows[i].Objects++
			c.Windows[i].Bytes += o.SizeBytes
		}
	}
}

func (c *Coverage) shares() {
	for i := range c.Windows {
		w := &c.Windows[i]
		w.ObjectShare, w.ByteShare = 1, 1
		if c.Objects > 0 {
			w.ObjectShare = float64(w.Objects) / float64(c.Objects)
		}
		if c.Bytes > 0 {
			w.ByteShare = float64(w.Bytes) / float64(c.Bytes)
		}
	}
}
