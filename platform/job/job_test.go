package job_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/platform/job"
)

// memStore is a Store in memory that keeps every version of every job.
type memStore struct {
	mu      sync.Mutex
	jobs    map[string]*svcv1.Job
	history []*svcv1.Job
}

func newMemStore() *memStore { return &memStore{jobs: map[string]*svcv1.Job{}} }

func (m *memStore) Put(_ context.Context, tenant, id string, j *svcv1.Job) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.jobs[tenant+"/"+id] = proto.Clone(j).(*svcv1.Job)
	m.history = append(m.history, proto.Clone(j).(*svcv1.Job))
	return nil
}

func (m *memStore) Update(_ context.Context, tenant, id string, fn func(*svcv1.Job) error) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	j, ok := m.jobs[tenant+"/"+id]
	if !ok {
		return errors.New("not found")
	}
	c := proto.Clone(j).(*svcv1.Job)
	if err := fn(c); err != nil {
		return err
	}
	m.jobs[tenant+"/"+id] = c
	m.history = append(m.history, proto.Clone(c).(*svcv1.Job))
	return nil
}

func (m *memStore) get(tenant, id string) *svcv1.Job {
	m.mu.Lock()
	defer m.mu.Unlock()
	return proto.Clone(m.jobs[tenant+"/"+id]).(*svcv1.Job)
}

type events struct {
	mu    sync.Mutex
	types []string
}

func (e *events) JobEvent(_ context.Context, _, typ string, _ *svcv1.Job) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.types = append(e.types, typ)
}

func (e *events) list() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string(nil), e.types...)
}

// fakeClock advances by step on every read, so every progress report is stored.
func fakeClock(step time.Duration) func() time.Time {
	var mu sync.Mutex
	t := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	return func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		t = t.Add(step)
		return t
	}
}

func TestRunSucceedsWithMonotonicProgress(t *testing.T) {
	st, ev := newMemStore(), &events{}
	r := job.NewRunner(st, ev, &job.Options{Now: fakeClock(time.Second)})
	defer r.Close()
	j, err := r.Run(context.Background(), "live:usr_1", svcv1.JobKind_JOB_KIND_EXPORT, func(ctx context.Context, p *job.Progress) (map[string]any, error) {
		for _, n := range []int{10, 5, 40, 40, 120, 30} {
			p.Set(ctx, n)
		}
		return map[string]any{"size_bytes": 42}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if j.GetStatus() != svcv1.JobStatus_JOB_STATUS_SUCCEEDED || j.GetProgress() != 100 || j.GetFinishedAt() == nil {
		t.Fatalf("job = %v", j)
	}
	if got := j.GetResult().GetFields()["size_bytes"].GetNumberValue(); got != 42 {
		t.Errorf("result size_bytes = %v", got)
	}
	last := int32(-1)
	var seen []int32
	for _, h := range st.history {
		if h.GetProgress() < last {
			t.Fatalf("progress went back: %v", seen)
		}
		last = h.GetProgress()
		seen = append(seen, last)
	}
	if want := []int32{0, 0, 10, 40, 99, 100}; !equal(seen, want) {
		t.Errorf("stored progress %v, want %v", seen, want)
	}
	if got := ev.list(); !equal(got, []string{job.EventStarted, job.EventSucceeded}) {
		t.Errorf("events %v", got)
	}
}

func TestFailedJobShowsOnlyPublicErrors(t *testing.T) {
	st := newMemStore()
	r := job.NewRunner(st, nil, nil)
	defer r.Close()
	j, err := r.Run(context.Background(), "t", svcv1.JobKind_JOB_KIND_SCAN, func(context.Context, *job.Progress) (map[string]any, error) {
		return nil, errors.New("open /secret/path: permission denied")
	})
	if err == nil || j.GetStatus() != svcv1.JobStatus_JOB_STATUS_FAILED || j.GetError() != "the job failed; see the server log" {
		t.Fatalf("job %v, err %v", j, err)
	}
	j, _ = r.Run(context.Background(), "t", svcv1.JobKind_JOB_KIND_SCAN, func(context.Context, *job.Progress) (map[string]any, error) {
		return nil, &job.PublicError{Msg: "the vault holds no such object"}
	})
	if j.GetError() != "the vault holds no such object" {
		t.Errorf("error %q", j.GetError())
	}
	j, _ = r.Run(context.Background(), "t", svcv1.JobKind_JOB_KIND_SCAN, func(context.Context, *job.Progress) (map[string]any, error) {
		panic("boom")
	})
	if j.GetStatus() != svcv1.JobStatus_JOB_STATUS_FAILED {
		t.Errorf("a panicking job ended %v", j.GetStatus())
	}
}

func TestCancelQueuedAndRunning(t *testing.T) {
	st, ev := newMemStore(), &events{}
	r := job.NewRunner(st, ev, nil)
	defer r.Close()
	ctx := context.Background()

	q, err := r.Create(ctx, "t", svcv1.JobKind_JOB_KIND_DELETION)
	if err != nil {
		t.Fatal(err)
	}
	c, err := r.Cancel(ctx, "t", q.GetId())
	if err != nil || c.GetStatus() != svcv1.JobStatus_JOB_STATUS_CANCELLED {
		t.Fatalf("cancel queued: %v %v", c, err)
	}
	if _, err := r.Execute(ctx, "t", q.GetId(), nil); !errors.Is(err, job.ErrNotQueued) {
		t.Fatalf("a cancelled job ran: %v", err)
	}
	if _, err := r.Cancel(ctx, "t", q.GetId()); !errors.Is(err, job.ErrFinished) {
		t.Fatalf("cancel twice: %v", err)
	}

	started := make(chan struct{})
	j, err := r.Start(ctx, "t", svcv1.JobKind_JOB_KIND_EXPORT, func(ctx context.Context, p *job.Progress) (map[string]any, error) {
		close(started)
		<-ctx.Done()
		return nil, ctx.Err()
	})
	if err != nil {
		t.Fatal(err)
	}
	<-started
	if _, err := r.Cancel(ctx, "t", j.GetId()); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for st.get("t", j.GetId()).GetStatus() != svcv1.JobStatus_JOB_STATUS_CANCELLED {
		if time.Now().After(deadline) {
			t.Fatalf("running job not cancelled: %v", st.get("t", j.GetId()))
		}
		time.Sleep(10 * time.Millisecond)
	}
	if got := ev.list(); !equal(got, []string{job.EventCancelled, job.EventStarted, job.EventCancelled}) {
		t.Errorf("events %v", got)
	}
}

func TestInterrupted(t *testing.T) {
	st := newMemStore()
	r := job.NewRunner(st, nil, nil)
	defer r.Close()
	j := &svcv1.Job{Id: "job_1", Status: svcv1.JobStatus_JOB_STATUS_RUNNING}
	st.Put(context.Background(), "t", j.Id, j)
	if err := r.Interrupted(context.Background(), "t", j); err != nil {
		t.Fatal(err)
	}
	if got := st.get("t", "job_1"); got.GetStatus() != svcv1.JobStatus_JOB_STATUS_FAILED || got.GetError() == "" {
		t.Fatalf("%v", got)
	}
}

func equal[T comparable](a, b []T) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// CancelQueued cancels a queued job, and refuses one that started, in the write that checks.
func TestCancelQueuedRefusesAStartedJob(t *testing.T) {
	ctx := context.Background()
	st := newMemStore()
	r := job.NewRunner(st, nil, nil)
	defer r.Close()
	j, err := r.Create(ctx, "live:usr_1", svcv1.JobKind_JOB_KIND_DELETION)
	if err != nil {
		t.Fatal(err)
	}
	started, release := make(chan struct{}), make(chan struct{})
	go r.Execute(ctx, "live:usr_1", j.Id, func(ctx context.Context, _ *job.Progress) (map[string]any, error) {
		close(started)
		<-release
		return nil, nil
	})
	<-started
	if _, err := r.CancelQueued(ctx, "live:usr_1", j.Id); !errors.Is(err, job.ErrNotQueued) {
		t.Fatalf("cancelling a started job: %v", err)
	}
	close(release)
	q, _ := r.Create(ctx, "live:usr_1", svcv1.JobKind_JOB_KIND_DELETION)
	if c, err := r.CancelQueued(ctx, "live:usr_1", q.Id); err != nil || c.GetStatus() != svcv1.JobStatus_JOB_STATUS_CANCELLED {
		t.Fatalf("cancelling a queued job: %v %v", c, err)
	}
}
