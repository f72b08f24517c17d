package plan_test

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"

	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/plan"
	"svc.dev/svc/plan/discover"
	"svc.dev/svc/providers"
	"svc.dev/svc/providers/plugin"
	"svc.dev/svc/providers/providertest/hostile"
)

// The test binary doubles as the hostile plugin: "TESTBINARY hostile-plugin".
func TestMain(m *testing.M) {
	if len(os.Args) == 2 && os.Args[1] == "hostile-plugin" {
		plugin.Serve(hostile.Description, hostile.New)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// hostileSource opens the hostile provider through the real plugin boundary, as a plan source.
func hostileSource(t *testing.T, cfg providers.Config) plan.Source {
	t.Helper()
	pl := plugin.NewPlugin(providers.Simulated, plugin.Command(os.Args[0], "hostile-plugin"), &plugin.Options{CallTimeout: 10 * time.Second})
	t.Cleanup(func() { pl.Close() })
	p, err := pl.Open(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return plan.Source{ID: "src_01JD0000000000000000000000", Provider: svcv1.Provider_PROVIDER_SIMULATED,
		Status: svcv1.SourceStatus_SOURCE_STATUS_CONNECTED, CanTrash: true, Objects: discover.Objects(p, hostile.Source)}
}

// TestRepeatedIDsArePlannedOnce: a provider paging by offset lists the last object of each page
// again at the top of the next (issue 27, finding 1). Each object is planned once; the repeats
// are excluded with the reason; no object is "a duplicate of itself" (it was trashed so).
func TestRepeatedIDsArePlannedOnce(t *testing.T) {
	t.Parallel()
	req := request(&svcv1.SourcePolicy{MinAgeDays: i64(30)})
	req.Sources = []plan.Source{hostileSource(t, providers.Config{"mode": "repeat_ids", "objects": "10", "page_size": "3"})}
	p := build(t, req)
	seen := map[string]bool{}
	for _, o := range p.Objects {
		if seen[o.AssetId] {
			t.Errorf("%s planned twice", o.AssetId)
		}
		seen[o.AssetId] = true
		if o.StorageClass == svcv1.StorageClass_STORAGE_CLASS_DUPLICATE {
			t.Errorf("%s (%s) is a duplicate of itself: %s", o.AssetId, o.ProviderObjectId, o.StorageClassReason)
		}
	}
	if len(p.Objects) != 10 {
		t.Errorf("%d objects planned, want the 10 the source holds", len(p.Objects))
	}
	repeats := 0
	for _, e := range p.Excluded {
		if e.Detail == plan.RepeatedIDDetail {
			repeats++
			if e.Reason != svcv1.ExclusionReason_EXCLUSION_REASON_LOW_CONFIDENCE || !seen[e.AssetId] {
				t.Errorf("exclusion %v", e)
			}
		}
	}
	if repeats != 3 {
		t.Errorf("%d repeats excluded, want 3 (the first object of pages 2-4)", repeats)
	}
}

// TestPlanBudget: an endless listing, or one of kilobyte ids, ends with an error naming the
// budget it exceeded (issue 27, finding 5), not with the memory of the host.
func TestPlanBudget(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		cfg    providers.Config
		budget plan.Budget
		want   string
	}{
		{"objects", providers.Config{"mode": "endless", "page_size": "1000"}, plan.Budget{MaxObjects: 20_000}, plan.BudgetObjects},
		{"metadata", providers.Config{"mode": "wide_ids", "objects": "5000", "page_size": "1000"}, plan.Budget{MaxMetadataBytes: 1 << 20}, plan.BudgetMetadataBytes},
		{"time", providers.Config{"mode": "endless", "page_size": "10"}, plan.Budget{MaxDuration: 500 * time.Millisecond, MaxObjects: 1 << 30}, plan.BudgetTime},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req := request(nil)
			req.Sources = []plan.Source{hostileSource(t, tc.cfg)}
			req.Budget = tc.budget
			start := time.Now()
			_, err := plan.Build(context.Background(), req)
			var be *plan.BudgetError
			if !errors.As(err, &be) || !errors.Is(err, plan.ErrBudgetExceeded) || be.Budget != tc.want || be.SourceID != req.Sources[0].ID {
				t.Fatalf("Build: %v, want a BudgetError naming %s", err, tc.want)
			}
			if d := time.Since(start); d > 10*time.Second {
				t.Errorf("took %s", d)
			}
			t.Log(err)
		})
	}
}
