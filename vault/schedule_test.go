package vault_test

import (
	"sync"
	"testing"
	"time"

	"svc.dev/svc/vault"
	"svc.dev/svc/vault/vaulttest"
)

// fakeClock is a settable Options.Now.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time               { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fakeClock) Add(d time.Duration)          { c.mu.Lock(); defer c.mu.Unlock(); c.t = c.t.Add(d) }
func newClock() *fakeClock                        { return &fakeClock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)} }
func day(n int) time.Duration                     { return time.Duration(n) * 24 * time.Hour }
func windowShare(c vault.Coverage, i int) float64 { return c.Windows[i].ObjectShare }

// Objects committed together (so all due at once unless work is pulled forward), verified hourly within a budget just above what the schedule
// requires, are each re-verified from the medium within VerifyEvery, every run stays
// within its budget, and coverage follows.
func TestScrubScheduledKeepsEveryObjectWithinVerifyEvery(t *testing.T) {
	clock := newClock()
	v := vaulttest.Open(t, &vault.Options{Now: clock.Now})
	tenants := []string{tenant, "live:usr_other"}
	var total int64
	for i := range 60 {
		size := 1000 + 37*(i%50)
		put(t, v, tenants[i%2], payload(uint64(i), size), vault.PutRequest{SizeBytes: int64(size)})
		total += int64(size)
	}
	every := day(2)
	opts := &vault.ScheduleOptions{VerifyEvery: every, Interval: time.Hour}
	// Just enough: the bytes per VerifyEvery, with half to spare (every object fits a run).
	opts.BytesPerHour = int64(float64(total)/every.Hours()*1.5) + 1
	budget := opts.BytesPerHour

	c, err := v.Coverage(ctx, tenant)
	if err != nil || c.Windows[0].ObjectShare != 1 || c.Objects != 30 {
		t.Fatalf("coverage right after the commits: %+v, %v", c, err)
	}
	var maxRead, sumRead int64
	for hour := 1; hour <= 24*8; hour++ {
		clock.Add(time.Hour)
		rep, err := v.ScrubScheduled(ctx, tenants, opts)
		if err != nil {
			t.Fatal(err)
		}
		if !rep.Feasible || len(rep.Corrupt) > 0 || rep.Overdue > 0 {
			t.Fatalf("hour %d: %+v", hour, rep)
		}
		maxRead = max(maxRead, rep.BytesRead)
		sumRead += rep.BytesRead
		if rep.BytesRead > budget+3000 { // one object at most beyond the run's budget
			t.Fatalf("hour %d: read %d bytes, budget %d", hour, rep.BytesRead, budget)
		}
		if sumRead > int64(hour)*budget+3000 {
			t.Fatalf("hour %d: read %d bytes in all, budget %d an hour", hour, sumRead, budget)
		}
		for _, tn := range tenants {
			objs, _, err := v.List(ctx, tn, "", 1000, nil)
			if err != nil {
				t.Fatal(err)
			}
			for _, o := range objs {
				if age := clock.Now().Sub(o.MediumVerifiedAt); age > every {
					t.Fatalf("hour %d: %s last verified from the medium %v ago", hour, o.ID, age)
				}
			}
		}
	}
	if maxRead == 0 {
		t.Fatal("nothing was ever re-read")
	}
	c, err = v.Coverage(ctx, tenant)
	if err != nil {
		t.Fatal(err)
	}
	if windowShare(c, 0) <= 0 || windowShare(c, 1) != 1 || windowShare(c, 2) != 1 {
		t.Fatalf("coverage after 8 days of scheduling: %+v", c)
	}
	t.Logf("budget %d B/h, most read in a run %d B, coverage %+v", budget, maxRead, c.Windows)
}

// Objects all overdue at once are verified as the budget allows, the rest reported overdue
// (the budget still covers the schedule in the long run: Feasible); a budget below the
// schedule's rate is reported infeasible.
func TestScrubScheduledReportsAnInfeasibleBudget(t *testing.T) {
	clock := newClock()
	v := vaulttest.Open(t, &vault.Options{Now: clock.Now})
	for i := range 20 {
		put(t, v, tenant, payload(uint64(i), 10_000), vault.PutRequest{SizeBytes: 10_000})
	}
	clock.Add(day(31))
	c, _ := v.Coverage(ctx, tenant)
	if c.Windows[1].Objects != 0 || c.Windows[2].ObjectShare != 1 {
		t.Fatalf("coverage after 31 days: %+v", c)
	}
	rep, err := v.ScrubScheduled(ctx, []string{tenant}, &vault.ScheduleOptions{BytesPerHour: 25_000})
	if err != nil {
		t.Fatal(err)
	}
	// Objects are read while the budget is not spent: the third crosses it.
	if !rep.Feasible || rep.Verified != 3 || rep.BytesRead != 30_000 || rep.Overdue != 17 || rep.OverdueBytes != 170_000 {
		t.Fatalf("%+v", rep)
	}
	rep, err = v.ScrubScheduled(ctx, []string{tenant}, &vault.ScheduleOptions{BytesPerHour: 100})
	if err != nil {
		t.Fatal(err)
	}
	// Infeasible; and the 5,000 bytes read beyond the last budget are owed first.
	if rep.Feasible || rep.RequiredBytesPerHour != 200_000/720+1 || rep.Verified != 0 || rep.Overdue != 17 {
		t.Fatalf("%+v", rep)
	}
}
