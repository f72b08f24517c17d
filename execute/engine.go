package execute

import (
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"log/slog"
	"sync"
	"time"

	"golang.org/x/time/rate"
	"google.golang.org/protobuf/types/known/timestamppb"

	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/id"
	"svc.dev/svc/plan"
	"svc.dev/svc/providers"
)

// Errors of Start and Cancel.
var (
	// ErrNotAuthorized is returned when a plan is not authorized, or its hash is not the one
	// that was authorized.
	ErrNotAuthorized = errors.New("plan is not authorized")
	// ErrFinished is returned when cancelling an execution that already ended.
	ErrFinished = errors.New("execution already finished")
	// ErrFenced: the tenant is being erased (its account deleted); nothing of it runs.
	ErrFenced = errors.New("the account is being deleted")
)

// Transition is one journal entry: an asset moving from one step state to another.
type Transition struct {
	AssetID  string
	From, To svcv1.StepState
	Step     string // what was done: select, fetch, vault, verify, commit, trash, skip, fail, ...
	Status   string // ok, skipped or failed
	At       time.Time
	// What the step produced, kept so a resumed execution and the receipt know it.
	VaultID     string `json:",omitempty"`
	VaultSHA256 string `json:",omitempty"`
	Bytes       int64  `json:",omitempty"`
	ResultID    string `json:",omitempty"`
	Restorable  bool   `json:",omitempty"`
	Error       string `json:",omitempty"`
	// Path is where a copy, move or restore writes at its destination, journaled with
	// RESTORE_QUEUED before the write so that a redone write goes to the same place.
	Path string `json:",omitempty"`
	// Rendered, on a write to a destination, is what the destination changed in keeping the
	// content in a form of its own (providers.MetaRendered): the write was not verified byte
	// for byte. Empty: the destination holds exactly the bytes written.
	Rendered string `json:",omitempty"`
}

// AssetState is an asset's latest journal entry.
type AssetState = Transition

// Store keeps executions, their journals and the plans they run. Journal writes must be
// durable when Record returns; concurrent Records may be committed together. The engine
// groups an execution's transitions itself (one Record call per group, see journal.go).
type Store interface {
	// BeginExecution applies fn to the stored plan and, when it succeeds, stores e, in one
	// transaction: a plan never moves to committing without the execution that runs it.
	BeginExecution(ctx context.Context, tenant, planID string, fn func(*svcv1.Plan) error, e *svcv1.Execution) error
	UpdateExecution(ctx context.Context, tenant, id string, fn func(*svcv1.Execution) error) error
	// EndExecution is the update that ends an execution: fn sets its terminal status,
	// finished_at and receipt_id at once, and the store announces the end (events, webhooks)
	// in the same transaction, so whoever sees one of them sees all of them. It is the only
	// update that makes an execution terminal.
	EndExecution(ctx context.Context, tenant, id string, fn func(*svcv1.Execution) error) error
	// Unfinished lists the executions that are queued or running, as tenant and id.
	Unfinished(ctx context.Context) ([][2]string, error)
	// PlanHeader returns a plan without its objects (a store may include them; the engine
	// reads them through PlanObjects).
	PlanHeader(ctx context.Context, tenant, id string) (*svcv1.Plan, error)
	// PlanObjects yields a plan's objects in order, a chunk at a time, so that an execution of
	// any size holds one chunk of its plan, not all of it.
	PlanObjects(ctx context.Context, tenant, id string) iter.Seq2[[]*svcv1.PlanObject, error]
	// UpdatePlan applies fn to the stored plan atomically; fn changes only the header (the
	// plan's state), and the plan it is given may be without its objects.
	UpdatePlan(ctx context.Context, tenant, id string, fn func(*svcv1.Plan) error) error
	// Record appends transitions, in order, to an execution's journal, and returns once they
	// are durable. After a crash the journal holds a prefix of what was appended.
	Record(ctx context.Context, tenant, executionID string, ts ...Transition) error
	// ScanJournal calls fn with an execution's transitions in order, reading them as it goes;
	// it stops at fn's first error and returns it. fn must not call the store.
	ScanJournal(ctx context.Context, tenant, executionID string, fn func(Transition) error) error
}

// Sources opens the provider behind a source of a tenant, with the source's reference at it.
// Destinations (dst_ ids) open the same way: the provider they write to and the reference
// within it.
type Sources interface {
	Source(ctx context.Context, tenant, sourceID string) (providers.Provider, string, error)
}

// Vault stores content. Store streams body into the vault and returns only when the content is
// committed and its SHA-256 verified; a vault that writes and verifies in separate steps calls
// verifying between them (the journal then records VERIFYING). Storing the same asset again in
// the same execution is harmless: it is redone into the same vault object.
type Vault interface {
	Store(ctx context.Context, tenant string, asset Asset, body io.Reader, verifying func() error) (VaultRef, error)
	// Read opens the committed copy of an asset for a restore; reading verifies it, and
	// anything but io.EOF at the end means it failed verification.
	Read(ctx context.Context, tenant, assetID string) (io.ReadCloser, VaultRef, error)
}

// Asset is what the vault knows of a planned object being preserved.
type Asset struct {
	ExecutionID string
	Object      *svcv1.PlanObject
	Index       int64            // the object's position in its plan (0 the first)
	Content     providers.Object // the object's metadata as fetched
}

// VaultRef is a committed vault object.
type VaultRef struct {
	ID     string
	SHA256 string
	Size   int64
}

// Finisher makes an execution's receipt: it builds, signs and stores it (and updates the
// assets' manifests), and returns its id and finishedAt. e carries the terminal status the
// execution is about to get; p is the plan's header (without objects); objects yields the
// plan's objects a chunk at a time and journal scans the execution's transitions in order
// (fn must not call the store), so that neither need be held whole. It is called once per
// execution, and again when a crash came before the execution recorded its end: it must then
// return the receipt already made.
type Finisher interface {
	Finish(ctx context.Context, tenant string, e *svcv1.Execution, p *svcv1.Plan, objects iter.Seq2[[]*svcv1.PlanObject, error],
		journal func(fn func(Transition) error) error) (Receipt, error)
}

// Receipt is what a Finisher made: the receipt's id and the finishedAt it records, which
// becomes the execution's finished_at.
type Receipt struct {
	ID         string
	FinishedAt time.Time
}

// Options configure an Engine. Zero fields take defaults.
type Options struct {
	// Concurrency is the most assets in flight per execution, default 1024, within
	// InFlightBytes: each asset counts its size up to 8 MiB (what a streamed write buffers)
	// plus 64 KiB, default 128 MiB. Many small assets run together, so that the vault and the
	// journal commit them in large groups; large files run a few at a time.
	Concurrency   int
	InFlightBytes int64
	PerProvider   rate.Limit    // provider calls per second per provider, default unlimited
	Retries       int           // attempts for transient provider errors, default 5
	Backoff       time.Duration // first retry delay, doubled each time, default 100 ms
	Now           func() time.Time
	Logger        *slog.Logger
	// Unsubscribe sends an RFC 8058 one-click unsubscribe request (a POST of
	// "List-Unsubscribe=One-Click") to target, an https URL from a message's List-Unsubscribe
	// header; an error wrapping providers.ErrTransient is retried. Nil: unsubscribe actions
	// are skipped. Simulated plans (test mode) never call it.
	Unsubscribe func(ctx context.Context, target string) error
	// Claims, when set, hands each execution to one engine at a time among engines sharing
	// the store (replicas, see Claims); nil: this engine is the only one, as on bbolt.
	Claims Claims
	// RenewEvery is how often a running execution's claim is renewed (default
	// DefaultRenewEvery), ClaimTTL how long a claim lasts unrenewed (default
	// DefaultClaimTTL): a dead engine's executions are taken over about ClaimTTL after it
	// died. Used with Claims only.
	RenewEvery, ClaimTTL time.Duration
}

// Engine runs executions.
type Engine struct {
	store   Store
	sources Sources
	vault   Vault
	finish  Finisher
	opts    Options

	mu      sync.Mutex
	running map[string]context.CancelCauseFunc // by execution id
	tenants map[string]string                  // the tenant of each running execution
	fenced  map[string]bool                    // tenants being erased: nothing of theirs runs
	stopped bool                               // Shutdown was called: nothing more starts
	// life ends (errShutdown) when Shutdown is called, even for an execution already
	// cancelled (whose own context then keeps the cancel as its cause).
	life     context.Context
	stopLife context.CancelCauseFunc
	pacing   map[providers.Name]*rate.Limiter
	wg       sync.WaitGroup
}

// New returns an engine.
func New(store Store, sources Sources, vault Vault, finish Finisher, opts Options) *Engine {
	if opts.Concurrency <= 0 {
		opts.Concurrency = 1024
	}
	if opts.InFlightBytes <= 0 {
		opts.InFlightBytes = 128 << 20
	}
	if opts.PerProvider == 0 {
		opts.PerProvider = rate.Inf
	}
	if opts.Retries <= 0 {
		opts.Retries = 5
	}
	if opts.Backoff <= 0 {
		opts.Backoff = 100 * time.Millisecond
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.RenewEvery <= 0 {
		opts.RenewEvery = DefaultRenewEvery
	}
	if opts.ClaimTTL <= 0 {
		opts.ClaimTTL = DefaultClaimTTL
	}
	life, stop := context.WithCancelCause(context.Background())
	return &Engine{store: store, sources: sources, vault: vault, finish: finish, opts: opts, life: life, stopLife: stop,
		running: map[string]context.CancelCauseFunc{}, tenants: map[string]string{}, fenced: map[string]bool{}, pacing: map[providers.Name]*rate.Limiter{}}
}

func (e *Engine) now() time.Time { return e.opts.Now().UTC().Truncate(time.Millisecond) }

// Start checks that a plan may run (authorized, with the authorized hash), moves the plan to
// committing and records a queued execution (one transaction), and runs it in the background. The caller checks
// staleness (source markers) before.
func (e *Engine) Start(ctx context.Context, tenant, planID, principalID string) (*svcv1.Execution, error) {
	e.mu.Lock()
	fenced := e.fenced[tenant]
	e.mu.Unlock()
	if fenced {
		return nil, ErrFenced
	}
	now := e.now()
	x := &svcv1.Execution{Id: id.NewAt("exe", now), PlanId: planID, PrincipalId: principalID,
		Status: svcv1.ExecutionStatus_EXECUTION_STATUS_QUEUED, Errors: []string{}, Steps: []*svcv1.ExecutionStep{},
		CreatedAt: timestamppb.New(now), UpdatedAt: timestamppb.New(now)}
	err := e.store.BeginExecution(ctx, tenant, planID, func(p *svcv1.Plan) error {
		if p.GetState() != svcv1.PlanState_PLAN_STATE_AUTHORIZED {
			return fmt.Errorf("%w: the plan is %s", plan.ErrInvalidState, stateName(p.GetState()))
		}
		h, err := plan.Hash(p)
		if err != nil {
			return err
		}
		if h != p.GetHash() || h != p.GetAuthorization().GetPlanHashAtAuthorization() {
			return fmt.Errorf("%w: the plan's hash is not the authorized one", ErrNotAuthorized)
		}
		x.PlanHash, x.Simulated = h, p.GetSimulated()
		return plan.Transition(p, svcv1.PlanState_PLAN_STATE_COMMITTING)
	}, x)
	if err != nil {
		return nil, err
	}
	e.launch(tenant, x.Id)
	return x, nil
}

// Resume restarts every execution that was queued or running when the process stopped. With
// Claims, it runs those no other engine holds (and Adopt takes the others over later, should
// their engine die).
func (e *Engine) Resume(ctx context.Context) error { return e.resume(ctx, true) }

func (e *Engine) resume(ctx context.Context, log bool) error {
	refs, err := e.store.Unfinished(ctx)
	if err != nil {
		return fmt.Errorf("resume executions: %w", err)
	}
	for _, r := range refs {
		e.mu.Lock()
		_, ours := e.running[r[1]]
		e.mu.Unlock()
		if ours {
			continue
		}
		if log {
			e.opts.Logger.Info("resuming execution", "execution_id", r[1])
		}
		e.launch(r[0], r[1])
	}
	return nil
}

// Cancel stops an execution: assets not yet started are skipped, assets in flight finish the
// step they are in, and the execution ends cancelled, with its receipt (or failed, when its
// receipt cannot be made: see abandon). An unfinished execution this engine is not running (one
// that an earlier process left running) is run now, to its cancelled end.
func (e *Engine) Cancel(ctx context.Context, tenant, executionID string) error {
	e.mu.Lock()
	cancel, ok := e.running[executionID]
	e.mu.Unlock()
	err := e.store.UpdateExecution(ctx, tenant, executionID, func(x *svcv1.Execution) error {
		if x.GetFinishedAt() != nil || x.GetReceiptId() != "" {
			return ErrFinished
		}
		switch x.GetStatus() {
		case svcv1.ExecutionStatus_EXECUTION_STATUS_QUEUED, svcv1.ExecutionStatus_EXECUTION_STATUS_RUNNING:
			x.Errors = append(x.Errors, "cancelled")
			return nil
		}
		return ErrFinished
	})
	if err != nil {
		return err
	}
	if ok {
		cancel(context.Canceled)
	} else {
		e.launch(tenant, executionID)
	}
	return nil
}

// Running returns how many executions this engine is running now.
func (e *Engine) Running() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.running)
}

// Wait blocks until every running execution has ended (for shutdown and tests).
func (e *Engine) Wait() { e.wg.Wait() }

// Shutdown stops running executions where they are; they resume on the next start.
func (e *Engine) Shutdown() {
	e.mu.Lock()
	e.stopped = true
	e.stopLife(errShutdown)
	for _, c := range e.running {
		c(errShutdown)
	}
	e.mu.Unlock()
	e.wg.Wait()
}

var errShutdown = errors.New("shutting down")

// Fence stops the executions of a tenant that is being erased: from now on none of its
// executions starts or resumes, running ones are cancelled (each ends cancelled with its
// receipt, as Cancel does), and Fence returns once none of them runs (or ctx ends).
func (e *Engine) Fence(ctx context.Context, tenant string) error {
	e.mu.Lock()
	e.fenced[tenant] = true
	e.mu.Unlock()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for cancelled := map[string]bool{}; ; {
		e.mu.Lock()
		var ids []string
		for exeID, t := range e.tenants {
			if t == tenant {
				ids = append(ids, exeID)
			}
		}
		e.mu.Unlock()
		if len(ids) == 0 {
			return nil
		}
		for _, exeID := range ids {
			if !cancelled[exeID] {
				cancelled[exeID] = true
				if err := e.Cancel(ctx, tenant, exeID); err != nil && !errors.Is(err, ErrFinished) {
					return fmt.Errorf("fence %s: %w", tenant, err)
				}
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("fence %s: %w", tenant, ctx.Err())
		case <-tick.C:
		}
	}
}

// Unfence lifts a tenant's fence.
func (e *Engine) Unfence(tenant string) {
	e.mu.Lock()
	delete(e.fenced, tenant)
	e.mu.Unlock()
}

// stepContext returns the context an execution's steps run in, from the execution's own ctx: a
// cancel of the execution does not reach it (a step in flight finishes, and the cancel is
// seen between steps), a shutdown of the engine does, even after a cancel. A step a shutdown
// cuts short (a provider call, a vault write) is redone when the execution resumes, as after
// a crash; so a frozen or slow provider never holds a shutdown past its drain. stop releases
// it.
// halt is the execution's own life (see launch): it ends with the engine's, or with errHalted
// when the execution's claim is lost.
func (e *Engine) stepContext(ctx, halt context.Context) (work context.Context, stop func()) {
	work, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	unregister := context.AfterFunc(halt, func() { cancel(context.Cause(halt)) })
	return work, func() { unregister(); cancel(nil) }
}

// shuttingDown reports whether Shutdown was called.
func (e *Engine) shuttingDown() bool { return e.life.Err() != nil }

// halted reports whether an execution must stop where it is: the engine is shutting down, or
// the execution's claim was lost.
func halted(halt context.Context) bool { return halt.Err() != nil }

// stopping reports whether the engine is shutting down this execution's steps.
func (r *runner) stopping() bool { return errors.Is(context.Cause(r.work), errShutdown) }

func (e *Engine) launch(tenant, exeID string) {
	e.mu.Lock()
	if _, ok := e.running[exeID]; ok || e.stopped {
		e.mu.Unlock()
		return
	}
	if e.fenced[tenant] {
		e.mu.Unlock()
		return // its tenant is being erased, this execution with it
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	// halt ends with the engine's life (errShutdown) or when the claim is lost (errHalted).
	halt, stopHalt := context.WithCancelCause(e.life)
	e.running[exeID] = func(cause error) {
		if errors.Is(cause, errShutdown) {
			stopHalt(cause)
		}
		cancel(cause)
	}
	e.tenants[exeID] = tenant
	e.mu.Unlock()
	e.wg.Add(1)
	go func() {
		defer e.wg.Done()
		defer func() {
			e.mu.Lock()
			delete(e.running, exeID)
			delete(e.tenants, exeID)
			e.mu.Unlock()
			cancel(nil)
			stopHalt(nil)
		}()
		c, ok := e.claim(context.WithoutCancel(ctx), tenant, exeID) // a cancel that came first still runs it to its end
		if !ok {
			return // another engine runs it
		}
		if c != nil {
			stop := make(chan struct{})
			kept := make(chan struct{})
			go func() {
				defer close(kept)
				e.keep(c, tenant, exeID, func(cause error) { stopHalt(cause); cancel(cause) }, cancel, stop)
			}()
			defer func() {
				close(stop)
				<-kept
				if !halted(halt) || e.shuttingDown() {
					// Released at the end, and at a shutdown (another engine may take it
					// over at once); a lost claim is not ours to release.
					if err := c.Release(context.Background()); err != nil {
						e.opts.Logger.Warn("release execution claim", "execution_id", exeID, "err", err)
					}
				}
			}()
		}
		if err := e.run(ctx, halt, c, tenant, exeID); err != nil && !halted(halt) {
			e.opts.Logger.Error("execution failed", "execution_id", exeID, "err", err)
		}
	}()
}

func (e *Engine) limiter(name providers.Name) *rate.Limiter {
	e.mu.Lock()
	defer e.mu.Unlock()
	l, ok := e.pacing[name]
	if !ok {
		l = rate.NewLimiter(e.opts.PerProvider, 1)
		e.pacing[name] = l
	}
	return l
}

func stateName(s svcv1.PlanState) string { return enumName(s) }
