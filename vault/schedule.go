package vault

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"
)

// Scheduled verification.
//
// A full Scrub reads everything at once. ScrubScheduled spreads the reading:
// run every Interval (an hour by default), it re-reads from the medium the
// objects whose verification is coming due, within a byte budget per run, so
// that every object is re-verified within VerifyEvery (30 days by default)
// when the budget allows it (ScheduleReport.Feasible says whether it does).
//
// Each object's deadline is its MediumVerifiedAt plus VerifyEvery (an object
// never verified from the medium is due now). Objects are taken earliest
// deadline first, and the run takes the shortest such prefix that lets the rest
// be done in time at the budget's rate: object k is needed now when its
// deadline comes before now + Interval + (the bytes of objects 1..k) / rate.
// So work is pulled forward only as far as the backlog requires (a burst of
// objects committed together is spread over the days before it comes due,
// instead of all falling due in one hour), and a run never reads more than
// its budget by more than one object, and over runs keeps to the budget.

// ScheduleOptions tunes ScrubScheduled; nil means defaults.
type ScheduleOptions struct {
	// VerifyEvery is how often every object must be re-read from the medium
	// and verified: 0 means 30 days.
	VerifyEvery time.Duration
	// Interval is how often ScrubScheduled runs: 0 means an hour.
	Interval time.Duration
	// BytesPerHour is the reading budget; a run may read BytesPerHour *
	// Interval / hour bytes. 0 means no limit (everything needed now is read).
	BytesPerHour int64
}

func (o *ScheduleOptions) defaults() {
	if o.VerifyEvery <= 0 {
		o.VerifyEvery = 30 * 24 * time.Hour
	}
	if o.Interval <= 0 {
		o.Interval = time.Hour
	}
}

// ObjectRef names a vault object of a tenant.
type ObjectRef struct {
	Tenant string `json:"tenant"`
	ID     string `json:"id"`
}

// ScheduleReport says what a run of ScrubScheduled did.
type ScheduleReport struct {
	Objects int64 `json:"objects"` // committed, cold and corrupt objects of the tenants (corrupt ones are left to Scrub)
	Bytes   int64 `json:"bytes"`   // and their bytes
	// Needed counts the objects the schedule needed verified in this run,
	// Verified those verified (Bytes read: BytesRead), Corrupt those found
	// bad (now corrupt).
	Needed    int         `json:"needed"`
	Verified  int         `json:"verified"`
	BytesRead int64       `json:"bytes_read"`
	Corrupt   []ObjectRef `json:"corrupt,omitempty"`
	// Overdue counts objects past their deadline that this run left
	// (over budget), OverdueBytes their bytes.
	Overdue      int   `json:"overdue"`
	OverdueBytes int64 `json:"overdue_bytes"`
	// RequiredBytesPerHour is the budget that verifies every object once
	// per VerifyEvery (Bytes / VerifyEvery); Feasible reports whether
	// BytesPerHour covers it.
	RequiredBytesPerHour int64 `json:"required_bytes_per_hour"`
	Feasible             bool  `json:"feasible"`
}

type dueObject struct {
	tenant   string
	id       string
	deadline time.Time
	bytes    int64
}

// ScrubScheduled runs one round of scheduled verification over tenants,
// sharing one budget (see above). Verifications are recorded as Verify records
// them (medium_verified_at, or corrupt with the reason); it does not repair,
// collect orphans or finish deletions (Scrub does).
func (v *Vault) ScrubScheduled(ctx context.Context, tenants []string, opts *ScheduleOptions) (ScheduleReport, error) {
	var o ScheduleOptions
	if opts != nil {
		o = *opts
	}
	o.defaults()
	now := v.now()
	var rep ScheduleReport
	var all []dueObject
	for _, tn := range tenants {
		if err := validTenant(tn); err != nil {
			return rep, err
		}
		err := v.meta.View(ctx, tn, func(tx MetaTx) error {
			return tx.Objects("", func(ob Object) bool {
				switch ob.State {
				case StateCommitted, StateCold, StateCorrupt:
				default:
					return true
				}
				rep.Objects++
				rep.Bytes += ob.SizeBytes
				if ob.State == StateCorrupt {
					return true // Scrub repairs; re-reading it every run would spend the budget
				}
				d := now
				if !ob.MediumVerifiedAt.IsZero() {
					d = ob.MediumVerifiedAt.Add(o.VerifyEvery)
				}
				all = append(all, dueObject{tn, ob.ID, d, ob.SizeBytes})
				return ctx.Err() == nil
			})
		})
		if err == nil {
			err = ctx.Err()
		}
		if err != nil {
			return rep, fmt.Errorf("scheduled scrub: %w", err)
		}
	}
	hours := o.VerifyEvery.Hours()
	rep.RequiredBytesPerHour = int64(float64(rep.Bytes)/hours) + 1
	rep.Feasible = o.BytesPerHour == 0 || o.BytesPerHour >= rep.RequiredBytesPerHour

	slices.SortFunc(all, func(a, b dueObject) int {
		return cmp.Or(a.deadline.Compare(b.deadline), cmp.Compare(a.tenant, b.tenant), cmp.Compare(a.id, b.id))
	})
	// The prefix needed now: up to the last object whose latest start
	// (deadline - bytes before it at the budget's rate) is within this run.
	needed := 0
	var cum int64
	horizon := now.Add(o.Interval)
	for i, d := range all {
		cum += d.bytes
		start := d.deadline
		if o.BytesPerHour > 0 {
			start = d.deadline.Add(-time.Duration(float64(cum) / float64(o.BytesPerHour) * float64(time.Hour)))
		}
		if !start.After(horizon) {
			needed = i + 1
		}
	}
	rep.Needed = needed
	// The run's budget, less what earlier runs read beyond theirs: objects
	// are read while the budget is not spent, so the last one may cross it,
	// and the excess is owed by the next run (kept in memory: a restart
	// forgets at most one object's worth). Over runs the rate stays within
	// BytesPerHour; one run reads at most its budget plus one object.
	budget := int64(-1)
	if o.BytesPerHour > 0 {
		budget = int64(float64(o.BytesPerHour) * o.Interval.Hours())
		v.schedMu.Lock()
		defer v.schedMu.Unlock()
	}
	var read int64
	taken := 0
	for taken < needed && (budget < 0 || read < budget-v.schedDebt) {
		read += all[taken].bytes
		taken++
	}
	if budget >= 0 {
		v.schedDebt = max(0, v.schedDebt+read-budget)
	}
	byTenant := map[string][]string{}
	var order []string
	for _, d := range all[:taken] {
		if byTenant[d.tenant] == nil {
			order = append(order, d.tenant)
		}
		byTenant[d.tenant] = append(byTenant[d.tenant], d.id)
	}
	for _, tn := range order {
		if err := v.verifyObjects(ctx, tn, byTenant[tn], &rep); err != nil {
			return rep, fmt.Errorf("scheduled scrub: %w", err)
		}
	}
	for _, d := range all[taken:] {
		if d.deadline.After(now) {
			break
		}
		rep.Overdue++
		rep.OverdueBytes += d.bytes
	}
	return rep, nil
}

// verifyObjects re-reads the named objects of a tenant from the medium and
// records the outcome, 256 objects per metadata transaction.
func (v *Vault) verifyObjects(ctx context.Context, tenant string, ids []string, rep *ScheduleReport) error {
	t, err := v.tenant(ctx, tenant)
	if err != nil {
		return err
	}
	memo := map[copyKey]error{}
	for len(ids) > 0 {
		page := ids[:min(256, len(ids))]
		ids = ids[len(page):]
		type checked struct {
			id string
			pr probe
		}
		var probes []checked
		for _, id := range page {
			o, err := v.Get(ctx, tenant, id)
			if err != nil {
				continue // gone meanwhile
			}
			if o.State != StateCommitted && o.State != StateCold && o.State != StateCorrupt {
				continue
			}
			pr, err := v.probeObject(ctx, t, o, memo)
			if err != nil {
				return err
			}
			rep.BytesRead += pr.bytes
			probes = append(probes, checked{id, pr})
		}
		var after []Object
		err := v.meta.Update(ctx, tenant, func(tx MetaTx) error {
			after = after[:0]
			now := v.now()
			for _, c := range probes {
				o, err := v.applyProbe(tx, c.id, c.pr, now)
				if err != nil {
					return err
				}
				after = append(after, o)
			}
			return nil
		})
		if err != nil {
			return err
		}
		for _, o := range after {
			if o.State == StateCorrupt {
				rep.Corrupt = append(rep.Corrupt, ObjectRef{tenant, o.ID})
			} else {
				rep.Verified++
			}
		}
	}
	return nil
}
