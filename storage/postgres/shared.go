package postgres

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"

	"svc.dev/svc/storage"
)

// The capabilities of a store shared by replicas (storage.Secrets, storage.UsageLog).
var (
	_ storage.Secrets  = (*Store)(nil)
	_ storage.UsageLog = usage{}
)

// Secret returns a shared secret, sealed as it was stored (table secrets).
func (s *Store) Secret(ctx context.Context, name string) ([]byte, int64, error) {
	var sealed []byte
	var v int64
	err := s.pool.QueryRow(ctx, "SELECT sealed, version FROM secrets WHERE name = $1", name).Scan(&sealed, &v)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, 0, fmt.Errorf("secret %s: %w", name, storage.ErrNotFound)
	} else if err != nil {
		return nil, 0, fmt.Errorf("secret %s: %w", name, err)
	}
	return sealed, v, nil
}

// PutSecret stores a secret over the version the caller read: one statement that inserts
// (version 0) or updates the row only while it still has that version.
func (s *Store) PutSecret(ctx context.Context, name string, sealed []byte, version int64) (int64, error) {
	var tag interface{ RowsAffected() int64 }
	var err error
	if version == 0 {
		tag, err = s.pool.Exec(ctx, "INSERT INTO secrets (name, version, sealed) VALUES ($1, 1, $2) ON CONFLICT (name) DO NOTHING", name, sealed)
	} else {
		tag, err = s.pool.Exec(ctx, "UPDATE secrets SET version = version + 1, sealed = $2 WHERE name = $1 AND version = $3", name, sealed, version)
	}
	if err != nil {
		return 0, fmt.Errorf("store secret %s: %w", name, err)
	}
	if tag.RowsAffected() == 0 {
		return 0, fmt.Errorf("store secret %s over version %d: %w", name, version, storage.ErrVersionChanged)
	}
	return version + 1, nil
}

// AppendLog inserts one row per delta, in one statement.
func (u usage) AppendLog(ctx context.Context, deltas []storage.UsageDelta) error {
	if len(deltas) == 0 {
		return nil
	}
	scopes, months, meters := make([]string, len(deltas)), make([]string, len(deltas)), make([]string, len(deltas))
	qty := make([]float64, len(deltas))
	for i, d := range deltas {
		scopes[i], months[i], meters[i], qty[i] = d.Scope, d.Month, d.Meter, d.Quantity
	}
	_, err := u.s.pool.Exec(ctx, `INSERT INTO usage_log (scope, month, meter, quantity)
		SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::float8[])`, scopes, months, meters, qty)
	if err != nil {
		return fmt.Errorf("usage log: append: %w", err)
	}
	return nil
}

// ApplyLog deletes up to limit logged rows, oldest first, skipping rows another replica's
// ApplyLog holds (FOR UPDATE SKIP LOCKED), and adds their sums to the counters in the same
// transaction: a row is added by the transaction that deleted it, so once.
func (u usage) ApplyLog(ctx context.Context, limit int) ([]storage.UsageDelta, bool, error) {
	var out []storage.UsageDelta
	more := false
	err := u.s.inTx(ctx, func(tx pgx.Tx) error {
		out, more = nil, false
		rows, err := tx.Query(ctx, `WITH taken AS (
				DELETE FROM usage_log WHERE seq IN (
					SELECT seq FROM usage_log ORDER BY seq LIMIT $1 FOR UPDATE SKIP LOCKED)
				RETURNING scope, month, meter, quantity)
			SELECT scope, month, meter, sum(quantity), count(*) FROM taken GROUP BY scope, month, meter`, limit)
		if err != nil {
			return fmt.Errorf("usage log: take: %w", err)
		}
		var n int64
		for rows.Next() {
			var d storage.UsageDelta
			var c int64
			if err := rows.Scan(&d.Scope, &d.Month, &d.Meter, &d.Quantity, &c); err != nil {
				rows.Close()
				return fmt.Errorf("usage log: take: %w", err)
			}
			out, n = append(out, d), n+c
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return fmt.Errorf("usage log: take: %w", err)
		}
		// One order for every replica's upserts, so two never wait on each other in a cycle.
		slices.SortFunc(out, func(a, b storage.UsageDelta) int {
			return cmp.Or(cmp.Compare(a.Scope, b.Scope), cmp.Compare(a.Month, b.Month), cmp.Compare(a.Meter, b.Meter))
		})
		more = n >= int64(limit)
		return addUsage(ctx, tx, out)
	})
	if err != nil {
		return nil, false, err
	}
	return out, more, nil
}
