package svc_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"svc.dev/svc"
	"svc.dev/svc/execute"
	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/internal/pgtest"
	"svc.dev/svc/platform"
	"svc.dev/svc/providers"
	"svc.dev/svc/providers/local"
	"svc.dev/svc/storage/postgres"
)

// slowFetch is a folder whose fetches, once armed, take half a second each: an execution over
// it runs for a while.
type slowFetch struct {
	providers.Provider
	armed *atomic.Bool
}

func (p slowFetch) Fetch(ctx context.Context, req providers.FetchRequest) (*providers.Content, error) {
	if p.armed.Load() {
		select {
		case <-time.After(500 * time.Millisecond):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return p.Provider.Fetch(ctx, req)
}

// An account's erasure on one replica fences the tenant on every replica (issue 26's weak
// point): an execution of the tenant that another replica runs is cancelled through the store
// and waited for before the erasure goes on, and once the deletion is due no replica starts
// one.
func TestErasureFencesEveryReplica(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dsn, dir := pgtest.Database(t), t.TempDir()
	armed := &atomic.Bool{}
	open := func(holder string) *svc.Instance {
		st, err := postgres.Open(ctx, dsn)
		if err != nil {
			t.Fatal(err)
		}
		reg := providers.NewRegistry()
		reg.Register(providers.InProcess(local.Description, func(ctx context.Context, cfg providers.Config) (providers.Provider, error) {
			p, err := local.New(ctx, cfg)
			return slowFetch{Provider: p, armed: armed}, err
		}))
		sv, err := svc.Open(ctx, dir, &svc.Options{Store: st, Providers: reg,
			Replica: &svc.Replica{Holder: holder, LeaseTTL: 2 * time.Second, RenewEvery: 100 * time.Millisecond}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { sv.Close(); st.Close() })
		return sv
	}
	a, b := open("replica-a"), open("replica-b")
	st, err := postgres.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	accounts := platform.NewAccounts(st, nil)
	u, _, err := accounts.SignUp(ctx, "erased@example.com", "a long enough password", nil, "en")
	if err != nil {
		t.Fatal(err)
	}
	tenant := platform.Tenant{Owner: u.ID, Mode: platform.ModeLive}.String()
	ta := a.Tenant(svc.Tenant{Owner: u.ID, Mode: svc.ModeLive})
	tb := b.Tenant(svc.Tenant{Owner: u.ID, Mode: svc.ModeLive})
	root, _ := folder(t, 40) // 40 half-second fetches: seconds of work
	src, err := ta.ConnectSource(ctx, svc.SourceSpec{Provider: providers.VendorDLocal, Config: providers.Config{"root": root}, Kind: "folder"})
	if err != nil {
		t.Fatal(err)
	}
	authorized := func() *svcv1.Plan {
		t.Helper()
		p, err := ta.BuildPlan(ctx, svc.PlanRequest{SourceIDs: []string{src.Id}, Intent: svcv1.PlanIntent_PLAN_INTENT_RESCUE})
		if err == nil {
			p, err = ta.AuthorizePlan(ctx, p.PlanId, p.Hash, nil)
		}
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	first, second := authorized(), authorized()
	armed.Store(true)
	x, err := ta.Execute(ctx, first.PlanId, nil)
	if err != nil {
		t.Fatal(err)
	}
	for {
		if x, err = ta.Execution(ctx, x.Id); err != nil {
			t.Fatal(err)
		}
		if x.GetStatus() == svcv1.ExecutionStatus_EXECUTION_STATUS_RUNNING { // replica A runs it
			break
		}
		time.Sleep(10 * time.Millisecond)
	}

	// The account's deletion comes due; replica B erases it, and first fences the tenant.
	if _, err := accounts.ScheduleDeletion(ctx, u.ID, "job_0000000000000000000000000A", time.Now().Add(-time.Second)); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	fctx, fcancel := context.WithTimeout(ctx, 30*time.Second)
	err = b.FenceCluster(fctx, tenant)
	fcancel()
	if err != nil {
		got, _ := ta.Execution(ctx, x.Id)
		t.Fatalf("%v (the execution: %v, errors %v, running on A: %d)", err, got.GetStatus(), got.GetErrors(), a.RunningExecutions())
	}
	t.Logf("replica B fenced the tenant in %v", time.Since(start).Round(time.Millisecond))
	got, err := ta.Execution(ctx, x.Id)
	if err != nil {
		t.Fatal(err)
	}
	if got.GetFinishedAt() == nil || got.GetStatus() != svcv1.ExecutionStatus_EXECUTION_STATUS_CANCELLED {
		t.Fatalf("after the fence the execution on replica A is %v (finished %v)", got.GetStatus(), got.GetFinishedAt() != nil)
	}
	armed.Store(false)
	for _, sc := range []*svc.Scope{ta, tb} {
		if _, err := sc.Execute(ctx, second.PlanId, nil); !errors.Is(err, execute.ErrFenced) {
			t.Fatalf("an execution started while the account's deletion is due: %v", err)
		}
	}
	// The user keeps the account after all (before the erasure ran): it runs again.
	if _, err := accounts.KeepAccount(ctx, u.ID, "job_0000000000000000000000000A"); err != nil {
		t.Fatal(err)
	}
	y, err := ta.Execute(ctx, second.PlanId, nil)
	if err == nil {
		y, err = ta.Wait(ctx, y.Id)
	}
	if err != nil || y.GetStatus() != svcv1.ExecutionStatus_EXECUTION_STATUS_COMPLETED {
		t.Fatalf("after the fence was released: %v, %v", y.GetStatus(), err)
	}
}
