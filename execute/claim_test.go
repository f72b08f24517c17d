package execute_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"svc.dev/svc/execute"
	svcv1 "svc.dev/svc/gen/svc/v1"
)

// memClaims are execute.Claims in memory, shared by the engines of a test as a database's
// leases are by replicas: one holder per execution, expiring unrenewed after its ttl, with
// a token that changes at every new claim.
type memClaims struct {
	mu     sync.Mutex
	held   map[string]memClaim // by execution id
	tokens int
}

type memClaim struct {
	c       *memClaims
	exeID   string
	holder  string
	token   int
	expires time.Time
	down    *atomic.Bool // the holder cannot reach the claims (a partition, a dead process)
}

func newMemClaims() *memClaims { return &memClaims{held: map[string]memClaim{}} }

// engine names a holder of the claims; down cuts it off from them.
func (c *memClaims) engine(holder string, down *atomic.Bool) execute.Claims {
	return claimsOf{c, holder, down}
}

type claimsOf struct {
	c      *memClaims
	holder string
	down   *atomic.Bool
}

var errUnreachable = errors.New("claims unreachable")

func (h claimsOf) Claim(_ context.Context, _, exeID string, ttl time.Duration) (execute.Claim, error) {
	if h.down.Load() {
		return nil, errUnreachable
	}
	h.c.mu.Lock()
	defer h.c.mu.Unlock()
	now := time.Now()
	if cur, ok := h.c.held[exeID]; ok && now.Before(cur.expires) && cur.holder != h.holder {
		return nil, fmt.Errorf("%s: %w", exeID, execute.ErrClaimed)
	}
	h.c.tokens++
	cl := memClaim{c: h.c, exeID: exeID, holder: h.holder, token: h.c.tokens, expires: now.Add(ttl), down: h.down}
	h.c.held[exeID] = cl
	return &cl, nil
}

// holds reports whether token is the running claim on exeID; c.mu is held.
func (c *memClaims) holds(exeID string, token int) bool {
	cur, ok := c.held[exeID]
	return ok && cur.token == token && time.Now().Before(cur.expires)
}

// steal ends an execution's claim at once, as an expiry the holder has not noticed yet.
func (c *memClaims) steal(exeID string) {
	c.mu.Lock()
	delete(c.held, exeID)
	c.mu.Unlock()
}

func (m *memClaim) Renew(_ context.Context, ttl time.Duration) error {
	if m.down.Load() {
		return errUnreachable
	}
	m.c.mu.Lock()
	defer m.c.mu.Unlock()
	if !m.c.holds(m.exeID, m.token) {
		return fmt.Errorf("%s: %w", m.exeID, execute.ErrClaimLost)
	}
	m.expires = time.Now().Add(ttl)
	m.c.held[m.exeID] = *m
	return nil
}

func (m *memClaim) Release(context.Context) error {
	if m.down.Load() {
		return errUnreachable
	}
	m.c.mu.Lock()
	defer m.c.mu.Unlock()
	if m.c.holds(m.exeID, m.token) {
		delete(m.c.held, m.exeID)
	}
	return nil
}

// fencedStore is one engine's view of the shared store: its journal writes and execution
// updates apply only while the engine holds the execution's claim (the fence a database's
// lease gives), and none at all while it is down.
type fencedStore struct {
	*memStore
	claims  *memClaims
	holder  string
	down    *atomic.Bool
	refused atomic.Int64 // writes refused by the fence
}

var errFenced = errors.New("fenced: claim not held")

func (f *fencedStore) fence(exeID string) error {
	if f.down.Load() {
		return errUnreachable
	}
	f.claims.mu.Lock()
	defer f.claims.mu.Unlock()
	if cur, ok := f.claims.held[exeID]; !ok || cur.holder != f.holder || !time.Now().Before(cur.expires) {
		f.refused.Add(1)
		return errFenced
	}
	return nil
}

func (f *fencedStore) Record(ctx context.Context, tenant, exe string, ts ...execute.Transition) error {
	if err := f.fence(exe); err != nil {
		return err
	}
	return f.memStore.Record(ctx, tenant, exe, ts...)
}

func (f *fencedStore) UpdateExecution(ctx context.Context, tenant, id string, fn func(*svcv1.Execution) error) error {
	if f.down.Load() {
		return errUnreachable
	}
	return f.memStore.UpdateExecution(ctx, tenant, id, fn)
}

func (f *fencedStore) EndExecution(ctx context.Context, tenant, id string, fn func(*svcv1.Execution) error) error {
	if err := f.fence(id); err != nil {
		return err
	}
	return f.memStore.EndExecution(ctx, tenant, id, fn)
}

// replica is an engine of the rig with claims, as one of several processes on one store.
// Its claims last ttl, renewed every tenth of it.
func (r *rig) replica(claims *memClaims, holder string, down *atomic.Bool, ttl time.Duration) (*execute.Engine, *fencedStore) {
	fs := &fencedStore{memStore: r.store, claims: claims, holder: holder, down: down}
	e := execute.New(fs, fakeSources{src: r.src}, r.vault, r.finish, execute.Options{Concurrency: 4, Backoff: time.Millisecond,
		Claims: claims.engine(holder, down), RenewEvery: ttl / 10, ClaimTTL: ttl})
	return e, fs
}

// A replica cut off mid-execution (it can reach neither the store nor the claims, as when it
// is killed) loses its claim when the claim expires; another replica adopts the execution and
// finishes it from the journal: every asset preserved, trashed once, one receipt.
func TestClaimTakeoverAfterPartition(t *testing.T) {
	r := newRig(t, 300)
	claims := newMemClaims()
	var downA, downB atomic.Bool
	a, _ := r.replica(claims, "a", &downA, 300*time.Millisecond)
	b, _ := r.replica(claims, "b", &downB, 300*time.Millisecond)
	running := make(chan struct{})
	r.src.onTrash = func(n int) {
		switch n {
		case 10:
			close(running)
		case 100:
			downA.Store(true) // a third through: replica a is gone
		}
	}
	x, err := a.Start(context.Background(), "t", r.plan.PlanId, "usr_1")
	if err != nil {
		t.Fatal(err)
	}
	<-running
	// b takes nothing over while a holds the claim.
	if err := b.Resume(context.Background()); err != nil {
		t.Fatal(err)
	}
	a.Wait() // a stops where it was once its writes fail and its claim cannot be renewed
	r.src.mu.Lock()
	byA := len(r.src.trash)
	r.src.mu.Unlock()
	if byA < 100 || byA >= 300 {
		t.Fatalf("replica a trashed %d objects, want it cut off after 100", byA)
	}
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	go b.Adopt(ctx, 20*time.Millisecond)
	deadline := time.Now().Add(10 * time.Second)
	for r.store.finished(x.Id) == nil && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	stop()
	b.Wait()
	x = r.check(t, x.Id)
	if x.Status != svcv1.ExecutionStatus_EXECUTION_STATUS_COMPLETED || len(r.src.trash) != 300 || x.Completed != 300 {
		t.Fatalf("%v: %d completed, %d trashed, errors %v", x.Status, x.Completed, len(r.src.trash), x.Errors)
	}
}

// A replica whose claim is lost while it runs (taken over when it expired, the replica not
// having noticed yet) has its next journal write refused by the fence: it stops where it is,
// without ending the execution, and the replica holding the claim finishes it.
func TestClaimLostIsFenced(t *testing.T) {
	r := newRig(t, 300)
	claims := newMemClaims()
	var downA, downB atomic.Bool
	a, fa := r.replica(claims, "a", &downA, 5*time.Second)
	b, _ := r.replica(claims, "b", &downB, 5*time.Second)
	var once sync.Once
	var x *svcv1.Execution
	took := make(chan struct{})
	r.src.onTrash = func(n int) {
		if n == 80 {
			once.Do(func() {
				claims.steal(r.store.only()) // a's claim is gone; b claims it first
				go func() { b.Resume(context.Background()); close(took) }()
			})
		}
	}
	var err error
	if x, err = a.Start(context.Background(), "t", r.plan.PlanId, "usr_1"); err != nil {
		t.Fatal(err)
	}
	a.Wait()
	<-took
	b.Wait()
	x = r.check(t, x.Id)
	if x.Status != svcv1.ExecutionStatus_EXECUTION_STATUS_COMPLETED || len(r.src.trash) != 300 {
		t.Fatalf("%v: %d trashed, errors %v", x.Status, len(r.src.trash), x.Errors)
	}
	if fa.refused.Load() == 0 {
		t.Fatal("replica a wrote nothing after its claim was lost: the fence was not tested")
	}
	if r.finish.calls != 1 {
		t.Fatalf("the receipt was made %d times, want once (by b)", r.finish.calls)
	}
}

// only returns the id of the store's one execution.
func (m *memStore) only() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	for id := range m.executions {
		return id
	}
	return ""
}
