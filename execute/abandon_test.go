package execute_test

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"svc.dev/svc/execute"
	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/providers"
)

// refusingFinisher fails as a receipt builder or signer can, for reasons no provider caused:
// it refuses every receipt (refuse nil: the signing key is unavailable, say), or any receipt
// holding an object refuse picks (a field the builder rejects). crashFirst makes its first
// call crash the store instead, as a process dying during the receipt would.
type refusingFinisher struct {
	countingFinisher
	refuse     func(*svcv1.PlanObject) bool
	crashFirst *memStore

	mu      sync.Mutex
	refused int
	objects []int // objects given to each call that made a receipt
}

func (f *refusingFinisher) Finish(ctx context.Context, tenant string, x *svcv1.Execution, p *svcv1.Plan, objects iter.Seq2[[]*svcv1.PlanObject, error],
	journal func(func(execute.Transition) error) error) (execute.Receipt, error) {
	f.mu.Lock()
	if m := f.crashFirst; m != nil {
		f.crashFirst = nil
		f.mu.Unlock()
		m.crashed.Store(true)
		return execute.Receipt{}, errCrashed
	}
	f.mu.Unlock()
	n := 0
	for objs, err := range objects {
		if err != nil {
			return execute.Receipt{}, err
		}
		for _, o := range objs {
			if f.refuse != nil && f.refuse(o) {
				f.mu.Lock()
				f.refused++
				f.mu.Unlock()
				return execute.Receipt{}, fmt.Errorf("invalid receipt input: objects[%d].bytes: out of range", n)
			}
			n++
		}
	}
	if f.refuse == nil {
		f.mu.Lock()
		f.refused++
		f.mu.Unlock()
		return execute.Receipt{}, errors.New("sign receipt: the signing key is unavailable")
	}
	f.mu.Lock()
	f.objects = append(f.objects, n)
	f.mu.Unlock()
	return f.countingFinisher.Finish(ctx, tenant, x, p, objects, journal)
}

func (r *rig) engineWith(f execute.Finisher) *execute.Engine {
	return execute.New(r.store, fakeSources{src: r.src, batch: r.batch}, r.vault, f, execute.Options{Concurrency: 4, Backoff: time.Millisecond})
}

func hasPrefix(errs []string, prefix string) bool {
	return slices.ContainsFunc(errs, func(s string) bool { return strings.HasPrefix(s, prefix) })
}

// checkAbandoned asserts that an execution ended failed, with its error recorded, and without
// a receipt (noReceipt) or with one; that nothing was trashed without its vault copy; and that
// a restart resumes nothing.
func (r *rig) checkAbandoned(t *testing.T, exeID string, noReceipt bool, f execute.Finisher) *svcv1.Execution {
	t.Helper()
	x := r.store.executions[exeID]
	if x.GetStatus() != svcv1.ExecutionStatus_EXECUTION_STATUS_FAILED || x.GetFinishedAt() == nil {
		t.Fatalf("execution %v, finished %v, errors %q", x.GetStatus(), x.GetFinishedAt(), x.GetErrors())
	}
	if len(r.store.violations) > 0 {
		t.Fatalf("an ended execution was visible without its receipt: %v", r.store.violations)
	}
	if !hasPrefix(x.GetErrors(), "execution failed: receipt: ") {
		t.Fatalf("the failure is not recorded: %q", x.GetErrors())
	}
	if got := hasPrefix(x.GetErrors(), "no receipt: ") || x.GetReceiptId() == ""; got != noReceipt {
		t.Fatalf("receipt %q, errors %q; want no receipt: %v", x.GetReceiptId(), x.GetErrors(), noReceipt)
	}
	if p := r.store.plans[r.plan.PlanId]; p.State != svcv1.PlanState_PLAN_STATE_PARTIALLY_EXECUTED {
		t.Fatalf("plan state %v", p.State)
	}
	for id, n := range r.src.trash {
		if n != 1 || !r.vault.has(r.shas[id]) {
			t.Fatalf("%s trashed %d times, vault copy %v", id, n, r.vault.has(r.shas[id]))
		}
	}
	// A restart finds nothing to resume, and a cancel finds it ended.
	if u, _ := r.store.Unfinished(context.Background()); len(u) != 0 {
		t.Fatalf("unfinished after the end: %v", u)
	}
	e := r.engineWith(f)
	if err := e.Resume(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := e.Running(); n != 0 {
		t.Fatalf("a restart resumed %d executions", n)
	}
	if err := e.Cancel(context.Background(), "t", exeID); !errors.Is(err, execute.ErrFinished) {
		t.Fatalf("cancel after the end: %v, want ErrFinished", err)
	}
	return x
}

// TestReceiptThatCannotBeMadeEndsTheExecution: a receipt that cannot be made at all (the
// signer fails) no longer leaves the execution running for ever: it ends failed, saying why,
// and no restart runs it again (issue 27, finding 1).
func TestReceiptThatCannotBeMadeEndsTheExecution(t *testing.T) {
	r := newRig(t, 10)
	f := &refusingFinisher{}
	e := r.engineWith(f)
	x, err := e.Start(context.Background(), "t", r.plan.PlanId, "usr_1")
	if err != nil {
		t.Fatal(err)
	}
	e.Wait()
	got := r.checkAbandoned(t, x.Id, true, f)
	if len(r.src.trash) != 10 || got.Completed != 10 {
		t.Fatalf("%d trashed, %d completed: the work before the receipt was not kept", len(r.src.trash), got.Completed)
	}
	// Three tries of the full receipt, three of the receipt of what was done.
	if f.refused != 6 {
		t.Fatalf("receipt tried %d times, want 6", f.refused)
	}
	t.Logf("errors: %q", got.Errors)
}

// TestReceiptOfWhatWasDone: the full receipt fails on an object the execution never touched
// (here, one gone from the source); the execution ends failed with a receipt of the objects it
// acted on.
func TestReceiptOfWhatWasDone(t *testing.T) {
	r := newRig(t, 10)
	delete(r.src.content, "obj-007")
	f := &refusingFinisher{refuse: func(o *svcv1.PlanObject) bool { return o.GetProviderObjectId() == "obj-007" }}
	e := r.engineWith(f)
	x, err := e.Start(context.Background(), "t", r.plan.PlanId, "usr_1")
	if err != nil {
		t.Fatal(err)
	}
	e.Wait()
	got := r.checkAbandoned(t, x.Id, false, f)
	if rc := f.made[x.Id]; got.GetReceiptId() != rc.ID || !got.GetFinishedAt().AsTime().Equal(rc.FinishedAt) {
		t.Fatalf("execution names receipt %s, the receipt made is %s", got.GetReceiptId(), rc.ID)
	}
	if !slices.Equal(f.objects, []int{9}) || !hasPrefix(got.Errors, "receipt: lists only the 9 objects") {
		t.Fatalf("receipts made of %v objects; errors %q", f.objects, got.Errors)
	}
	if s := f.last.GetStatus(); s != svcv1.ExecutionStatus_EXECUTION_STATUS_FAILED || !hasPrefix(f.last.GetErrors(), "execution failed: ") {
		t.Fatalf("the receipt was made for a %v execution with errors %q", s, f.last.GetErrors())
	}
}

// TestCrashResumeMeetsAReceiptFailure: the process dies during the execution, and the engine
// that resumes it cannot make its receipt: the execution still ends, once. A crash after the
// failure was recorded but before the end resumes straight into the end, without running the
// execution's work again.
func TestCrashResumeMeetsAReceiptFailure(t *testing.T) {
	for _, crashes := range [][]int{{5}, {12, 7}, {30}} {
		t.Run(fmt.Sprint(crashes), func(t *testing.T) {
			r := newRig(t, 20)
			f := &refusingFinisher{}
			exeID := runWithCrashes(t, r.store, r.plan.PlanId, crashes, func() *execute.Engine { return r.engineWith(f) })
			got := r.checkAbandoned(t, exeID, true, f)
			if len(r.src.trash) != 20 {
				t.Fatalf("%d trashed of 20", len(r.src.trash))
			}
			t.Logf("%v completed %d", got.Status, got.Completed)
		})
	}
	t.Run("between the failure and the end", func(t *testing.T) {
		r := newRig(t, 10)
		r.store.crashEnd = 1
		f := &refusingFinisher{}
		e := r.engineWith(f)
		x, err := e.Start(context.Background(), "t", r.plan.PlanId, "usr_1")
		if err != nil {
			t.Fatal(err)
		}
		e.Wait()
		if got := r.store.executions[x.Id]; got.GetStatus() != svcv1.ExecutionStatus_EXECUTION_STATUS_RUNNING || !hasPrefix(got.Errors, "execution failed: ") {
			t.Fatalf("after the crash: %v, errors %q", got.GetStatus(), got.GetErrors())
		}
		r.store.crashed.Store(false)
		calls, refused := r.src.calls, f.refused
		e = r.engineWith(f)
		if err := e.Resume(context.Background()); err != nil {
			t.Fatal(err)
		}
		e.Wait()
		r.checkAbandoned(t, x.Id, true, f)
		if r.src.calls != calls || f.refused-refused != 3 {
			t.Fatalf("the resume called the source %d times and tried %d receipts; want only the receipt of what was done (3 tries)",
				r.src.calls-calls, f.refused-refused)
		}
	})
}

// TestCancelEndsAnExecutionLeftRunning: an execution an earlier process left running (it died
// making the receipt) is ended by a cancel, even though its receipt still cannot be made and no
// restart resumed it.
func TestCancelEndsAnExecutionLeftRunning(t *testing.T) {
	r := newRig(t, 10)
	f := &refusingFinisher{crashFirst: r.store}
	e := r.engineWith(f)
	x, err := e.Start(context.Background(), "t", r.plan.PlanId, "usr_1")
	if err != nil {
		t.Fatal(err)
	}
	e.Wait()
	if got := r.store.executions[x.Id]; got.GetStatus() != svcv1.ExecutionStatus_EXECUTION_STATUS_RUNNING {
		t.Fatalf("after the crash: %v", got.GetStatus())
	}
	r.store.crashed.Store(false)
	e = r.engineWith(f) // no Resume: the execution is left running
	if err := e.Cancel(context.Background(), "t", x.Id); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { e.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the cancelled execution did not end")
	}
	got := r.checkAbandoned(t, x.Id, true, f)
	if !slices.Contains(got.Errors, "cancelled") {
		t.Fatalf("errors %q", got.Errors)
	}
}

// blockingSource is a fake source whose fetches wait until their context ends, as a provider
// that froze would (behind the plugin host, which answers when the caller's context ends).
type blockingSource struct {
	*fakeSource
	entered chan struct{}
}

func (b *blockingSource) Fetch(ctx context.Context, req providers.FetchRequest) (*providers.Content, error) {
	select {
	case b.entered <- struct{}{}:
	default:
	}
	<-ctx.Done()
	return nil, fmt.Errorf("fetch: %w", ctx.Err())
}

type oneSource struct{ p providers.Provider }

func (s oneSource) Source(context.Context, string, string) (providers.Provider, string, error) {
	return s.p, "ref", nil
}

// TestShutdownCutsFrozenCallsShort: a shutdown does not wait for provider calls that never
// answer (the steps in flight are redone on resume, as after a crash): it returns at once, no
// asset is failed or skipped for it, and the next start resumes the execution to its end
// (issue 27, finding 2: SIGTERM must end the host within its drain whatever the plugins do).
func TestShutdownCutsFrozenCallsShort(t *testing.T) {
	r := newRig(t, 10)
	frozen := &blockingSource{fakeSource: r.src, entered: make(chan struct{}, 1)}
	e := execute.New(r.store, oneSource{frozen}, r.vault, r.finish, execute.Options{Concurrency: 4, Backoff: time.Millisecond})
	x, err := e.Start(context.Background(), "t", r.plan.PlanId, "usr_1")
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-frozen.entered:
	case <-time.After(10 * time.Second):
		t.Fatal("no fetch started")
	}
	start := time.Now()
	done := make(chan struct{})
	go func() { e.Shutdown(); close(done) }()
	select {
	case <-done:
		t.Logf("shutdown took %s with frozen fetches in flight", time.Since(start).Round(time.Millisecond))
	case <-time.After(5 * time.Second):
		t.Fatal("the shutdown waits on frozen provider calls")
	}
	got := r.store.executions[x.Id]
	if got.GetStatus() != svcv1.ExecutionStatus_EXECUTION_STATUS_RUNNING || got.GetFailed() != 0 {
		t.Fatalf("after the shutdown: %v, %d failed", got.GetStatus(), got.GetFailed())
	}
	js, _ := r.store.Journal(context.Background(), "t", x.Id)
	for _, tr := range js {
		if tr.To == svcv1.StepState_STEP_STATE_FAILED || tr.To == svcv1.StepState_STEP_STATE_SKIPPED {
			t.Fatalf("the shutdown %s %s: %s", tr.Step, tr.AssetID, tr.Error)
		}
	}
	e = r.engine()
	if err := e.Resume(context.Background()); err != nil {
		t.Fatal(err)
	}
	e.Wait()
	if got := r.check(t, x.Id); got.Status != svcv1.ExecutionStatus_EXECUTION_STATUS_COMPLETED || got.Completed != 10 {
		t.Fatalf("resumed to %v, %d completed", got.Status, got.Completed)
	}
}

// TestShutdownAfterACancel: a cancel lets the steps in flight finish, but a shutdown that
// follows still cuts them short (the execution's context keeps the cancel as its cause, so
// the shutdown has its own); the next start ends the execution cancelled.
func TestShutdownAfterACancel(t *testing.T) {
	r := newRig(t, 10)
	frozen := &blockingSource{fakeSource: r.src, entered: make(chan struct{}, 1)}
	e := execute.New(r.store, oneSource{frozen}, r.vault, r.finish, execute.Options{Concurrency: 4, Backoff: time.Millisecond})
	x, err := e.Start(context.Background(), "t", r.plan.PlanId, "usr_1")
	if err != nil {
		t.Fatal(err)
	}
	<-frozen.entered
	if err := e.Cancel(context.Background(), "t", x.Id); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { e.Shutdown(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("a shutdown after a cancel waits on frozen provider calls")
	}
	if got := r.store.executions[x.Id]; got.GetStatus() != svcv1.ExecutionStatus_EXECUTION_STATUS_RUNNING {
		t.Fatalf("after the shutdown: %v", got.GetStatus())
	}
	e = r.engine()
	if err := e.Resume(context.Background()); err != nil {
		t.Fatal(err)
	}
	e.Wait()
	if got := r.check(t, x.Id); got.Status != svcv1.ExecutionStatus_EXECUTION_STATUS_CANCELLED {
		t.Fatalf("resumed to %v", got.Status)
	}
}
