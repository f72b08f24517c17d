package execute_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"iter"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"svc.dev/svc/execute"
	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/plan"
	"svc.dev/svc/providers"
	"svc.dev/svc/providers/local"
	"svc.dev/svc/providers/plugin"
	"svc.dev/svc/providers/providertest/hostile"
)

// The test binary doubles as the hostile plugin: "TESTBINARY hostile-plugin".
func TestMain(m *testing.M) {
	if len(os.Args) == 2 && os.Args[1] == "hostile-plugin" {
		plugin.Serve(hostile.Description, hostile.New)
		os.Exit(0)
	}
	if len(os.Args) == 2 && os.Args[1] == "local-plugin" {
		plugin.Serve(local.Description, local.New)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// hostileSources opens one provider for every source id, and dst for destination ids.
type hostileSources struct{ p, dst providers.Provider }

func (s hostileSources) Source(_ context.Context, _ string, id string) (providers.Provider, string, error) {
	if strings.HasPrefix(id, "dst_") && s.dst != nil {
		return s.dst, "", nil
	}
	return s.p, hostile.Source, nil
}

// openHostile opens the hostile provider through the real plugin boundary.
func openHostile(t *testing.T, cfg providers.Config) providers.Provider {
	t.Helper()
	pl := plugin.NewPlugin(providers.Simulated, plugin.Command(os.Args[0], "hostile-plugin"), &plugin.Options{CallTimeout: 10 * time.Second})
	t.Cleanup(func() { pl.Close() })
	p, err := pl.Open(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func contentSHA(id string) string {
	s := sha256.Sum256(hostile.Content(id))
	return hex.EncodeToString(s[:])
}

// hostileRun executes a plan of n objects of the hostile provider p (preserve and trash each,
// as planned from its listing) and returns the execution and each asset's journal.
func hostileRun(t *testing.T, p providers.Provider, n int, edit func(*svcv1.Plan)) (*svcv1.Execution, map[string][]execute.Transition, *memVault) {
	t.Helper()
	return hostileRunWith(t, hostileSources{p: p}, n, edit)
}

// hostileRunWith is hostileRun with a destination.
func hostileRunWith(t *testing.T, sources hostileSources, n int, edit func(*svcv1.Plan)) (*svcv1.Execution, map[string][]execute.Transition, *memVault) {
	t.Helper()
	pl := &svcv1.Plan{PlanId: "pln_01JD0000000000000000000000", PlanVersion: "1", Actor: &svcv1.Actor{Type: 1, PrincipalId: "usr_1"},
		Intent: svcv1.PlanIntent_PLAN_INTENT_SVC, Projection: &svcv1.Projection{}, PreservationRequired: true,
		State: svcv1.PlanState_PLAN_STATE_AUTHORIZED}
	for i := range n {
		id := hostile.ObjectID(nil, i)
		pl.Objects = append(pl.Objects, &svcv1.PlanObject{AssetId: "ast_" + pad(i), SourceId: "src_1", Provider: svcv1.Provider_PROVIDER_SIMULATED,
			ProviderObjectId: id, ExpectedVersion: proto.String("v1"), ExpectedSizeBytes: int64(len(hostile.Content(id))), ExpectedSha256: proto.String(contentSHA(id)),
			Actions: []svcv1.PlanAction{svcv1.PlanAction_PLAN_ACTION_PRESERVE, svcv1.PlanAction_PLAN_ACTION_TRASH}, PreservationElected: true})
	}
	if edit != nil {
		edit(pl)
	}
	h, err := plan.Hash(pl)
	if err != nil {
		t.Fatal(err)
	}
	pl.Hash, pl.Authorization = h, &svcv1.PlanAuthorization{PlanHashAtAuthorization: h}
	store := newMemStore()
	store.plans[pl.PlanId] = pl
	vault := &memVault{blobs: map[string][]byte{}, store: store}
	finish := &countingFinisher{}
	e := execute.New(store, sources, vault, finish, execute.Options{Concurrency: 4, Backoff: time.Millisecond})
	x, err := e.Start(context.Background(), "t", pl.PlanId, "usr_1")
	if err != nil {
		t.Fatal(err)
	}
	e.Wait()
	x = store.executions[x.Id]
	if x.GetFinishedAt() == nil || x.GetReceiptId() == "" || len(store.violations) > 0 {
		t.Fatalf("execution did not end with its receipt: %v %v", x, store.violations)
	}
	js, _ := store.Journal(context.Background(), "t", x.Id)
	by := map[string][]execute.Transition{}
	for _, tr := range js {
		by[tr.AssetID] = append(by[tr.AssetID], tr)
	}
	return x, by, vault
}

func reached(ts []execute.Transition, s svcv1.StepState) bool {
	for _, t := range ts {
		if t.To == s {
			return true
		}
	}
	return false
}

// TestUnknownTrashOutcomeIsTrashed: a plugin that crashes with a trash in flight, or answers a
// trash it did with a transient error, leaves the outcome unknown; the retry finds the object
// gone. That is svc's trash: the asset is recorded trashed (so the receipt says so and the undo
// covers it), never skipped "no longer at the source" (issue 27, finding 3).
func TestUnknownTrashOutcomeIsTrashed(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"trash_lie", "trash_crash"} {
		t.Run(mode, func(t *testing.T) {
			dir := t.TempDir()
			const n = 4
			p := openHostile(t, providers.Config{"mode": mode, "dir": dir, "objects": strconv.Itoa(n)})
			x, by, _ := hostileRun(t, p, n, nil)
			for asset, ts := range by {
				last := ts[len(ts)-1]
				if !reached(ts, svcv1.StepState_STEP_STATE_SOURCE_TRASHED_OR_REMOVED) || last.To != svcv1.StepState_STEP_STATE_RECLAIM_PENDING {
					t.Errorf("%s ended %v (%s), want trashed", asset, last.To, last.Error)
				}
			}
			if got := hostile.Trashed(dir, n); len(got) != n {
				t.Errorf("%d trashed at the source, want %d", len(got), n)
			}
			if x.Status != svcv1.ExecutionStatus_EXECUTION_STATUS_COMPLETED || x.Completed != n {
				t.Errorf("execution %v, %d completed", x.Status, x.Completed)
			}
		})
	}
}

// TestFetchBoundedByThePlan: an object planned at 16 bytes whose fetch streams 4 MiB fails its
// asset, through the plugin host (which refuses it before any content crosses) and in process
// (where the engine stops reading at the limit); nothing is vaulted or trashed (finding 4).
func TestFetchBoundedByThePlan(t *testing.T) {
	t.Parallel()
	cfg := func(dir string) providers.Config {
		return providers.Config{"mode": "big_fetch", "fetch_size": fmt.Sprint(4 << 20), "dir": dir, "objects": "3"}
	}
	for _, through := range []string{"plugin", "in process"} {
		t.Run(through, func(t *testing.T) {
			dir := t.TempDir()
			var p providers.Provider
			if through == "plugin" {
				p = openHostile(t, cfg(dir))
			} else {
				var err error
				if p, err = hostile.New(context.Background(), cfg(dir)); err != nil {
					t.Fatal(err)
				}
			}
			x, by, vault := hostileRun(t, p, 3, nil)
			for asset, ts := range by {
				last := ts[len(ts)-1]
				if last.To != svcv1.StepState_STEP_STATE_FAILED || !contains(last.Error, providers.ErrTooLarge.Error()) {
					t.Errorf("%s ended %v (%s), want failed: too large", asset, last.To, last.Error)
				}
			}
			if got := hostile.Trashed(dir, 3); len(got) != 0 || len(vault.blobs) != 0 {
				t.Errorf("%d trashed, %d vaulted", len(got), len(vault.blobs))
			}
			if x.Failed != 3 {
				t.Errorf("%d failed, want 3", x.Failed)
			}
		})
	}
}

func contains(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}

// TestFetchLimitTolerance: the documented tolerance.
func TestFetchLimitTolerance(t *testing.T) {
	for _, c := range []struct{ planned, limit int64 }{{0, 1 << 20}, {2000, 2000 + 250 + 1<<20}, {8 << 20, 9<<20 + 1<<20}} {
		if got := execute.FetchLimit(c.planned); got != c.limit {
			t.Errorf("FetchLimit(%d) = %d, want %d", c.planned, got, c.limit)
		}
	}
}

// uniqueFinisher fails, as the receipt builder does, on a plan that holds an asset twice.
type uniqueFinisher struct{ countingFinisher }

func (f *uniqueFinisher) Finish(ctx context.Context, tenant string, x *svcv1.Execution, p *svcv1.Plan, objects iter.Seq2[[]*svcv1.PlanObject, error],
	journal func(func(execute.Transition) error) error) (execute.Receipt, error) {
	seen := map[string]bool{}
	for objs, err := range objects {
		if err != nil {
			return execute.Receipt{}, err
		}
		for _, o := range objs {
			if seen[o.GetAssetId()] {
				return execute.Receipt{}, fmt.Errorf("%s appears twice", o.GetAssetId())
			}
			seen[o.GetAssetId()] = true
		}
	}
	return f.countingFinisher.Finish(ctx, tenant, x, p, objects, journal)
}

// TestStoredPlanWithARepeatedAssetEnds: a plan stored before plans held each id once has an
// asset twice; its execution still ends, with a receipt, each object acted on once (finding 1).
func TestStoredPlanWithARepeatedAssetEnds(t *testing.T) {
	r := newRig(t, 10)
	p := r.plan
	p.Objects = append(p.Objects[:4], append([]*svcv1.PlanObject{proto.Clone(p.Objects[3]).(*svcv1.PlanObject)}, p.Objects[4:]...)...)
	h, err := plan.Hash(p)
	if err != nil {
		t.Fatal(err)
	}
	p.Hash, p.Authorization = h, &svcv1.PlanAuthorization{PlanHashAtAuthorization: h}
	f := &uniqueFinisher{}
	r.finish = &f.countingFinisher
	e := execute.New(r.store, fakeSources{src: r.src}, r.vault, f, execute.Options{Concurrency: 4, Backoff: time.Millisecond})
	x, err := e.Start(context.Background(), "t", p.PlanId, "usr_1")
	if err != nil {
		t.Fatal(err)
	}
	e.Wait()
	x = r.check(t, x.Id)
	if x.Status != svcv1.ExecutionStatus_EXECUTION_STATUS_COMPLETED || len(r.src.trash) != 10 || x.Completed != 10 {
		t.Fatalf("execution %v, %d completed, %d trashed", x.Status, x.Completed, len(r.src.trash))
	}
}

// TestUndoUntrashesWhereTheProviderCannotWrite: a restore object with both a vault copy and the
// trash's result id, at a provider that can untrash but not write, is untrashed rather than
// failed "unsupported" (finding 8).
func TestUndoUntrashesWhereTheProviderCannotWrite(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := openHostile(t, providers.Config{"dir": dir, "objects": "2"})
	id := hostile.ObjectID(nil, 1)
	tr, _ := providers.AsTrasher(p)
	res, err := tr.Trash(context.Background(), providers.ActionRequest{SourceRef: hostile.Source, ObjectID: id, ExpectedVersion: "v1"})
	if err != nil {
		t.Fatal(err)
	}
	_, by, _ := hostileRun(t, p, 0, func(pl *svcv1.Plan) {
		pl.Intent = svcv1.PlanIntent_PLAN_INTENT_RESTORE
		pl.Objects = []*svcv1.PlanObject{{AssetId: "ast_001", SourceId: "src_1", Provider: svcv1.Provider_PROVIDER_SIMULATED, ProviderObjectId: id,
			StorageClass: svcv1.StorageClass_STORAGE_CLASS_PRESERVE, Actions: []svcv1.PlanAction{svcv1.PlanAction_PLAN_ACTION_RESTORE},
			ExpectedVersion: proto.String(execute.UntrashVersion(res.ResultID)), ExpectedSha256: proto.String(contentSHA(id)),
			ExpectedSizeBytes: int64(len(hostile.Content(id)))}}
	})
	ts := by["ast_001"]
	if last := ts[len(ts)-1]; last.To != svcv1.StepState_STEP_STATE_RESTORED || last.Step != "untrash" {
		t.Fatalf("restore ended %v at step %s (%s), want restored by untrash", last.To, last.Step, last.Error)
	}
	if got := hostile.Trashed(dir, 2); len(got) != 0 {
		t.Fatalf("still in the trash: %v", got)
	}
}

// TestExecutionEndsWhateverThePluginDoes: a plugin that never answers a fetch, or freezes its
// whole process, fails its assets within the call deadlines and their retries; the execution
// ends with its receipt (issue 27: "an execution can always reach a terminal state").
func TestExecutionEndsWhateverThePluginDoes(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"hang_fetch", "freeze_fetch"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			pl := plugin.NewPlugin(providers.Simulated, plugin.Command(os.Args[0], "hostile-plugin"), &plugin.Options{CallTimeout: 300 * time.Millisecond})
			t.Cleanup(func() { pl.Close() })
			p, err := pl.Open(context.Background(), providers.Config{"mode": mode, "dir": dir, "objects": "2"})
			if err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			x, by, _ := hostileRun(t, p, 2, nil)
			for asset, ts := range by {
				if last := ts[len(ts)-1]; last.To != svcv1.StepState_STEP_STATE_FAILED {
					t.Errorf("%s ended %v (%s), want failed", asset, last.To, last.Error)
				}
			}
			if got := hostile.Trashed(dir, 2); len(got) != 0 {
				t.Errorf("trashed %v", got)
			}
			t.Logf("execution %v after %s", x.Status, time.Since(start).Round(time.Millisecond))
		})
	}
}

// TestExportOfObjectsNamedLikeTemporaries (finding 7, through the plugin boundary): objects a
// plugin names like svc's own temporary files (".svc-write-<hex>.tmp") are exported to a local
// folder (itself behind a plugin): the folder refuses the name, so the assets fail and no
// receipt claims a copy that the next write's sweep would delete; a later write into the
// folder removes nothing.
func TestExportOfObjectsNamedLikeTemporaries(t *testing.T) {
	t.Parallel()
	const n = 3
	src := openHostile(t, providers.Config{"mode": "temp_names", "objects": strconv.Itoa(n)})
	out := t.TempDir()
	lp := plugin.NewPlugin(providers.VendorDLocal, plugin.Command(os.Args[0], "local-plugin"), &plugin.Options{CallTimeout: 10 * time.Second})
	t.Cleanup(func() { lp.Close() })
	dst, err := lp.Open(context.Background(), providers.Config{"root": out})
	if err != nil {
		t.Fatal(err)
	}
	cfg := providers.Config{"mode": "temp_names"}
	x, by, _ := hostileRunWith(t, hostileSources{p: src, dst: dst}, n, func(pl *svcv1.Plan) {
		pl.Intent = svcv1.PlanIntent_PLAN_INTENT_EXPORT
		pl.PreservationRequired = false
		pl.Destination = &svcv1.Destination{DestinationId: "dst_1", Provider: svcv1.Provider_PROVIDER_VENDOR_D_LOCAL, Label: "folder",
			PathTemplate: proto.String("{name}")}
		for i, o := range pl.Objects {
			id := hostile.ObjectID(cfg, i)
			o.ProviderObjectId, o.ExpectedSha256 = id, proto.String(contentSHA(id))
			o.Actions, o.PreservationElected = []svcv1.PlanAction{svcv1.PlanAction_PLAN_ACTION_COPY}, false
		}
	})
	for asset, ts := range by {
		last := ts[len(ts)-1]
		if reached(ts, svcv1.StepState_STEP_STATE_RESTORED) || last.To != svcv1.StepState_STEP_STATE_FAILED || !strings.Contains(last.Error, "reserved") {
			t.Errorf("%s ended %v (%s), want failed: the name is reserved", asset, last.To, last.Error)
		}
	}
	if x.Failed != n || x.BytesTransferred != 0 {
		t.Errorf("execution: %d failed, %d bytes transferred", x.Failed, x.BytesTransferred)
	}
	// A write into the same folder sweeps leftovers; nothing of the export is there to lose.
	w, _ := providers.AsWriter(dst)
	if _, err := w.Write(context.Background(), providers.WriteRequest{Path: "after.txt", SizeBytes: 2}, strings.NewReader("ok")); err != nil {
		t.Fatal(err)
	}
	left, _ := filepath.Glob(filepath.Join(out, ".svc-write-*"))
	if len(left) != 0 {
		t.Errorf("left in the folder: %v", left)
	}
}
