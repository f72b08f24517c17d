package postgres

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"strings"

	"github.com/jackc/pgx/v5"
	"google.golang.org/protobuf/proto"

	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/storage"
)

var (
	jobTable = &table[*svcv1.Job]{name: "jobs", key: "id", body: "body",
		newT: func() *svcv1.Job { return &svcv1.Job{} },
		cols: []string{"kind", "status"},
		vals: func(j *svcv1.Job) []any { return []any{j.GetKind().String(), j.GetStatus().String()} }}
	auditTable = &table[*svcv1.AuditEntry]{name: "audit", key: "id", body: "body",
		newT: func() *svcv1.AuditEntry { return &svcv1.AuditEntry{} }}
	meterTable = &table[*svcv1.Meter]{name: "meters", key: "id", body: "body",
		newT: func() *svcv1.Meter { return &svcv1.Meter{} }}
	trialTable = &table[*svcv1.Trial]{name: "trials", key: "id", body: "body",
		newT: func() *svcv1.Trial { return &svcv1.Trial{} }}
	eventTable = &table[*svcv1.Event]{name: "events", key: "id", body: "body",
		newT: func() *svcv1.Event { return &svcv1.Event{} },
		cols: []string{"type"},
		vals: func(e *svcv1.Event) []any { return []any{e.GetType()} }}
	// planHeaderTable writes headers through the lists: the state column follows the header,
	// the object count stays what Plans.Put stored.
	planHeaderTable = &table[*svcv1.Plan]{name: "plans", key: "id", body: "header",
		newT: func() *svcv1.Plan { return &svcv1.Plan{} },
		cols: []string{"state"},
		vals: func(p *svcv1.Plan) []any { return []any{p.GetState().String()} }}
)

// Resources are the API's listable resources, each a table.
func (s *Store) Resources() storage.Resources { return resources{s} }

type resources struct{ s *Store }

func (r resources) Jobs() storage.Records[*svcv1.Job] { return &records[*svcv1.Job]{r.s, jobTable} }
func (r resources) Sources() storage.Records[*svcv1.Source] {
	return &records[*svcv1.Source]{r.s, sourceTable}
}
func (r resources) Destinations() storage.Records[*svcv1.Destination] {
	return &records[*svcv1.Destination]{r.s, destinationTable}
}
func (r resources) Executions() storage.Records[*svcv1.Execution] {
	return &records[*svcv1.Execution]{r.s, executionTable}
}
func (r resources) PlanHeaders() storage.Records[*svcv1.Plan] {
	return &records[*svcv1.Plan]{r.s, planHeaderTable}
}
func (r resources) Manifests() storage.Records[*svcv1.Manifest] {
	return &records[*svcv1.Manifest]{r.s, manifestTable}
}
func (r resources) Audit() storage.Records[*svcv1.AuditEntry] {
	return &records[*svcv1.AuditEntry]{r.s, auditTable}
}
func (r resources) EventLog() storage.Records[*svcv1.Event] {
	return &records[*svcv1.Event]{r.s, eventTable}
}
func (r resources) Meters() storage.Records[*svcv1.Meter] {
	return &records[*svcv1.Meter]{r.s, meterTable}
}
func (r resources) Trials() storage.Records[*svcv1.Trial] {
	return &records[*svcv1.Trial]{r.s, trialTable}
}

// ListExecutions lists executions in a repeatable-read transaction; the filter reads an
// execution's plan header in the same snapshot.
func (r resources) ListExecutions(ctx context.Context, tenant, after string, limit int,
	keep func(x *svcv1.Execution, plan func() (*svcv1.Plan, error)) bool) (storage.Page[*svcv1.Execution], error) {
	var page storage.Page[*svcv1.Execution]
	err := r.s.inTxWith(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		var k func(*svcv1.Execution) bool
		if keep != nil {
			k = func(x *svcv1.Execution) bool {
				return keep(x, func() (*svcv1.Plan, error) { return headerTable.get(ctx, tx, tenant, x.GetPlanId(), false) })
			}
		}
		var err error
		page, err = list(ctx, tx, executionTable, tenant, after, limit, k)
		return err
	})
	return page, err
}

// records is storage.Records over one table.
type records[T proto.Message] struct {
	s *Store
	t *table[T]
}

func (r *records[T]) Get(ctx context.Context, tenant, id string) (T, error) {
	return r.t.get(ctx, r.s.pool, tenant, id, false)
}

func (r *records[T]) Put(ctx context.Context, tenant, id string, m T, also ...storage.Write) error {
	ws, err := writesOf(also)
	if err != nil {
		return err
	}
	if len(ws) == 0 {
		return r.t.put(ctx, r.s.pool, tenant, id, m)
	}
	return r.s.inTx(ctx, func(tx pgx.Tx) error {
		if err := r.t.put(ctx, tx, tenant, id, m); err != nil {
			return err
		}
		return applyWrites(ctx, tx, ws)
	})
}

func (r *records[T]) PutMany(ctx context.Context, items []storage.Item[T]) error {
	return r.s.inTx(ctx, func(tx pgx.Tx) error {
		for _, it := range items {
			if err := r.t.put(ctx, tx, it.Tenant, it.ID, it.Value); err != nil {
				return err
			}
		}
		return nil
	})
}

func (r *records[T]) Delete(ctx context.Context, tenant, id string) error {
	if _, err := r.s.pool.Exec(ctx, fmt.Sprintf("DELETE FROM %s WHERE tenant = $1 AND %s = $2", r.t.name, r.t.key), tenant, id); err != nil {
		return fmt.Errorf("delete %s %s: %w", r.t.name, id, err)
	}
	return nil
}

func (r *records[T]) Update(ctx context.Context, tenant, id string, fn func(T) error, also ...storage.Write) error {
	ws, err := writesOf(also)
	if err != nil {
		return err
	}
	return r.s.inTx(ctx, func(tx pgx.Tx) error {
		if err := r.t.update(ctx, tx, tenant, id, fn); err != nil {
			return err
		}
		return applyWrites(ctx, tx, ws)
	})
}

func (r *records[T]) List(ctx context.Context, tenant, after string, limit int, keep func(T) bool) (storage.Page[T], error) {
	return list(ctx, r.s.pool, r.t, tenant, after, limit, keep)
}

// listChunk is how many rows a filtered list reads per statement.
const listChunk = 200

// list reads the tenant's records newest first from after, in statements of listChunk rows
// (or limit+1 when nothing is filtered out), filters them in Go, and stops once it holds limit
// kept records and knows whether another follows: the filter is a Go function, so SQL cannot
// apply it before the limit.
func list[T proto.Message](ctx context.Context, q querier, t *table[T], tenant, after string, limit int, keep func(T) bool) (storage.Page[T], error) {
	var page storage.Page[T]
	chunk := listChunk
	if keep == nil {
		chunk = limit + 1
	}
	var lastKept string
	for {
		ids, recs, err := t.page(ctx, q, tenant, after, true, chunk)
		if err != nil {
			return page, err
		}
		for i, m := range recs {
			if keep != nil && !keep(m) {
				continue
			}
			if len(page.Items) == limit {
				page.Last = lastKept
				return page, nil
			}
			page.Items = append(page.Items, m)
			lastKept = ids[i]
		}
		if len(recs) < chunk {
			return page, nil
		}
		after = ids[len(ids)-1]
	}
}

func (r *records[T]) Scan(ctx context.Context, tenant string, fn func(T) bool) error {
	return r.t.scan(ctx, r.s.pool, tenant, false, func(_ string, m T) bool { return fn(m) })
}

func (r *records[T]) All(ctx context.Context, tenant string, keep func(T) bool) iter.Seq2[T, error] {
	return r.all(ctx, tenant, "", keep)
}

func (r *records[T]) AllUnder(ctx context.Context, tenant, idPrefix string) iter.Seq2[T, error] {
	return r.all(ctx, tenant, idPrefix, nil)
}

// all reads a page of allPage rows per statement, oldest first, so a slow consumer holds
// nothing open.
func (r *records[T]) all(ctx context.Context, tenant, prefix string, keep func(T) bool) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		var zero T
		after := ""
		sql := fmt.Sprintf(`SELECT %s, %s FROM %s WHERE tenant = $1 AND %s > $2 AND starts_with(%s, $3)
			ORDER BY %s LIMIT $4`, r.t.key, r.t.body, r.t.name, r.t.key, r.t.key, r.t.key)
		for {
			rows, err := r.s.pool.Query(ctx, sql, tenant, after, prefix, allPage)
			if err != nil {
				yield(zero, fmt.Errorf("read %s: %w", r.t.name, err))
				return
			}
			type rec struct {
				Key  string
				Body []byte
			}
			page, err := pgx.CollectRows(rows, pgx.RowToStructByPos[rec])
			if err != nil {
				yield(zero, fmt.Errorf("read %s: %w", r.t.name, err))
				return
			}
			for _, p := range page {
				m := r.t.newT()
				if err := decode(r.t.name, p.Body, m); err != nil {
					yield(zero, err)
					return
				}
				if keep != nil && !keep(m) {
					continue
				}
				if !yield(m, nil) {
					return
				}
			}
			if len(page) < allPage {
				return
			}
			after = page[len(page)-1].Key
		}
	}
}

func (r *records[T]) Count(ctx context.Context, tenant string, keep func(T) bool) (int, error) {
	if keep == nil {
		var n int
		err := r.s.pool.QueryRow(ctx, fmt.Sprintf("SELECT count(*) FROM %s WHERE tenant = $1", r.t.name), tenant).Scan(&n)
		if err != nil {
			return 0, fmt.Errorf("count %s: %w", r.t.name, err)
		}
		return n, nil
	}
	n := 0
	err := r.t.scan(ctx, r.s.pool, tenant, false, func(_ string, m T) bool {
		if keep(m) {
			n++
		}
		return true
	})
	return n, err
}

func (r *records[T]) ScanAll(ctx context.Context, fn func(tenant, id string, m T) bool) error {
	rows, err := r.s.pool.Query(ctx, fmt.Sprintf("SELECT tenant, %s, %s FROM %s ORDER BY tenant, %s", r.t.key, r.t.body, r.t.name, r.t.key))
	if err != nil {
		return fmt.Errorf("scan %s: %w", r.t.name, err)
	}
	defer rows.Close()
	for rows.Next() {
		var tenant, id string
		var b []byte
		if err := rows.Scan(&tenant, &id, &b); err != nil {
			return fmt.Errorf("scan %s: %w", r.t.name, err)
		}
		m := r.t.newT()
		if err := decode(r.t.name, b, m); err != nil {
			return err
		}
		if !fn(tenant, id, m) {
			return nil
		}
	}
	return rows.Err()
}

// ownedTables are the tables of the kinds the API addresses by id, each with an index on id.
var ownedTables = []string{"plans", "executions", "sources", "destinations", "jobs", "receipts", "vault_objects", "meters", "trials"}

// OwnerOf returns the tenant holding the resource with this id, looked up in every table of
// a kind addressed by id.
func (s *Store) OwnerOf(ctx context.Context, id string) (string, error) {
	parts := make([]string, len(ownedTables))
	for i, t := range ownedTables {
		parts[i] = fmt.Sprintf("SELECT tenant FROM %s WHERE id = $1", t)
	}
	var tenant string
	err := s.pool.QueryRow(ctx, strings.Join(parts, " UNION ALL ")+" LIMIT 1", id).Scan(&tenant)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", fmt.Errorf("owner of %s: %w", id, storage.ErrNotFound)
	} else if err != nil {
		return "", fmt.Errorf("owner of %s: %w", id, err)
	}
	return tenant, nil
}

// VaultTenants lists the tenants that have a vault (a data key), in order.
func (s *Store) VaultTenants(ctx context.Context) ([]string, error) {
	return (&VaultMeta{s}).Tenants(ctx)
}
