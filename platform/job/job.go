// Package job runs svc's long tasks (seed, scan, export, index, deletion, migration) as Jobs:
// a stored record a client can read, list and cancel, whose progress goes from 0 to 100 and
// never back, and whose start and end are announced as svc.job.* events.
//
// A Runner records a job before it runs, runs it with a context that CancelJob cancels, and
// records how it ended. Storage and events reach it through the small interfaces it declares
// (Store, Notifier).
package job

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/id"
	"svc.dev/svc/platform"
)

// Event types of a job's life; the catalogue is platform/event.
const (
	EventStarted   = "svc.job.started"
	EventSucceeded = "svc.job.succeeded"
	EventFailed    = "svc.job.failed"
	EventCancelled = "svc.job.cancelled"
)

// ErrFinished is returned when a job that has already ended is cancelled.
var ErrFinished = errors.New("job has finished")

// ErrFenced is returned when a job of a fenced tenant (one being erased) is created or run.
var ErrFenced = errors.New("the account is being deleted")

// ErrNotQueued is returned by Claim when the job is no longer queued (cancelled meanwhile).
var ErrNotQueued = errors.New("job is not queued")

// Store keeps job records by tenant and id.
type Store interface {
	Put(ctx context.Context, tenant, id string, j *svcv1.Job) error
	// Update applies fn to the stored job atomically; fn's error leaves it unchanged.
	Update(ctx context.Context, tenant, id string, fn func(*svcv1.Job) error) error
}

// Notifier announces a job's transitions (the svc.job.* events).
type Notifier interface {
	JobEvent(ctx context.Context, tenant, typ string, j *svcv1.Job)
}

// Leases hand each job to one runner at a time among runners sharing a store (replicas of a
// service on one database). A runner runs a job only while it holds the job's lease, renewed
// every RenewEvery; a job found running whose lease nobody holds was cut short by a runner
// that died (Orphan).
type Leases = platform.Leases

// Lease is a lease a runner holds.
type Lease = platform.Lease

// ErrTaken is returned (wrapped) by Leases.Take when another runner holds the lease.
var ErrTaken = platform.ErrLeaseTaken

// Func is a job's work. It reports progress through p and returns the job's result (nil for
// none). It must return promptly once ctx is cancelled.
type Func func(ctx context.Context, p *Progress) (map[string]any, error)

// Runner records and runs jobs.
type Runner struct {
	store  Store
	notify Notifier
	now    func() time.Time
	log    *slog.Logger
	leases Leases
	renew  time.Duration

	mu      sync.Mutex
	running map[string]context.CancelFunc // by tenant/id
	fenced  map[string]string             // tenants being erased: the one job that may run
	base    context.Context
	stop    context.CancelFunc
	wg      sync.WaitGroup
}

// Options configure a Runner; zero fields take defaults.
type Options struct {
	Now    func() time.Time // default time.Now
	Logger *slog.Logger     // default slog.Default()
	// Leases, when set, hand each job to one runner among replicas; nil: this runner is the
	// only one.
	Leases Leases
	// RenewEvery is how often a running job's lease is renewed (default 5 s).
	RenewEvery time.Duration
}

// NewRunner returns a runner over s that announces transitions to n (nil: none).
func NewRunner(s Store, n Notifier, opts *Options) *Runner {
	r := &Runner{store: s, notify: n, now: time.Now, log: slog.Default(), running: map[string]context.CancelFunc{}, fenced: map[string]string{},
		renew: 5 * time.Second}
	if opts != nil {
		r.leases = opts.Leases
		if opts.RenewEvery > 0 {
			r.renew = opts.RenewEvery
		}
		if opts.Now != nil {
			r.now = opts.Now
		}
		if opts.Logger != nil {
			r.log = opts.Logger
		}
	}
	r.base, r.stop = context.WithCancel(context.Background())
	return r
}

// Create records a queued job of kind and returns it; Execute or Start runs it later.
func (r *Runner) Create(ctx context.Context, tenant string, kind svcv1.JobKind) (*svcv1.Job, error) {
	if r.isFenced(tenant, "") {
		return nil, ErrFenced
	}
	now := timestamppb.New(r.now())
	j := &svcv1.Job{Id: id.New("job"), Kind: kind, Status: svcv1.JobStatus_JOB_STATUS_QUEUED, CreatedAt: now, UpdatedAt: now}
	if err := r.store.Put(ctx, tenant, j.Id, j); err != nil {
		return nil, fmt.Errorf("record job: %w", err)
	}
	return j, nil
}

// Start records a queued job and runs fn in the background; it returns the queued job.
func (r *Runner) Start(ctx context.Context, tenant string, kind svcv1.JobKind, fn Func) (*svcv1.Job, error) {
	j, err := r.Create(ctx, tenant, kind)
	if err != nil {
		return nil, err
	}
	r.Go(tenant, j.Id, fn)
	return j, nil
}

// Go runs the queued job id of tenant in the background.
func (r *Runner) Go(tenant, id string, fn Func) {
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		if _, err := r.Execute(r.base, tenant, id, fn); err != nil && !errors.Is(err, ErrNotQueued) {
			r.log.Error("job", "job_id", id, "err", err)
		}
	}()
}

// Run records a job and runs fn to its end in the caller's goroutine, returning the finished
// job and fn's error.
func (r *Runner) Run(ctx context.Context, tenant string, kind svcv1.JobKind, fn Func) (*svcv1.Job, error) {
	j, err := r.Create(ctx, tenant, kind)
	if err != nil {
		return nil, err
	}
	return r.Execute(ctx, tenant, j.Id, fn)
}

// Execute claims the queued job id (ErrNotQueued when it was cancelled or claimed meanwhile),
// runs fn, and records how it ended. The returned error is fn's (or the store's).
func (r *Runner) Execute(ctx context.Context, tenant, id string, fn Func) (*svcv1.Job, error) {
	lease, err := r.take(ctx, tenant, id)
	if err != nil {
		return nil, err
	}
	j, err := r.claim(ctx, tenant, id)
	if err != nil {
		r.release(lease)
		return nil, err
	}
	key := tenant + "/" + id
	jctx, cancel := context.WithCancel(ctx)
	lost, stopKeep := r.keep(lease, id, cancel)
	defer stopKeep()
	r.mu.Lock()
	if except, ok := r.fenced[tenant]; ok && except != id {
		cancel() // fenced after the claim: the job ends cancelled without running
	}
	r.running[key] = cancel
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		delete(r.running, key)
		r.mu.Unlock()
		cancel()
	}()
	r.event(ctx, tenant, EventStarted, j)

	p := &Progress{r: r, tenant: tenant, id: id, every: 250 * time.Millisecond}
	result, runErr := runSafely(jctx, p, fn)
	cancelled := jctx.Err() != nil && ctx.Err() == nil && !lost() // cancelled by CancelJob, not by the caller
	end := r.now()
	var final *svcv1.Job
	err = r.store.Update(context.WithoutCancel(ctx), tenant, id, func(s *svcv1.Job) error {
		s.UpdatedAt, s.FinishedAt = timestamppb.New(end), timestamppb.New(end)
		switch {
		case cancelled || (runErr != nil && s.GetStatus() == svcv1.JobStatus_JOB_STATUS_CANCELLED):
			s.Status = svcv1.JobStatus_JOB_STATUS_CANCELLED
		case runErr != nil:
			s.Status = svcv1.JobStatus_JOB_STATUS_FAILED
			msg := publicError(runErr)
			if ctx.Err() != nil || lost() {
				msg = interruptedMsg
			}
			s.Error = &msg
		default:
			s.Status, s.Progress = svcv1.JobStatus_JOB_STATUS_SUCCEEDED, 100
			if result != nil {
				st, err := structpb.NewStruct(result)
				if err != nil {
					return fmt.Errorf("job result: %w", err)
				}
				s.Result = st
			}
		}
		final = s
		return nil
	})
	if err != nil {
		return nil, errors.Join(runErr, fmt.Errorf("record job end: %w", err))
	}
	typ := EventSucceeded
	switch final.GetStatus() {
	case svcv1.JobStatus_JOB_STATUS_CANCELLED:
		typ = EventCancelled
	case svcv1.JobStatus_JOB_STATUS_FAILED:
		typ = EventFailed
	}
	r.event(ctx, tenant, typ, final)
	if cancelled && runErr == nil {
		runErr = context.Canceled
	}
	return final, runErr
}

// runSafely runs fn, turning a panic into an error so that a job never stays running.
func runSafely(ctx context.Context, p *Progress, fn Func) (res map[string]any, err error) {
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("job panicked: %v", v)
		}
	}()
	return fn(ctx, p)
}

// Fence stops the jobs of a tenant that is being erased: from now on no job of it but except
// is created or run, running ones are cancelled, and Fence returns once none of them runs
// (or ctx ends).
func (r *Runner) Fence(ctx context.Context, tenant, except string) error {
	r.mu.Lock()
	r.fenced[tenant] = except
	r.mu.Unlock()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		r.mu.Lock()
		n := 0
		for key, cancel := range r.running {
			if t, id, _ := strings.Cut(key, "/"); t == tenant && id != except {
				cancel()
				n++
			}
		}
		r.mu.Unlock()
		if n == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("fence %s: %w", tenant, ctx.Err())
		case <-tick.C:
		}
	}
}

// Unfence lifts a tenant's fence (its erasure failed and will be retried, or was cancelled).
func (r *Runner) Unfence(tenant string) {
	r.mu.Lock()
	delete(r.fenced, tenant)
	r.mu.Unlock()
}

func (r *Runner) isFenced(tenant, id string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	except, ok := r.fenced[tenant]
	return ok && except != id
}

// claim moves a queued job to running.
func (r *Runner) claim(ctx context.Context, tenant, id string) (*svcv1.Job, error) {
	if r.isFenced(tenant, id) {
		return nil, ErrFenced
	}
	var out *svcv1.Job
	err := r.store.Update(ctx, tenant, id, func(j *svcv1.Job) error {
		if j.GetStatus() != svcv1.JobStatus_JOB_STATUS_QUEUED {
			return ErrNotQueued
		}
		j.Status, j.UpdatedAt = svcv1.JobStatus_JOB_STATUS_RUNNING, timestamppb.New(r.now())
		out = j
		return nil
	})
	return out, err
}

// Cancel cancels a job: a queued one is cancelled at once, a running one is told to stop (its
// status becomes cancelled when its work returns). ErrFinished when it has ended.
func (r *Runner) Cancel(ctx context.Context, tenant, id string) (*svcv1.Job, error) {
	return r.cancel(ctx, tenant, id, false)
}

// CancelQueued cancels a job only while it is queued, in the same write that checks it:
// ErrNotQueued once it has started (a job whose start cannot be undone, such as an erasure).
func (r *Runner) CancelQueued(ctx context.Context, tenant, id string) (*svcv1.Job, error) {
	return r.cancel(ctx, tenant, id, true)
}

func (r *Runner) cancel(ctx context.Context, tenant, id string, queuedOnly bool) (*svcv1.Job, error) {
	var out *svcv1.Job
	wasQueued := false
	err := r.store.Update(ctx, tenant, id, func(j *svcv1.Job) error {
		switch j.GetStatus() {
		case svcv1.JobStatus_JOB_STATUS_QUEUED:
			now := timestamppb.New(r.now())
			j.Status, j.UpdatedAt, j.FinishedAt = svcv1.JobStatus_JOB_STATUS_CANCELLED, now, now
			wasQueued = true
		case svcv1.JobStatus_JOB_STATUS_RUNNING:
			if queuedOnly {
				return ErrNotQueued
			}
		default:
			return ErrFinished
		}
		out = j
		return nil
	})
	if err != nil {
		return nil, err
	}
	if wasQueued {
		r.event(ctx, tenant, EventCancelled, out)
		return out, nil
	}
	r.mu.Lock()
	cancel := r.running[tenant+"/"+id]
	r.mu.Unlock()
	if cancel != nil {
		cancel()
	}
	return out, nil
}

// Interrupted records that a job found running when the process started was cut short by the
// stop: it fails with that reason (its work, if any, is started again by its owner).
func (r *Runner) Interrupted(ctx context.Context, tenant string, j *svcv1.Job) error {
	var final *svcv1.Job
	err := r.store.Update(ctx, tenant, j.GetId(), func(s *svcv1.Job) error {
		if s.GetStatus() != svcv1.JobStatus_JOB_STATUS_RUNNING {
			return ErrNotQueued
		}
		now := timestamppb.New(r.now())
		msg := interruptedMsg
		s.Status, s.Error, s.UpdatedAt, s.FinishedAt = svcv1.JobStatus_JOB_STATUS_FAILED, &msg, now, now
		final = s
		return nil
	})
	if errors.Is(err, ErrNotQueued) {
		return nil
	}
	if err == nil {
		r.event(ctx, tenant, EventFailed, final)
	}
	return err
}

// Close cancels running background jobs and waits for them to record their end.
func (r *Runner) Close() {
	r.stop()
	r.wg.Wait()
}

func (r *Runner) event(ctx context.Context, tenant, typ string, j *svcv1.Job) {
	if r.notify != nil {
		r.notify.JobEvent(context.WithoutCancel(ctx), tenant, typ, j)
	}
}

// PublicError is an error whose message may be shown to the job's owner as the job's error.
type PublicError struct{ Msg string }

func (e *PublicError) Error() string { return e.Msg }

// publicError is what a failed job's error field says: a PublicError's message, else a
// generic one (internal causes are logged by the caller, not shown).
func publicError(err error) string {
	var pe *PublicError
	if errors.As(err, &pe) {
		return pe.Msg
	}
	return "the job failed; see the server log"
}

// Progress reports a running job's progress, 0 to 100, never decreasing. Reports are stored
// at most every 250 ms (and always when 100 is reached).
type Progress struct {
	r          *Runner
	tenant, id string
	every      time.Duration

	mu      sync.Mutex
	value   int
	written int
	at      time.Time
}

// Set reports progress n (clamped to 0..99: 100 is set when the job succeeds); a value below
// the current one is ignored.
func (p *Progress) Set(ctx context.Context, n int) {
	n = max(0, min(n, 99))
	p.mu.Lock()
	if n <= p.value {
		p.mu.Unlock()
		return
	}
	p.value = n
	now := p.r.now()
	if n == p.written || now.Sub(p.at) < p.every {
		p.mu.Unlock()
		return
	}
	p.written, p.at = n, now
	p.mu.Unlock()
	err := p.r.store.Update(context.WithoutCancel(ctx), p.tenant, p.id, func(j *svcv1.Job) error {
		if int32(n) <= j.GetProgress() {
			return errNoChange
		}
		j.Progress, j.UpdatedAt = int32(n), timestamppb.New(now)
		return nil
	})
	if err != nil && !errors.Is(err, errNoChange) {
		p.r.log.Warn("record job progress", "job_id", p.id, "err", err)
	}
}

// Fraction reports progress as done of total.
func (p *Progress) Fraction(ctx context.Context, done, total int64) {
	if total <= 0 {
		return
	}
	p.Set(ctx, int(done*100/total))
}

// Value is the progress reported so far.
func (p *Progress) Value() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.value
}

var errNoChange = errors.New("no change")

const interruptedMsg = "interrupted: the server stopped while the job ran"
