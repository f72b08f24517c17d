package job_test

import (
	"context"
	"errors"
	"testing"
	"time"

	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/internal/leasetest"
	"svc.dev/svc/platform/job"
)

// Two runners sharing a store and leases: a job runs on the one that takes its lease; the
// other sees it is not an orphan while it runs, and an orphan once its runner's lease is gone,
// at which point that runner stops it and records it interrupted (failed), not cancelled.
func TestRunnersShareJobsThroughLeases(t *testing.T) {
	store, leases := newMemStore(), leasetest.New()
	a := job.NewRunner(store, nil, &job.Options{Leases: leases.Holder("a"), RenewEvery: 10 * time.Millisecond})
	b := job.NewRunner(store, nil, &job.Options{Leases: leases.Holder("b"), RenewEvery: 10 * time.Millisecond})
	ctx := context.Background()
	started := make(chan struct{})
	j, err := a.Start(ctx, "t", svcv1.JobKind_JOB_KIND_SCAN, func(ctx context.Context, _ *job.Progress) (map[string]any, error) {
		close(started)
		<-ctx.Done()
		return nil, ctx.Err()
	})
	if err != nil {
		t.Fatal(err)
	}
	<-started
	if _, err := b.Execute(ctx, "t", j.Id, nil); !errors.Is(err, job.ErrNotQueued) {
		t.Fatalf("b runs a job a runs: %v, want ErrNotQueued", err)
	}
	running := store.get("t", j.Id)
	if orphan, err := b.Orphan(ctx, "t", running); err != nil || orphan {
		t.Fatalf("a job running on a is an orphan to b: %v, %v", orphan, err)
	}
	leases.Expire("a") // a stops renewing: its lease expires
	a.Close()
	end := store.get("t", j.Id)
	if end.GetStatus() != svcv1.JobStatus_JOB_STATUS_FAILED || end.GetError() == "" {
		t.Fatalf("a job whose lease was lost ended %v (%q), want failed as interrupted", end.GetStatus(), end.GetError())
	}
	// A job left running by a runner that died is an orphan, and Interrupted fails it.
	k, err := b.Create(ctx, "t", svcv1.JobKind_JOB_KIND_EXPORT)
	if err != nil {
		t.Fatal(err)
	}
	store.Update(ctx, "t", k.Id, func(j *svcv1.Job) error { j.Status = svcv1.JobStatus_JOB_STATUS_RUNNING; return nil })
	if orphan, err := b.Orphan(ctx, "t", store.get("t", k.Id)); err != nil || !orphan {
		t.Fatalf("a job no runner holds: orphan %v, %v", orphan, err)
	}
	if err := b.Interrupted(ctx, "t", store.get("t", k.Id)); err != nil {
		t.Fatal(err)
	}
	if got := store.get("t", k.Id); got.GetStatus() != svcv1.JobStatus_JOB_STATUS_FAILED {
		t.Fatalf("orphan after Interrupted: %v", got.GetStatus())
	}
	b.Close()
}
