package server

import (
	"context"
	"errors"
	"fmt"
	"time"

	"svc.dev/svc"
	"svc.dev/svc/platform"
	"svc.dev/svc/platform/webhook"
	"svc.dev/svc/storage"
)

// replicaLeases are the store's leases as the server's replica holds them: jobs, webhooks'
// deliveries and the background loops are taken under them, one replica at a time
// (docs/scale-out.md).
type replicaLeases struct {
	leases storage.Leases
	r      svc.Replica
}

// newReplicaLeases returns the leases of a replica, nil for the only process on its store.
func newReplicaLeases(core *svc.Instance) *replicaLeases {
	r := core.Replica()
	if r == nil {
		return nil
	}
	return &replicaLeases{leases: core.Leases(), r: *r}
}

// heldLease is a lease this replica holds, renewed for the replica's time to live.
type heldLease struct {
	rl    *replicaLeases
	lease storage.Lease
}

// take claims the lease named name for the replica; an error wrapping
// platform.ErrLeaseTaken when another replica holds it.
func (rl *replicaLeases) take(ctx context.Context, name string) (*heldLease, error) {
	l, err := rl.leases.Claim(ctx, name, rl.r.Holder, rl.r.LeaseTTL)
	if errors.Is(err, storage.ErrLeaseHeld) {
		return nil, fmt.Errorf("%w: %w", platform.ErrLeaseTaken, err)
	}
	if err != nil {
		return nil, err
	}
	return &heldLease{rl, l}, nil
}

// renewFor extends the lease by ttl from now.
func (h *heldLease) renewFor(ctx context.Context, ttl time.Duration) error {
	l, err := h.rl.leases.Renew(ctx, h.lease, ttl)
	if err == nil {
		h.lease = l
	}
	return err
}

func (h *heldLease) Renew(ctx context.Context) error { return h.renewFor(ctx, h.rl.r.LeaseTTL) }

func (h *heldLease) Release(ctx context.Context) error { return h.rl.leases.Release(ctx, h.lease) }

// Take implements platform.Leases: the leases of the job runner and the webhook engine.
func (rl *replicaLeases) Take(ctx context.Context, name string) (platform.Lease, error) {
	h, err := rl.take(ctx, name)
	if err != nil {
		return nil, err
	}
	return h, nil
}

// webhookLeases are the webhook engine's leases, nil for the only process on the store.
func (s *Server) webhookLeases() webhook.Leases {
	if s.replica == nil {
		return nil
	}
	return s.replica
}

// leaseRenewal is how often the replica renews its leases (0 without replicas: defaults).
func (s *Server) leaseRenewal() time.Duration {
	if s.replica == nil {
		return 0
	}
	return s.replica.r.RenewEvery
}

// loopKey carries a background loop's lease name in its context (loopContext).
type loopKey struct{}

type loopLease struct {
	rl   *replicaLeases
	name string
}

// loopContext marks ctx as a background loop's named name: with replicas, every round of it
// (every) runs on one replica only.
func (s *Server) loopContext(ctx context.Context, name string) context.Context {
	if s.replica == nil {
		return ctx
	}
	return context.WithValue(ctx, loopKey{}, loopLease{s.replica, "loop:" + name})
}

// exclusively runs fn, a round of the background loop of ctx, when this replica takes the
// loop's lease; the lease is then kept for interval after fn ends, so that a round runs once
// per interval across the replicas, not once per replica. Without replicas it runs fn.
func exclusively(ctx context.Context, interval time.Duration, fn func()) {
	ll, ok := ctx.Value(loopKey{}).(loopLease)
	if !ok {
		fn()
		return
	}
	h, err := ll.rl.take(ctx, ll.name)
	if err != nil {
		return // another replica runs this round (or the store is unreachable: next round)
	}
	done := make(chan struct{})
	renewed := make(chan struct{})
	go func() {
		defer close(renewed)
		t := time.NewTicker(ll.rl.r.RenewEvery)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				h.Renew(ctx) // a round outliving its lease may overlap the next one elsewhere
			}
		}
	}()
	fn()
	close(done)
	<-renewed
	h.renewFor(context.WithoutCancel(ctx), max(interval, ll.rl.r.LeaseTTL))
}
