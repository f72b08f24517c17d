package execute

import (
	"context"
	"errors"
	"fmt"
	"time"

	svcv1 "svc.dev/svc/gen/svc/v1"
)

// Claims hands each execution to one engine at a time among engines that share a store
// (replicas of one service on one database). An engine runs an execution only while it holds
// its claim: it claims it before running it, renews the claim while it runs, and releases it
// at the end. A claim not renewed within its time to live expires, and another engine takes
// the execution over from its journal.
type Claims interface {
	// Claim takes the execution for this engine for ttl; an error wrapping ErrClaimed when
	// another engine holds it.
	Claim(ctx context.Context, tenant, executionID string, ttl time.Duration) (Claim, error)
}

// Claim is an execution held by this engine. The store refuses the journal writes and the
// end of an execution whose claim was lost (a fence), so an engine that lost its claim
// without knowing it yet cannot record a step the engine that took over does not see.
type Claim interface {
	// Renew extends the claim by ttl; an error wrapping ErrClaimLost when it was lost.
	Renew(ctx context.Context, ttl time.Duration) error
	// Release gives the claim up.
	Release(ctx context.Context) error
}

// Errors of Claims.
var (
	// ErrClaimed is returned (wrapped) by Claims.Claim when another engine holds the claim.
	ErrClaimed = errors.New("execution is claimed by another engine")
	// ErrClaimLost is returned (wrapped) by Claim.Renew when the claim expired and another
	// engine took it, or it was released.
	ErrClaimLost = errors.New("the execution's claim was lost")
)

// errHalted is the cause that stops one execution where it is, as a shutdown does, when its
// claim is lost: it resumes on the engine that holds the claim now. It wraps errShutdown, so
// that every step treats it as one.
var errHalted = fmt.Errorf("%w: %w", errShutdown, ErrClaimLost)

// Default lease timings (Options.RenewEvery, Options.ClaimTTL).
const (
	DefaultRenewEvery = 5 * time.Second
	DefaultClaimTTL   = 15 * time.Second
)

// claim takes exeID's claim when the engine has Claims; ok is false when another engine holds
// it. With no Claims the engine is the only one: claim always succeeds, holding nothing.
func (e *Engine) claim(ctx context.Context, tenant, exeID string) (Claim, bool) {
	if e.opts.Claims == nil {
		return nil, true
	}
	c, err := e.opts.Claims.Claim(ctx, tenant, exeID, e.opts.ClaimTTL)
	if err != nil {
		if !errors.Is(err, ErrClaimed) {
			e.opts.Logger.Error("claim execution", "execution_id", exeID, "err", err)
		}
		return nil, false
	}
	return c, true
}

// keep renews c every RenewEvery until stop is closed. It halts the execution (cancel with
// errHalted) when the claim is lost or could not be renewed for ClaimTTL (by then it may have
// expired, and the store's fence refuses the execution's writes anyway), and cancels it
// (context.Canceled, ending it cancelled as Cancel does) when another engine recorded a cancel
// (Cancel on a replica that does not run it).
func (e *Engine) keep(c Claim, tenant, exeID string, halt, cancel context.CancelCauseFunc, stop <-chan struct{}) {
	tick := time.NewTicker(e.opts.RenewEvery)
	defer tick.Stop()
	renewed := time.Now()
	cancelled := false
	for {
		select {
		case <-stop:
			return
		case <-tick.C:
		}
		ctx, done := context.WithTimeout(context.Background(), e.opts.RenewEvery)
		err := c.Renew(ctx, e.opts.ClaimTTL)
		if err == nil && !cancelled && e.cancelRecorded(ctx, tenant, exeID) {
			cancelled = true
			cancel(context.Canceled)
		}
		done()
		switch {
		case err == nil:
			renewed = time.Now()
		case errors.Is(err, ErrClaimLost) || time.Since(renewed) >= e.opts.ClaimTTL:
			e.opts.Logger.Warn("execution claim lost: stopping it here", "execution_id", exeID, "err", err)
			halt(errHalted)
			return
		default:
			e.opts.Logger.Warn("renew execution claim", "execution_id", exeID, "err", err)
		}
	}
}

// errLook ends a read-only look at an execution through UpdateExecution.
var errLook = errors.New("look only")

// cancelRecorded reports whether the stored execution was cancelled (its last error says so).
func (e *Engine) cancelRecorded(ctx context.Context, tenant, exeID string) bool {
	var yes bool
	err := e.store.UpdateExecution(ctx, tenant, exeID, func(x *svcv1.Execution) error {
		errs := x.GetErrors()
		yes = len(errs) > 0 && errs[len(errs)-1] == "cancelled"
		return errLook
	})
	if err != nil && !errors.Is(err, errLook) {
		e.opts.Logger.Warn("read execution", "execution_id", exeID, "err", err)
	}
	return yes
}

// Adopt runs Resume every interval until ctx ends: executions that no engine runs (their
// engine died and their claims expired, or they were queued on an engine that stopped) are
// taken over by whichever engine claims them first. For engines with Claims (replicas).
func (e *Engine) Adopt(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if e.shuttingDown() {
			return
		}
		if err := e.resume(ctx, false); err != nil && ctx.Err() == nil {
			e.opts.Logger.Error("adopt executions", "err", err)
		}
	}
}
