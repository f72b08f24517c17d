package postgres

import (
	"context"
	"errors"
	"fmt"
	"iter"

	"github.com/jackc/pgx/v5"

	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/storage"
)

var (
	executionTable = &table[*svcv1.Execution]{name: "executions", key: "id", body: "body",
		newT: func() *svcv1.Execution { return &svcv1.Execution{} },
		cols: []string{"plan_id", "status"},
		vals: func(e *svcv1.Execution) []any { return []any{e.GetPlanId(), e.GetStatus().String()} }}
	sourceTable = &table[*svcv1.Source]{name: "sources", key: "id", body: "body",
		newT: func() *svcv1.Source { return &svcv1.Source{} }}
	destinationTable = &table[*svcv1.Destination]{name: "destinations", key: "id", body: "body",
		newT: func() *svcv1.Destination { return &svcv1.Destination{} }}
	manifestTable = &table[*svcv1.Manifest]{name: "manifests", key: "asset_id", body: "body",
		newT: func() *svcv1.Manifest { return &svcv1.Manifest{} }}
)

type executions struct{ s *Store }

func (x *executions) Get(ctx context.Context, tenant, id string) (*svcv1.Execution, error) {
	return executionTable.get(ctx, x.s.pool, tenant, id, false)
}

func (x *executions) Update(ctx context.Context, tenant, id string, fn func(*svcv1.Execution) error, also ...storage.Write) error {
	ws, err := writesOf(also)
	if err != nil {
		return err
	}
	return x.s.inTx(ctx, func(tx pgx.Tx) error {
		if err := executionTable.update(ctx, tx, tenant, id, fn); err != nil {
			return err
		}
		return applyWrites(ctx, tx, ws)
	})
}

// PutWrite stores e when the transaction it is passed to writes it, so a function that runs
// in that transaction first may still fill it.
func (x *executions) PutWrite(tenant string, e *svcv1.Execution) storage.Write {
	return &write{func(ctx context.Context, tx pgx.Tx) error {
		return executionTable.put(ctx, tx, tenant, e.GetId(), e)
	}}
}

func (x *executions) ScanAll(ctx context.Context, fn func(string, *svcv1.Execution) bool) error {
	return executionTable.scan(ctx, x.s.pool, "", false, fn)
}

func (x *executions) Scan(ctx context.Context, tenant string, fn func(*svcv1.Execution) bool) error {
	return executionTable.scan(ctx, x.s.pool, tenant, true, func(_ string, e *svcv1.Execution) bool { return fn(e) })
}

type journal struct{ s *Store }

// Append adds entries under a transaction-scoped advisory lock on the journal: appends to one
// journal commit one after the other, so positions (from the table's sequence) increase in
// commit order and a reader following the journal never sees a lower position appear later.
func (j *journal) Append(ctx context.Context, tenant, exeID string, entries [][]byte) error {
	return j.AppendWith(ctx, tenant, exeID, entries)
}

var _ storage.FencedJournal = (*journal)(nil)

// AppendWith is Append with also (a lease's fence, storage.Leases.Held) in the same
// transaction, applied before the entries.
func (j *journal) AppendWith(ctx context.Context, tenant, exeID string, entries [][]byte, also ...storage.Write) error {
	if len(entries) == 0 {
		return nil
	}
	ws, err := writesOf(also)
	if err != nil {
		return err
	}
	return j.s.inTx(ctx, func(tx pgx.Tx) error {
		if err := applyWrites(ctx, tx, ws); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock(hashtextextended($1, 0))", "journal/"+tenant+"/"+exeID); err != nil {
			return fmt.Errorf("lock journal %s: %w", exeID, err)
		}
		_, err := tx.Exec(ctx, `INSERT INTO journal (tenant, execution_id, entry)
			SELECT $1, $2, e FROM unnest($3::bytea[]) WITH ORDINALITY AS u(e, n) ORDER BY n`, tenant, exeID, entries)
		if err != nil {
			return fmt.Errorf("append to journal %s: %w", exeID, err)
		}
		return nil
	})
}

func (j *journal) Read(ctx context.Context, tenant, exeID string) ([][]byte, error) {
	var out [][]byte
	err := j.ScanAfter(ctx, tenant, exeID, 0, func(_ uint64, b []byte) error {
		out = append(out, b)
		return nil
	})
	return out, err
}

func (j *journal) Scan(ctx context.Context, tenant, exeID string, fn func([]byte) error) error {
	return j.ScanAfter(ctx, tenant, exeID, 0, func(_ uint64, b []byte) error { return fn(b) })
}

func (j *journal) ScanAfter(ctx context.Context, tenant, exeID string, after uint64, fn func(uint64, []byte) error) error {
	rows, err := j.s.pool.Query(ctx, `SELECT pos, entry FROM journal
		WHERE tenant = $1 AND execution_id = $2 AND pos > $3 ORDER BY pos`, tenant, exeID, int64(after))
	if err != nil {
		return fmt.Errorf("read journal %s: %w", exeID, err)
	}
	defer rows.Close()
	for rows.Next() {
		var pos int64
		var entry []byte
		if err := rows.Scan(&pos, &entry); err != nil {
			return fmt.Errorf("read journal %s: %w", exeID, err)
		}
		if err := fn(uint64(pos), entry); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read journal %s: %w", exeID, err)
	}
	return nil
}

type sources struct{ s *Store }

func (x *sources) Get(ctx context.Context, tenant, id string) (*svcv1.Source, error) {
	return sourceTable.get(ctx, x.s.pool, tenant, id, false)
}

func (x *sources) Put(ctx context.Context, tenant string, src *svcv1.Source) error {
	return sourceTable.put(ctx, x.s.pool, tenant, src.GetId(), src)
}

func (x *sources) Update(ctx context.Context, tenant, id string, fn func(*svcv1.Source) error) error {
	return x.s.inTx(ctx, func(tx pgx.Tx) error { return sourceTable.update(ctx, tx, tenant, id, fn) })
}

func (x *sources) Scan(ctx context.Context, tenant string, fn func(*svcv1.Source) bool) error {
	return sourceTable.scan(ctx, x.s.pool, tenant, true, func(_ string, m *svcv1.Source) bool { return fn(m) })
}

func (x *sources) PutConfig(ctx context.Context, tenant, id string, sealed []byte) error {
	_, err := x.s.pool.Exec(ctx, `INSERT INTO configs (tenant, id, sealed) VALUES ($1, $2, $3)
		ON CONFLICT (tenant, id) DO UPDATE SET sealed = EXCLUDED.sealed`, tenant, id, sealed)
	if err != nil {
		return fmt.Errorf("write configuration of %s: %w", id, err)
	}
	return nil
}

func (x *sources) Config(ctx context.Context, tenant, id string) ([]byte, error) {
	return x.s.bytesOf(ctx, "configuration", "SELECT sealed FROM configs WHERE tenant = $1 AND id = $2", tenant, id)
}

// bytesOf reads one bytea value by tenant and id.
func (s *Store) bytesOf(ctx context.Context, what, sql, tenant, id string) ([]byte, error) {
	var b []byte
	if err := s.pool.QueryRow(ctx, sql, tenant, id).Scan(&b); errors.Is(err, pgx.ErrNoRows) {
		return nil, notFound(what, tenant, id)
	} else if err != nil {
		return nil, fmt.Errorf("read %s %s: %w", what, id, err)
	}
	return b, nil
}

type destinations struct{ s *Store }

func (x *destinations) Get(ctx context.Context, tenant, id string) (*svcv1.Destination, error) {
	return destinationTable.get(ctx, x.s.pool, tenant, id, false)
}

func (x *destinations) Put(ctx context.Context, tenant string, d *svcv1.Destination) error {
	return destinationTable.put(ctx, x.s.pool, tenant, d.GetDestinationId(), d)
}

func (x *destinations) PutOrigin(ctx context.Context, tenant, id, sourceID string) error {
	_, err := x.s.pool.Exec(ctx, `INSERT INTO destination_origins (tenant, id, source_id) VALUES ($1, $2, $3)
		ON CONFLICT (tenant, id) DO UPDATE SET source_id = EXCLUDED.source_id`, tenant, id, sourceID)
	if err != nil {
		return fmt.Errorf("write origin of %s: %w", id, err)
	}
	return nil
}

func (x *destinations) Origin(ctx context.Context, tenant, id string) (string, error) {
	var src string
	err := x.s.pool.QueryRow(ctx, "SELECT source_id FROM destination_origins WHERE tenant = $1 AND id = $2", tenant, id).Scan(&src)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", notFound("destination origin", tenant, id)
	} else if err != nil {
		return "", fmt.Errorf("read origin of %s: %w", id, err)
	}
	return src, nil
}

type receipts struct{ s *Store }

func (r *receipts) Get(ctx context.Context, tenant, id string) ([]byte, error) {
	return r.s.bytesOf(ctx, "receipt", "SELECT raw FROM receipts WHERE tenant = $1 AND id = $2", tenant, id)
}

func (r *receipts) Put(ctx context.Context, tenant, id string, raw []byte) error {
	_, err := r.s.pool.Exec(ctx, `INSERT INTO receipts (tenant, id, raw) VALUES ($1, $2, $3)
		ON CONFLICT (tenant, id) DO UPDATE SET raw = EXCLUDED.raw`, tenant, id, raw)
	if err != nil {
		return fmt.Errorf("write receipt %s: %w", id, err)
	}
	return nil
}

type manifests struct{ s *Store }

func (m *manifests) Get(ctx context.Context, tenant, assetID string) (*svcv1.Manifest, error) {
	return manifestTable.get(ctx, m.s.pool, tenant, assetID, false)
}

func (m *manifests) Put(ctx context.Context, tenant, assetID string, v *svcv1.Manifest) error {
	return manifestTable.put(ctx, m.s.pool, tenant, assetID, v)
}

func (m *manifests) Update(ctx context.Context, tenant, assetID string, fn func(*svcv1.Manifest) error) error {
	return m.s.inTx(ctx, func(tx pgx.Tx) error { return manifestTable.update(ctx, tx, tenant, assetID, fn) })
}

// Upsert reads the manifest FOR UPDATE, or makes it with create and inserts it; when another
// transaction inserted it first, the transaction runs again and updates that one.
func (m *manifests) Upsert(ctx context.Context, tenant, assetID string, create func() (*svcv1.Manifest, error), fn func(*svcv1.Manifest) error, also ...storage.Write) error {
	ws, err := writesOf(also)
	if err != nil {
		return err
	}
	return m.s.inTx(ctx, func(tx pgx.Tx) error {
		v, err := manifestTable.get(ctx, tx, tenant, assetID, true)
		switch {
		case errors.Is(err, storage.ErrNotFound):
			if v, err = create(); err != nil {
				return err
			}
			if err := fn(v); err != nil {
				return err
			}
			b, err := encode("manifest", v)
			if err != nil {
				return err
			}
			tag, err := tx.Exec(ctx, `INSERT INTO manifests (tenant, asset_id, body) VALUES ($1, $2, $3)
				ON CONFLICT (tenant, asset_id) DO NOTHING`, tenant, assetID, b)
			if err != nil {
				return fmt.Errorf("write manifest %s: %w", assetID, err)
			}
			if tag.RowsAffected() == 0 {
				return errRetry
			}
		case err != nil:
			return err
		default:
			if err := fn(v); err != nil {
				return err
			}
			if err := manifestTable.put(ctx, tx, tenant, assetID, v); err != nil {
				return err
			}
		}
		return applyWrites(ctx, tx, ws)
	})
}

func (m *manifests) Scan(ctx context.Context, tenant string, fn func(*svcv1.Manifest) bool) error {
	return manifestTable.scan(ctx, m.s.pool, tenant, false, func(_ string, v *svcv1.Manifest) bool { return fn(v) })
}

// allPage is how many records All reads per statement.
const allPage = 256

// All reads the manifests in pages of allPage, one statement each, so a slow consumer holds
// nothing open.
func (m *manifests) All(ctx context.Context, tenant string) iter.Seq2[*svcv1.Manifest, error] {
	return func(yield func(*svcv1.Manifest, error) bool) {
		after := ""
		for {
			ids, page, err := manifestTable.page(ctx, m.s.pool, tenant, after, false, allPage)
			if err != nil {
				yield(nil, err)
				return
			}
			for _, v := range page {
				if !yield(v, nil) {
					return
				}
			}
			if len(page) < allPage {
				return
			}
			after = ids[len(ids)-1]
		}
	}
}

type events struct{ s *Store }

// Write records ev in each stream named, in the transaction it is passed to.
func (e *events) Write(ev *svcv1.Event, streams ...string) (storage.Write, error) {
	b, err := encode("event", ev)
	if err != nil {
		return nil, err
	}
	return &write{func(ctx context.Context, tx pgx.Tx) error {
		for _, s := range streams {
			_, err := tx.Exec(ctx, `INSERT INTO events (tenant, id, type, body) VALUES ($1, $2, $3, $4)
				ON CONFLICT (tenant, id) DO UPDATE SET type = EXCLUDED.type, body = EXCLUDED.body`, s, ev.GetId(), ev.GetType(), b)
			if err != nil {
				return fmt.Errorf("write event %s: %w", ev.GetId(), err)
			}
		}
		return nil
	}}, nil
}
