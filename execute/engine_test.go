package execute_test

import (
	"context"
	"io"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"pgregory.net/rapid"

	"svc.dev/svc/execute"
	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/plan"
)

// authorizedPlan is a plan over the fake source: preserve and trash every object.
func authorizedPlan(t interface{ Fatal(...any) }, src *fakeSource, n int) *svcv1.Plan {
	p := &svcv1.Plan{PlanId: "pln_01JD0000000000000000000000", PlanVersion: "1", Actor: &svcv1.Actor{Type: 1, PrincipalId: "usr_1"},
		Intent: svcv1.PlanIntent_PLAN_INTENT_SVC, Projection: &svcv1.Projection{}, PreservationRequired: true,
		State: svcv1.PlanState_PLAN_STATE_AUTHORIZED}
	for i := range n {
		id := "obj-" + pad(i)
		p.Objects = append(p.Objects, &svcv1.PlanObject{AssetId: "ast_" + pad(i), SourceId: "src_1", Provider: svcv1.Provider_PROVIDER_VENDOR_D_LOCAL,
			ProviderObjectId: id, ExpectedVersion: proto.String("v1"), ExpectedSizeBytes: int64(len(src.content[id])),
			Actions: []svcv1.PlanAction{svcv1.PlanAction_PLAN_ACTION_PRESERVE, svcv1.PlanAction_PLAN_ACTION_TRASH}, PreservationElected: true})
	}
	h, err := plan.Hash(p)
	if err != nil {
		t.Fatal(err)
	}
	p.Hash = h
	p.Authorization = &svcv1.PlanAuthorization{PlanHashAtAuthorization: h}
	return p
}

func pad(i int) string {
	return string(rune('0'+i/100)) + string(rune('0'+i/10%10)) + string(rune('0'+i%10))
}

type rig struct {
	store  *memStore
	src    *fakeSource
	vault  *memVault
	finish *countingFinisher
	plan   *svcv1.Plan
	shas   map[string]string // original content hashes by object id
	batch  *batchSource      // set when the source trashes in batches
}

func newRig(t interface{ Fatal(...any) }, n int) *rig {
	r := &rig{store: newMemStore(), src: newFakeSource(n), finish: &countingFinisher{}, shas: map[string]string{}}
	r.vault = &memVault{blobs: map[string][]byte{}, store: r.store}
	r.src.store = r.store
	r.plan = authorizedPlan(t, r.src, n)
	r.store.plans[r.plan.PlanId] = r.plan
	for id := range r.src.content {
		r.shas[id] = r.src.sha(id)
	}
	return r
}

func (r *rig) engine() *execute.Engine {
	return execute.New(r.store, fakeSources{src: r.src, batch: r.batch}, r.vault, r.finish, execute.Options{Concurrency: 4, Backoff: time.Millisecond})
}

// check asserts the guarantee: every trashed object was trashed once and has a committed vault
// copy whose SHA-256 matches the original content; the execution finished with a receipt.
func (r *rig) check(t interface {
	Fatalf(string, ...any)
}, exeID string) *svcv1.Execution {
	x := r.store.executions[exeID]
	if x.GetFinishedAt() == nil || x.GetReceiptId() == "" {
		t.Fatalf("execution did not finish: %v", x)
	}
	if len(r.store.violations) > 0 {
		t.Fatalf("an ended execution was visible without its receipt: %v", r.store.violations)
	}
	if rc := r.finish.made[exeID]; x.GetReceiptId() != rc.ID || !x.GetFinishedAt().AsTime().Equal(rc.FinishedAt) {
		t.Fatalf("execution names receipt %s finished %v; the receipt made is %s finished %v",
			x.GetReceiptId(), x.GetFinishedAt().AsTime(), rc.ID, rc.FinishedAt)
	}
	for id, n := range r.src.trash {
		if n != 1 {
			t.Fatalf("%s trashed %d times", id, n)
		}
		if !r.vault.has(r.shas[id]) {
			t.Fatalf("%s trashed without a committed vault copy", id)
		}
	}
	return x
}

func TestExecuteHappyPath(t *testing.T) {
	r := newRig(t, 50)
	e := r.engine()
	x, err := e.Start(context.Background(), "t", r.plan.PlanId, "usr_1")
	if err != nil {
		t.Fatal(err)
	}
	e.Wait()
	x = r.check(t, x.Id)
	if x.Status != svcv1.ExecutionStatus_EXECUTION_STATUS_COMPLETED || x.Attempted != 50 || x.Completed != 50 || len(r.src.trash) != 50 {
		t.Fatalf("execution %v %d/%d, %d trashed", x.Status, x.Completed, x.Attempted, len(r.src.trash))
	}
	if x.BytesPreserved == 0 || x.BytesPreserved != x.BytesRemoved {
		t.Fatalf("bytes preserved %d removed %d", x.BytesPreserved, x.BytesRemoved)
	}
	if p := r.store.plans[r.plan.PlanId]; p.State != svcv1.PlanState_PLAN_STATE_EXECUTED {
		t.Fatalf("plan state %v", p.State)
	}
	if r.finish.calls != 1 {
		t.Fatalf("receipt made %d times", r.finish.calls)
	}
	// Every asset's steps run in order, ending in RECLAIM_PENDING.
	var last svcv1.StepState
	for _, s := range x.Steps {
		if s.AssetId == "ast_000" {
			last = s.GetToState()
		}
	}
	if last != svcv1.StepState_STEP_STATE_RECLAIM_PENDING {
		t.Fatalf("ast_000 ends in %v", last)
	}
	// A plan runs once.
	if _, err := e.Start(context.Background(), "t", r.plan.PlanId, "usr_1"); err == nil {
		t.Fatal("an executed plan started again")
	}
}

// batched makes the rig's source trash in batches.
func (r *rig) batched(wholeFail int) *batchSource {
	b := &batchSource{fakeSource: r.src, store: r.store, wholeFail: wholeFail}
	r.batch = b
	return b
}

func TestTrashInBatches(t *testing.T) {
	r := newRig(t, 200)
	b := r.batched(0)
	r.src.version["obj-007"] = "v2" // refused in its batch, the others go on
	e := execute.New(r.store, fakeSources{src: r.src, batch: b}, r.vault, r.finish, execute.Options{Concurrency: 64, Backoff: time.Millisecond})
	x, err := e.Start(context.Background(), "t", r.plan.PlanId, "usr_1")
	if err != nil {
		t.Fatal(err)
	}
	e.Wait()
	x = r.check(t, x.Id)
	if x.Completed != 199 || len(r.src.trash) != 199 {
		t.Fatalf("%v: %d completed, %d trashed, errors %v", x.Status, x.Completed, len(r.src.trash), x.Errors)
	}
	if _, ok := r.src.content["obj-007"]; !ok {
		t.Fatal("an object whose version moved was trashed")
	}
	if len(b.violations) > 0 {
		t.Fatal(b.violations)
	}
	if b.singles.Load() != 0 {
		t.Fatalf("%d trashes one at a time; want all in batches", b.singles.Load())
	}
	if len(b.sizes) >= 199 {
		t.Fatalf("%d batch calls for 199 trashes: nothing was batched (sizes %v)", len(b.sizes), b.sizes)
	}
}

// TestFetchInBatches: a source that fetches in batches gets its small objects in batch calls;
// a moved version and a missing object are judged on their own inside a batch, a deferred
// object and one whose fetch failed transiently in its batch are fetched again alone, and
// every other object is preserved from its batch and then trashed.
func TestFetchInBatches(t *testing.T) {
	r := newRig(t, 200)
	b := r.batched(0)
	b.deferAbove = 7*(10+190) - 1 // the 10 largest objects (7*(10+i) bytes) are deferred
	b.fetchDelay = 2 * time.Millisecond
	r.src.transient = 50 // and a few fetches fail transiently
	r.src.version["obj-007"] = "v2"
	delete(r.src.content, "obj-009")
	e := execute.New(r.store, fakeSources{src: r.src, batch: b}, r.vault, r.finish, execute.Options{Concurrency: 64, Backoff: time.Millisecond})
	x, err := e.Start(context.Background(), "t", r.plan.PlanId, "usr_1")
	if err != nil {
		t.Fatal(err)
	}
	e.Wait()
	x = r.check(t, x.Id)
	if x.Completed != 198 || len(r.src.trash) != 198 || x.Failed != 0 {
		t.Fatalf("%v: %d completed, %d failed, %d trashed, errors %v", x.Status, x.Completed, x.Failed, len(r.src.trash), x.Errors)
	}
	if _, ok := r.src.content["obj-007"]; !ok || r.vault.byAsset["ast_007"] != "" {
		t.Fatal("an object whose version moved was vaulted or trashed")
	}
	if d := b.deferred.Load(); d < 5 || d > 10 { // one may have failed transiently in its batch first
		t.Fatalf("%d objects deferred, want up to 10", d)
	}
	// Alone: the deferred ones and those whose fetch failed transiently in a batch.
	if s := b.fetchSingles.Load(); s < 10 || s > 10+int64(len(b.fetchSizes))+200/50+1 {
		t.Fatalf("%d fetches one at a time", s)
	}
	if len(b.fetchSizes) >= 100 {
		t.Fatalf("%d batch fetch calls for 200 objects: little was batched (sizes %v)", len(b.fetchSizes), b.fetchSizes)
	}
}

func TestExecuteRefusesUnauthorizedOrAlteredPlans(t *testing.T) {
	r := newRig(t, 3)
	r.store.plans[r.plan.PlanId].Objects[0].Actions = []svcv1.PlanAction{svcv1.PlanAction_PLAN_ACTION_TRASH}
	if _, err := r.engine().Start(context.Background(), "t", r.plan.PlanId, "usr_1"); err == nil {
		t.Fatal("a plan whose hash moved since authorization started")
	}
	r = newRig(t, 3)
	r.store.plans[r.plan.PlanId].State = svcv1.PlanState_PLAN_STATE_VALIDATED
	if _, err := r.engine().Start(context.Background(), "t", r.plan.PlanId, "usr_1"); err == nil {
		t.Fatal("a validated plan started")
	}
}

func TestVersionChangeAndTransientErrors(t *testing.T) {
	r := newRig(t, 30)
	r.src.transient = 7
	r.src.version["obj-005"] = "v2" // changed before the run: skipped at fetch
	e := r.engine()
	x, err := e.Start(context.Background(), "t", r.plan.PlanId, "usr_1")
	if err != nil {
		t.Fatal(err)
	}
	e.Wait()
	x = r.check(t, x.Id)
	if x.Status != svcv1.ExecutionStatus_EXECUTION_STATUS_PARTIALLY_COMPLETED || x.Completed != 29 || x.Attempted != 29 || x.Failed != 0 {
		t.Fatalf("status %v completed %d failed %d errors %v", x.Status, x.Completed, x.Failed, x.Errors)
	}
	if _, ok := r.src.content["obj-005"]; !ok {
		t.Fatal("an object whose version moved was trashed")
	}
	if p := r.store.plans[r.plan.PlanId]; p.State != svcv1.PlanState_PLAN_STATE_PARTIALLY_EXECUTED {
		t.Fatalf("plan state %v", p.State)
	}
}

func TestCancel(t *testing.T) {
	r := newRig(t, 200)
	e := execute.New(r.store, fakeSources{src: r.src}, &slowVault{memVault: r.vault}, r.finish, execute.Options{Concurrency: 1})
	x, err := e.Start(context.Background(), "t", r.plan.PlanId, "usr_1")
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Millisecond)
	if err := e.Cancel(context.Background(), "t", x.Id); err != nil {
		t.Fatal(err)
	}
	e.Wait()
	x = r.check(t, x.Id)
	if x.Status != svcv1.ExecutionStatus_EXECUTION_STATUS_CANCELLED || x.Completed == 200 || r.finish.calls != 1 {
		t.Fatalf("status %v completed %d receipts %d", x.Status, x.Completed, r.finish.calls)
	}
}

type slowVault struct{ *memVault }

func (v *slowVault) Store(ctx context.Context, tenant string, a execute.Asset, body io.Reader, verifying func() error) (execute.VaultRef, error) {
	time.Sleep(2 * time.Millisecond)
	return v.memVault.Store(ctx, tenant, a, body, verifying)
}

// The guarantee under crashes: the process dies after any number of durable journal writes;
// a new engine resumes from the journal; in the end every trashed object has its verified vault
// copy, none is trashed twice, and the execution finishes with one receipt.
func TestCrashAtAnyJournalWrite(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		r := newRig(rt, 20)
		// Transient failures every 3rd to 9th call (or none): retries always get through, so
		// no asset may end failed.
		if n := rapid.IntRange(2, 9).Draw(rt, "transient"); n > 2 {
			r.src.transient = n
		}
		if rapid.Bool().Draw(rt, "batched") {
			r.batched(rapid.IntRange(0, 3).Draw(rt, "wholeFail"))
		}
		crashes := rapid.SliceOfN(rapid.IntRange(1, 150), 1, 4).Draw(rt, "crashes")
		exeID := runWithCrashes(rt, r.store, r.plan.PlanId, crashes, r.engine)
		got := r.check(rt, exeID)
		if got.Failed != 0 || got.Completed != 20 || got.Status != svcv1.ExecutionStatus_EXECUTION_STATUS_COMPLETED {
			rt.Fatalf("after crashes: %v completed %d failed %d errors %v", got.Status, got.Completed, got.Failed, got.Errors)
		}
		if got.Attempted+int64(countSkipped(got)) != 20 || got.Completed+got.Failed > got.Attempted {
			rt.Fatalf("%d completed, %d failed of 20", got.Completed, got.Failed)
		}
	})
}

// runWithCrashes starts the plan and crashes the store after each number of further durable
// journal writes in crashes, restarting a fresh engine (from newEngine) after each; it
// returns the execution id once the last engine is done.
func runWithCrashes(t interface{ Fatal(...any) }, store *memStore, planID string, crashes []int, newEngine func() *execute.Engine) string {
	e := newEngine()
	x, err := e.Start(context.Background(), "t", planID, "usr_1")
	if err != nil {
		t.Fatal(err)
	}
	store.mu.Lock()
	store.crashAfter = store.records + crashes[0]
	store.mu.Unlock()
	for i := range crashes {
		e.Wait()
		// Restart: what was durable stays; the next crash point, if any, is armed.
		store.mu.Lock()
		store.crashed.Store(false)
		store.crashAfter = 0
		if i+1 < len(crashes) {
			store.crashAfter = store.records + crashes[i+1]
		}
		store.mu.Unlock()
		e = newEngine()
		if err := e.Resume(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	e.Wait()
	return x.Id
}

func countSkipped(x *svcv1.Execution) int {
	last := map[string]svcv1.StepState{}
	for _, s := range x.Steps {
		last[s.AssetId] = s.GetToState()
	}
	n := 0
	for _, s := range last {
		if s == svcv1.StepState_STEP_STATE_SKIPPED {
			n++
		}
	}
	return n
}

// A crash after the receipt was made but before the execution recorded its end: the execution
// is still running (never ended without a receipt), and resuming ends it with the same receipt
// and the receipt's finishedAt.
func TestCrashBetweenReceiptAndEnd(t *testing.T) {
	r := newRig(t, 10)
	r.store.crashEnd = 1
	e := r.engine()
	x, err := e.Start(context.Background(), "t", r.plan.PlanId, "usr_1")
	if err != nil {
		t.Fatal(err)
	}
	e.Wait()
	if got := r.store.executions[x.Id]; got.GetStatus() != svcv1.ExecutionStatus_EXECUTION_STATUS_RUNNING || got.ReceiptId != nil || got.FinishedAt != nil {
		t.Fatalf("after the crash: %v receipt %v finished %v", got.GetStatus(), got.ReceiptId, got.FinishedAt)
	}
	first := r.finish.made[x.Id]
	r.store.crashed.Store(false)
	e = r.engine()
	if err := e.Resume(context.Background()); err != nil {
		t.Fatal(err)
	}
	e.Wait()
	got := r.check(t, x.Id)
	if got.GetReceiptId() != first.ID || r.finish.calls != 2 || r.store.ends != 1 {
		t.Fatalf("receipt %s, first made %s; Finish called %d times, ended %d times", got.GetReceiptId(), first.ID, r.finish.calls, r.store.ends)
	}
	if got.Status != svcv1.ExecutionStatus_EXECUTION_STATUS_COMPLETED || got.Completed != 10 {
		t.Fatalf("resumed to %v, %d completed", got.Status, got.Completed)
	}
}
