package svc

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"svc.dev/svc/execute"
	"svc.dev/svc/storage"
)

// Replica makes an Instance one of several processes sharing one store (replicas of a
// service on one PostgreSQL database, docs/scale-out.md): each execution runs on one replica
// at a time, under a lease in the store that the replica renews while it runs; the journal
// writes and the end of an execution are fenced by that lease; and a replica that dies is
// noticed when its leases expire, its executions adopted by another replica, which resumes
// them from their journals. Zero fields take defaults.
type Replica struct {
	// Holder names this process among the replicas in the leases it holds (default: the
	// host name, the process id and a random suffix).
	Holder string
	// LeaseTTL is how long a lease lasts unrenewed (default execute.DefaultClaimTTL, 15 s):
	// about how long a dead replica's work waits before another takes it over.
	LeaseTTL time.Duration
	// RenewEvery is how often leases are renewed, and how often a replica looks for
	// executions to adopt (default execute.DefaultRenewEvery, 5 s).
	RenewEvery time.Duration
}

// withDefaults fills r's zero fields.
func (r Replica) withDefaults() Replica {
	if r.Holder == "" {
		host, _ := os.Hostname()
		var b [4]byte
		rand.Read(b[:])
		r.Holder = fmt.Sprintf("%s-%d-%s", host, os.Getpid(), hex.EncodeToString(b[:]))
	}
	if r.LeaseTTL <= 0 {
		r.LeaseTTL = execute.DefaultClaimTTL
	}
	if r.RenewEvery <= 0 {
		r.RenewEvery = execute.DefaultRenewEvery
	}
	return r
}

// Replica returns how this Instance shares its store with other replicas, nil when it is the
// only process on it.
func (sv *Instance) Replica() *Replica {
	if sv.core.replica == nil {
		return nil
	}
	r := *sv.core.replica
	return &r
}

// Leases returns the store's leases when the Instance is a replica (nil otherwise): the
// host's other background work (jobs, webhook deliveries, scheduled scrubs) takes its units
// of work under them.
func (sv *Instance) Leases() storage.Leases { return sv.core.leases }

// replicaOf sets up c as a replica: the store's leases and the engine's claims.
func (c *core) replicaOf(r *Replica, store Store) (execute.Claims, error) {
	if r == nil {
		return nil, nil
	}
	l, ok := store.(storage.Leaser)
	if !ok {
		return nil, fmt.Errorf("replica: the store (%T) hands out no leases", store)
	}
	rr := r.withDefaults()
	c.replica, c.leases = &rr, l.Leases()
	c.fences = &fences{held: map[string]storage.Lease{}}
	return execClaims{c}, nil
}

// adopt starts, once, the replica's look for executions to adopt: those of replicas that died
// (their leases expired), resumed here from their journals.
func (c *core) adopt() {
	if c.replica == nil {
		return
	}
	c.adoptOnce.Do(func() {
		ctx, stop := context.WithCancel(context.Background())
		c.stopAdopt = stop
		go c.engine.Adopt(ctx, c.replica.RenewEvery)
	})
}

// fences are the leases of the executions this replica runs, by execution id: the store's
// fence (storage.Leases.Held) for their journal writes and their end.
type fences struct {
	mu   sync.Mutex
	held map[string]storage.Lease
}

// fence returns the Write that fences a write of executionID, nil when this process holds no
// lease for it (not a replica, or an execution it does not run: a cancel from here).
func (c *core) fence(executionID string) storage.Write {
	if c.fences == nil {
		return nil
	}
	c.fences.mu.Lock()
	l, ok := c.fences.held[executionID]
	c.fences.mu.Unlock()
	if !ok {
		return nil
	}
	return c.leases.Held(l)
}

// execClaims are the engine's claims on executions, as leases named "execution:TENANT/ID".
type execClaims struct{ c *core }

func (x execClaims) Claim(ctx context.Context, tenant, exeID string, ttl time.Duration) (execute.Claim, error) {
	// No replica starts, adopts or resumes an execution of a tenant whose account's deletion
	// is due (erasurefence.go).
	if erasing, err := x.c.erasing(ctx, tenant); err != nil {
		return nil, err
	} else if erasing {
		return nil, fmt.Errorf("%w: its tenant is being erased", execute.ErrClaimed)
	}
	l, err := x.c.leases.Claim(ctx, "execution:"+tenant+"/"+exeID, x.c.replica.Holder, ttl)
	if errors.Is(err, storage.ErrLeaseHeld) {
		return nil, fmt.Errorf("%w: %w", execute.ErrClaimed, err)
	}
	if err != nil {
		return nil, err
	}
	f := x.c.fences
	f.mu.Lock()
	f.held[exeID] = l
	f.mu.Unlock()
	return &execClaim{c: x.c, exeID: exeID, lease: l}, nil
}

type execClaim struct {
	c     *core
	exeID string
	lease storage.Lease
}

func (e *execClaim) Renew(ctx context.Context, ttl time.Duration) error {
	l, err := e.c.leases.Renew(ctx, e.lease, ttl)
	if errors.Is(err, storage.ErrLeaseLost) {
		return fmt.Errorf("%w: %w", execute.ErrClaimLost, err)
	}
	if err == nil {
		e.lease = l // the same token; only its expiry moved
	}
	return err
}

func (e *execClaim) Release(ctx context.Context) error {
	f := e.c.fences
	f.mu.Lock()
	if f.held[e.exeID].Token == e.lease.Token {
		delete(f.held, e.exeID)
	}
	f.mu.Unlock()
	return e.c.leases.Release(ctx, e.lease)
}

// AppendWith appends under a fence when the store's journal can (PostgreSQL); bbolt's leases
// are its one process's, whose engine runs an execution once, so a plain append is the same.
func (j signallingJournal) AppendWith(ctx context.Context, tenant, executionID string, entries [][]byte, also ...storage.Write) error {
	fj, ok := j.Journal.(storage.FencedJournal)
	if !ok {
		return j.Append(ctx, tenant, executionID, entries)
	}
	err := fj.AppendWith(ctx, tenant, executionID, entries, also...)
	if err == nil {
		j.changes.notify()
	}
	return err
}
