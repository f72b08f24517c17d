package job

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	svcv1 "svc.dev/svc/gen/svc/v1"
)

// leaseName names a job's lease.
func leaseName(tenant, id string) string { return "job:" + tenant + "/" + id }

// take takes the job's lease (nil without Leases); another runner holding it is ErrNotQueued:
// the job is not this runner's to run.
func (r *Runner) take(ctx context.Context, tenant, id string) (Lease, error) {
	if r.leases == nil {
		return nil, nil
	}
	l, err := r.leases.Take(ctx, leaseName(tenant, id))
	if errors.Is(err, ErrTaken) {
		return nil, fmt.Errorf("%w: %w", ErrNotQueued, err)
	}
	if err != nil {
		return nil, fmt.Errorf("job %s: %w", id, err)
	}
	return l, nil
}

func (r *Runner) release(l Lease) {
	if l == nil {
		return
	}
	if err := l.Release(context.Background()); err != nil {
		r.log.Warn("release job lease", "err", err)
	}
}

// keep renews l every RenewEvery while the job runs, cancelling the job when the lease is
// lost (lost then reports true: the job is recorded as interrupted, not cancelled). stop
// ends the renewals and releases the lease.
func (r *Runner) keep(l Lease, id string, cancel context.CancelFunc) (lost func() bool, stop func()) {
	var gone atomic.Bool
	if l == nil {
		return gone.Load, func() {}
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(r.renew)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
			}
			if err := l.Renew(context.Background()); err != nil {
				r.log.Warn("job lease lost: stopping the job", "job_id", id, "err", err)
				gone.Store(true)
				cancel()
				return
			}
		}
	})
	return gone.Load, func() {
		close(done)
		wg.Wait()
		if !gone.Load() {
			r.release(l)
		}
	}
}

// Orphan reports whether a job found running has no runner: no runner holds its lease (its
// runner died, or the job ran before leases were used). Without Leases every running job
// found at start is an orphan (this runner is the only one).
func (r *Runner) Orphan(ctx context.Context, tenant string, j *svcv1.Job) (bool, error) {
	if r.leases == nil {
		return true, nil
	}
	r.mu.Lock()
	_, mine := r.running[tenant+"/"+j.GetId()]
	r.mu.Unlock()
	if mine {
		return false, nil
	}
	l, err := r.leases.Take(ctx, leaseName(tenant, j.GetId()))
	if errors.Is(err, ErrTaken) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("job %s: %w", j.GetId(), err)
	}
	r.release(l)
	return true, nil
}
