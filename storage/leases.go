package storage

import (
	"context"
	"errors"
	"time"

	svcv1 "svc.dev/svc/gen/svc/v1"
)

// Errors of Leases.
var (
	// ErrLeaseHeld is returned by Claim when another holder's lease on the name has not
	// expired.
	ErrLeaseHeld = errors.New("lease is held by another holder")
	// ErrLeaseLost is returned (wrapped) by Renew, and by a transaction carrying a Held
	// write, when the lease expired and was claimed again (by anyone) or was released.
	ErrLeaseLost = errors.New("lease was lost")
)

// Lease is a holder's claim on a unit of work (an execution, a job, a webhook's deliveries,
// a background loop) until Expires. Token grows each time the name is claimed anew, so a
// write fenced by a lease (Held) is refused once anyone claimed the name after it.
type Lease struct {
	Name    string
	Holder  string
	Token   int64
	Expires time.Time
}

// Leases hands units of work to one holder at a time among processes sharing a store
// (replicas). Expiry is judged by the store's clock, so holders need not agree on the time;
// a holder renews well before Expires (say every third of the time to live) and stops the
// work, before its next write, once it cannot.
type Leases interface {
	// Claim takes the lease on name for holder for ttl: when nobody holds it, its last
	// lease expired, or holder already holds it (then it is renewed, same token).
	// ErrLeaseHeld when another holder's lease is still running.
	Claim(ctx context.Context, name, holder string, ttl time.Duration) (Lease, error)
	// Renew extends l by ttl from now; ErrLeaseLost when l is no longer held.
	Renew(ctx context.Context, l Lease, ttl time.Duration) (Lease, error)
	// Release gives l up, so another holder may claim it at once; releasing a lease no
	// longer held does nothing.
	Release(ctx context.Context, l Lease) error
	// Held is the Write that fails its transaction with ErrLeaseLost unless l is still held
	// (same holder and token, not expired) when the transaction commits: a fence for the
	// writes of a holder that may have lost its lease without knowing it yet.
	Held(l Lease) Write
}

// Leaser is a store that hands out leases (an optional capability, found by type
// assertion): bbolt's are the one process's, PostgreSQL's are shared by every process on the
// database.
type Leaser interface {
	Leases() Leases
}

// FencedJournal is a Journal that can append under a fence (an optional capability): the
// entries are stored only if the Writes passed with them (a Held lease) apply, in the same
// transaction.
type FencedJournal interface {
	AppendWith(ctx context.Context, tenant, executionID string, entries [][]byte, also ...Write) error
}

// ActiveExecutions is an Executions that reads the queued and running executions of every
// tenant without reading the others (an optional capability): replicas look for executions
// to adopt every few seconds, which must not cost a read of every execution ever run.
type ActiveExecutions interface {
	// ScanActive calls fn with every queued or running execution until it returns false.
	ScanActive(ctx context.Context, fn func(tenant string, e *svcv1.Execution) bool) error
}
