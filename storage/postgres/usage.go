package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"svc.dev/svc/storage"
)

// Usage keeps the usage counters (usage_counters), the keys of deltas added once
// (usage_once), the usage log's offset and the organizations' ceilings.
func (s *Store) Usage() storage.Usage { return usage{s} }

type usage struct{ s *Store }

// addUsage adds deltas in tx: each counter is one upsert that adds in place, so concurrent
// adds from several processes never lose one.
func addUsage(ctx context.Context, tx pgx.Tx, deltas []storage.UsageDelta) error {
	for _, d := range deltas {
		_, err := tx.Exec(ctx, `INSERT INTO usage_counters (scope, month, meter, quantity) VALUES ($1, $2, $3, $4)
			ON CONFLICT (scope, month, meter) DO UPDATE SET quantity = usage_counters.quantity + EXCLUDED.quantity`,
			d.Scope, d.Month, d.Meter, d.Quantity)
		if err != nil {
			return fmt.Errorf("add usage %s %s %s: %w", d.Scope, d.Month, d.Meter, err)
		}
	}
	return nil
}

func (u usage) Add(ctx context.Context, deltas []storage.UsageDelta) error {
	if len(deltas) == 0 {
		return nil
	}
	return u.s.inTx(ctx, func(tx pgx.Tx) error { return addUsage(ctx, tx, deltas) })
}

// Write adds deltas in the transaction of the change they count.
func (u usage) Write(deltas []storage.UsageDelta) storage.Write {
	return &write{func(ctx context.Context, tx pgx.Tx) error { return addUsage(ctx, tx, deltas) }}
}

// AddOnce adds deltas unless key was added before; the key and the deltas commit together.
func (u usage) AddOnce(ctx context.Context, key string, deltas []storage.UsageDelta) (bool, error) {
	applied := false
	err := u.s.inTx(ctx, func(tx pgx.Tx) error {
		applied = false
		tag, err := tx.Exec(ctx, "INSERT INTO usage_once (key) VALUES ($1) ON CONFLICT (key) DO NOTHING", []byte(key))
		if err != nil {
			return fmt.Errorf("add usage once %s: %w", key, err)
		}
		if tag.RowsAffected() == 0 {
			return nil
		}
		applied = true
		return addUsage(ctx, tx, deltas)
	})
	return applied, err
}

func (u usage) Counters(ctx context.Context, scope, month string) (map[string]float64, error) {
	rows, err := u.s.pool.Query(ctx, "SELECT meter, quantity FROM usage_counters WHERE scope = $1 AND month = $2", scope, month)
	if err != nil {
		return nil, fmt.Errorf("usage of %s in %s: %w", scope, month, err)
	}
	defer rows.Close()
	out := map[string]float64{}
	for rows.Next() {
		var meter string
		var q float64
		if err := rows.Scan(&meter, &q); err != nil {
			return nil, fmt.Errorf("usage of %s in %s: %w", scope, month, err)
		}
		out[meter] = q
	}
	return out, rows.Err()
}

// Orgs lists the organizations with usage in month, in order.
func (u usage) Orgs(ctx context.Context, month string) ([]string, error) {
	rows, err := u.s.pool.Query(ctx, `SELECT DISTINCT substr(scope, 5) FROM usage_counters
		WHERE month = $1 AND starts_with(scope, 'org:') ORDER BY 1`, month)
	if err != nil {
		return nil, fmt.Errorf("organizations with usage in %s: %w", month, err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("organizations with usage in %s: %w", month, err)
	}
	return out, nil
}

func (u usage) LogOffset(ctx context.Context) (int64, error) {
	var off int64
	err := u.s.pool.QueryRow(ctx, "SELECT offset_ FROM usage_log_offset").Scan(&off)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, nil
	} else if err != nil {
		return 0, fmt.Errorf("usage log offset: %w", err)
	}
	return off, nil
}

// AddFromLog adds deltas read from the usage log and records how far it was read, together.
func (u usage) AddFromLog(ctx context.Context, deltas []storage.UsageDelta, off int64) error {
	return u.s.inTx(ctx, func(tx pgx.Tx) error {
		if err := addUsage(ctx, tx, deltas); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `INSERT INTO usage_log_offset (offset_) VALUES ($1)
			ON CONFLICT (one) DO UPDATE SET offset_ = EXCLUDED.offset_`, off)
		if err != nil {
			return fmt.Errorf("usage log offset: %w", err)
		}
		return nil
	})
}

func (u usage) SetCeiling(ctx context.Context, orgID string, c storage.Ceiling) error {
	_, err := u.s.pool.Exec(ctx, `INSERT INTO ceilings (org_id, cents, updated_at) VALUES ($1, $2, $3)
		ON CONFLICT (org_id) DO UPDATE SET cents = EXCLUDED.cents, updated_at = EXCLUDED.updated_at`, orgID, c.Cents, c.UpdatedAt)
	if err != nil {
		return fmt.Errorf("set the ceiling of %s: %w", orgID, err)
	}
	return nil
}

func (u usage) CeilingOf(ctx context.Context, orgID string) (storage.Ceiling, bool, error) {
	var c storage.Ceiling
	err := u.s.pool.QueryRow(ctx, "SELECT cents, updated_at FROM ceilings WHERE org_id = $1", orgID).Scan(&c.Cents, &c.UpdatedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return storage.Ceiling{}, false, nil
	} else if err != nil {
		return storage.Ceiling{}, false, fmt.Errorf("the ceiling of %s: %w", orgID, err)
	}
	return c, true, nil
}
