package svc_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"svc.dev/svc"
	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/storage"
)

// An Instance opened as a replica runs its executions under leases from its store (here
// bbolt's, the one process's): the execution completes, its lease is released at the end, and
// the replica says who it is.
func TestReplicaRunsUnderLeases(t *testing.T) {
	ctx := context.Background()
	sv, err := svc.Open(ctx, t.TempDir(), &svc.Options{Replica: &svc.Replica{Holder: "replica-1", LeaseTTL: time.Second, RenewEvery: 50 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	defer sv.Close()
	if r := sv.Replica(); r == nil || r.Holder != "replica-1" || sv.Leases() == nil {
		t.Fatalf("replica %+v, leases %v", r, sv.Leases())
	}
	root, _ := folder(t, 20)
	_, x := rescue(ctx, t, sv, root, true)
	if x.GetStatus() != svcv1.ExecutionStatus_EXECUTION_STATUS_COMPLETED || x.GetCompleted() != 20 || x.GetReceiptId() == "" {
		t.Fatalf("execution %v, %d completed, receipt %q", x.GetStatus(), x.GetCompleted(), x.GetReceiptId())
	}
	// The lease is released when the execution's run ends (just after Wait sees it ended):
	// another holder takes it then.
	for deadline := time.Now().Add(5 * time.Second); sv.RunningExecutions() > 0 && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	tenant := svc.DefaultTenant.String()
	if _, err := sv.Leases().Claim(ctx, "execution:"+tenant+"/"+x.Id, "replica-2", time.Minute); err != nil {
		t.Fatalf("the execution's lease after its end: %v", err)
	}
	// While another holder has it, this replica does not run it (a resume finds nothing to do
	// anyway: it ended).
	if err := sv.Resume(ctx); err != nil {
		t.Fatal(err)
	}
}

// A replica needs a store that hands out leases.
func TestReplicaNeedsLeases(t *testing.T) {
	dir := t.TempDir()
	st, err := svc.OpenStore(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	_, err = svc.Open(context.Background(), dir, &svc.Options{Store: noLeases{st}, MasterKey: make([]byte, 32), Replica: &svc.Replica{}})
	if err == nil || !strings.Contains(err.Error(), "leases") {
		t.Fatalf("a replica on a store without leases: %v", err)
	}
	if _, ok := storage.Store(noLeases{st}).(storage.Leaser); ok {
		t.Fatal(errors.New("the wrapper still hands out leases"))
	}
}

// noLeases is a store without the Leaser capability.
type noLeases struct{ storage.Store }
