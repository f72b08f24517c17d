package platform

import (
	"context"
	"errors"
)

// Leases hand a unit of work (a job, a webhook's deliveries) to one holder at a time among
// the processes sharing a store: replicas of a service on one database. The job runner and
// the webhook engine take their work's leases through it (job.Leases, webhook.Leases).
type Leases interface {
	// Take takes the lease named name; an error wrapping ErrLeaseTaken when another holder
	// has it.
	Take(ctx context.Context, name string) (Lease, error)
}

// Lease is a lease a holder has.
type Lease interface {
	// Renew extends the lease; an error means it may be lost.
	Renew(ctx context.Context) error
	// Release gives it up.
	Release(ctx context.Context) error
}

// ErrLeaseTaken is returned (wrapped) by Leases.Take when another holder has the lease.
var ErrLeaseTaken = errors.New("lease is taken")
