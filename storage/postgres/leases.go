package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/storage"
)

// Leases are shared by every process on the database (table leases). Expiry is judged by
// the database's clock (clock_timestamp()), so replicas need not agree on the time.
func (s *Store) Leases() storage.Leases { return &leases{s} }

var _ storage.Leaser = (*Store)(nil)

type leases struct{ s *Store }

// Claim inserts the lease, or takes over the row when it expired, or renews it when holder
// has it; a row held by another holder and not expired is left alone (no row returned).
func (l *leases) Claim(ctx context.Context, name, holder string, ttl time.Duration) (storage.Lease, error) {
	out := storage.Lease{Name: name, Holder: holder}
	err := l.s.pool.QueryRow(ctx, `INSERT INTO leases AS l (name, holder, token, expires_at)
		VALUES ($1, $2, nextval('lease_tokens'), clock_timestamp() + $3 * interval '1 microsecond')
		ON CONFLICT (name) DO UPDATE SET
			token = CASE WHEN l.holder = excluded.holder AND l.expires_at > clock_timestamp() THEN l.token ELSE excluded.token END,
			holder = excluded.holder, expires_at = excluded.expires_at
		WHERE l.holder = excluded.holder OR l.expires_at <= clock_timestamp()
		RETURNING token, expires_at`, name, holder, ttl.Microseconds()).Scan(&out.Token, &out.Expires)
	if errors.Is(err, pgx.ErrNoRows) {
		return storage.Lease{}, fmt.Errorf("claim %s: %w", name, storage.ErrLeaseHeld)
	}
	if err != nil {
		return storage.Lease{}, fmt.Errorf("claim %s: %w", name, err)
	}
	return out, nil
}

func (l *leases) Renew(ctx context.Context, lease storage.Lease, ttl time.Duration) (storage.Lease, error) {
	err := l.s.pool.QueryRow(ctx, `UPDATE leases SET expires_at = clock_timestamp() + $4 * interval '1 microsecond'
		WHERE name = $1 AND holder = $2 AND token = $3 AND expires_at > clock_timestamp()
		RETURNING expires_at`, lease.Name, lease.Holder, lease.Token, ttl.Microseconds()).Scan(&lease.Expires)
	if errors.Is(err, pgx.ErrNoRows) {
		return storage.Lease{}, fmt.Errorf("renew %s: %w", lease.Name, storage.ErrLeaseLost)
	}
	if err != nil {
		return storage.Lease{}, fmt.Errorf("renew %s: %w", lease.Name, err)
	}
	return lease, nil
}

func (l *leases) Release(ctx context.Context, lease storage.Lease) error {
	if _, err := l.s.pool.Exec(ctx, "DELETE FROM leases WHERE name = $1 AND holder = $2 AND token = $3",
		lease.Name, lease.Holder, lease.Token); err != nil {
		return fmt.Errorf("release %s: %w", lease.Name, err)
	}
	return nil
}

// Held reads the lease's row FOR SHARE: a claim that would take it over (an UPDATE of the
// row) waits until the fenced transaction ends, so what that transaction wrote happened
// while the lease was held, and nothing it writes lands after a takeover.
func (l *leases) Held(lease storage.Lease) storage.Write {
	return &write{apply: func(ctx context.Context, tx pgx.Tx) error {
		var one int
		err := tx.QueryRow(ctx, `SELECT 1 FROM leases WHERE name = $1 AND holder = $2 AND token = $3
			AND expires_at > clock_timestamp() FOR SHARE`, lease.Name, lease.Holder, lease.Token).Scan(&one)
		if errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("lease %s: %w", lease.Name, storage.ErrLeaseLost)
		}
		if err != nil {
			return fmt.Errorf("lease %s: %w", lease.Name, err)
		}
		return nil
	}}
}

var _ storage.ActiveExecutions = (*executions)(nil)

// ScanActive reads the executions whose status (an indexed column) is queued or running.
func (x *executions) ScanActive(ctx context.Context, fn func(string, *svcv1.Execution) bool) error {
	rows, err := x.s.pool.Query(ctx, "SELECT tenant, body FROM executions WHERE status = ANY($1) ORDER BY tenant, id",
		[]string{svcv1.ExecutionStatus_EXECUTION_STATUS_QUEUED.String(), svcv1.ExecutionStatus_EXECUTION_STATUS_RUNNING.String()})
	if err != nil {
		return fmt.Errorf("scan active executions: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var tenant string
		var b []byte
		if err := rows.Scan(&tenant, &b); err != nil {
			return fmt.Errorf("scan active executions: %w", err)
		}
		e := &svcv1.Execution{}
		if err := decode("executions", b, e); err != nil {
			return err
		}
		if !fn(tenant, e) {
			return nil
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("scan active executions: %w", err)
	}
	return nil
}
