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

// PlanChunk is how many objects Objects yields at a time.
const PlanChunk = 1024

// plans keeps each plan as a header row (the plan without its objects, in plans) and one row
// per object (plan_objects, by index), written in one transaction.
type plans struct{ s *Store }

// headerTable reads plan headers; putHeader writes them (with their object count).
var headerTable = &table[*svcv1.Plan]{name: "plans", key: "id", body: "header",
	newT: func() *svcv1.Plan { return &svcv1.Plan{} }}

// putHeader stores the header of p with n objects.
func putHeader(ctx context.Context, tx pgx.Tx, tenant string, p *svcv1.Plan, n int) error {
	objs := p.Objects
	p.Objects = nil
	b, err := encode("plan", p)
	p.Objects = objs
	if err != nil {
		return err
	}
	_, err = tx.Exec(ctx, `INSERT INTO plans (tenant, id, state, n_objects, header) VALUES ($1, $2, $3, $4, $5)
		ON CONFLICT (tenant, id) DO UPDATE SET state = EXCLUDED.state, n_objects = EXCLUDED.n_objects, header = EXCLUDED.header`,
		tenant, p.GetPlanId(), p.GetState().String(), n, b)
	if err != nil {
		return fmt.Errorf("write plan %s: %w", p.GetPlanId(), err)
	}
	return nil
}

// Put stores the header, then the objects with COPY, then also, in one transaction.
func (ps *plans) Put(ctx context.Context, tenant string, p *svcv1.Plan, also ...storage.Write) error {
	ws, err := writesOf(also)
	if err != nil {
		return err
	}
	rows := make([][]any, len(p.Objects))
	for i, o := range p.Objects {
		b, err := encode("plan object", o)
		if err != nil {
			return err
		}
		rows[i] = []any{tenant, p.GetPlanId(), i, b}
	}
	return ps.s.inTx(ctx, func(tx pgx.Tx) error {
		if err := putHeader(ctx, tx, tenant, p, len(p.Objects)); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, "DELETE FROM plan_objects WHERE tenant = $1 AND plan_id = $2", tenant, p.GetPlanId()); err != nil {
			return fmt.Errorf("write plan %s: %w", p.GetPlanId(), err)
		}
		if len(rows) > 0 {
			if _, err := tx.CopyFrom(ctx, pgx.Identifier{"plan_objects"}, []string{"tenant", "plan_id", "idx", "object"},
				pgx.CopyFromRows(rows)); err != nil {
				return fmt.Errorf("write the objects of plan %s: %w", p.GetPlanId(), err)
			}
		}
		return applyWrites(ctx, tx, ws)
	})
}

func (ps *plans) Header(ctx context.Context, tenant, id string) (*svcv1.Plan, error) {
	return headerTable.get(ctx, ps.s.pool, tenant, id, false)
}

func (ps *plans) Get(ctx context.Context, tenant, id string) (*svcv1.Plan, error) {
	p, err := ps.Header(ctx, tenant, id)
	if err != nil {
		return nil, err
	}
	return p, ps.Fill(ctx, tenant, p)
}

func (ps *plans) Fill(ctx context.Context, tenant string, p *svcv1.Plan) error {
	if len(p.Objects) > 0 {
		return nil
	}
	objs, err := objectsOf(ctx, ps.s.pool, tenant, p.GetPlanId(), 0, -1)
	if err != nil {
		return err
	}
	p.Objects = objs
	return nil
}

// objectsOf reads the objects of a plan from index start, at most limit of them (-1: all).
func objectsOf(ctx context.Context, q querier, tenant, planID string, start, limit int) ([]*svcv1.PlanObject, error) {
	sql := "SELECT object FROM plan_objects WHERE tenant = $1 AND plan_id = $2 AND idx >= $3 ORDER BY idx"
	args := []any{tenant, planID, start}
	if limit >= 0 {
		sql += " LIMIT $4"
		args = append(args, limit)
	}
	rows, err := q.Query(ctx, sql, args...)
	if err != nil {
		return nil, fmt.Errorf("read the objects of plan %s: %w", planID, err)
	}
	defer rows.Close()
	var out []*svcv1.PlanObject
	for rows.Next() {
		var b []byte
		if err := rows.Scan(&b); err != nil {
			return nil, fmt.Errorf("read the objects of plan %s: %w", planID, err)
		}
		o := &svcv1.PlanObject{}
		if err := decode("plan object", b, o); err != nil {
			return nil, err
		}
		out = append(out, o)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read the objects of plan %s: %w", planID, err)
	}
	return out, nil
}

// FillSmall reads the objects of every plan in one statement, unless they hold more than
// limit in all.
func (ps *plans) FillSmall(ctx context.Context, tenant string, list []*svcv1.Plan, limit int) (bool, error) {
	total := 0
	var ids []string
	for _, p := range list {
		if total += int(p.GetProjection().GetObjectCount()); total > limit {
			return false, nil
		}
		if len(p.Objects) == 0 {
			ids = append(ids, p.GetPlanId())
		}
	}
	if len(ids) == 0 {
		return true, nil
	}
	rows, err := ps.s.pool.Query(ctx, `SELECT plan_id, object FROM plan_objects
		WHERE tenant = $1 AND plan_id = ANY($2) ORDER BY plan_id, idx LIMIT $3`, tenant, ids, limit+1)
	if err != nil {
		return false, fmt.Errorf("read the objects of plans: %w", err)
	}
	defer rows.Close()
	found := map[string][]*svcv1.PlanObject{}
	n := 0
	for rows.Next() {
		var id string
		var b []byte
		if err := rows.Scan(&id, &b); err != nil {
			return false, fmt.Errorf("read the objects of plans: %w", err)
		}
		if n++; n > limit {
			return false, nil // the projections undercounted: the caller streams instead
		}
		o := &svcv1.PlanObject{}
		if err := decode("plan object", b, o); err != nil {
			return false, err
		}
		found[id] = append(found[id], o)
	}
	if err := rows.Err(); err != nil {
		return false, fmt.Errorf("read the objects of plans: %w", err)
	}
	for _, p := range list {
		if len(p.Objects) == 0 {
			p.Objects = found[p.GetPlanId()]
		}
	}
	return true, nil
}

// Objects yields the objects PlanChunk at a time, each chunk read by its own statement.
func (ps *plans) Objects(ctx context.Context, tenant, id string) iter.Seq2[[]*svcv1.PlanObject, error] {
	return func(yield func([]*svcv1.PlanObject, error) bool) {
		if _, err := ps.Header(ctx, tenant, id); err != nil {
			yield(nil, err)
			return
		}
		for start := 0; ; start += PlanChunk {
			objs, err := objectsOf(ctx, ps.s.pool, tenant, id, start, PlanChunk)
			if err != nil {
				yield(nil, err)
				return
			}
			if len(objs) == 0 || !yield(objs, nil) || len(objs) < PlanChunk {
				return
			}
		}
	}
}

// Page reads one more object than asked, to tell whether more follow.
func (ps *plans) Page(ctx context.Context, tenant string, h *svcv1.Plan, start, limit int) ([]*svcv1.PlanObject, bool, error) {
	if len(h.Objects) > 0 {
		end := min(len(h.Objects), start+limit)
		if start >= end {
			return nil, false, nil
		}
		return h.Objects[start:end], end < len(h.Objects), nil
	}
	objs, err := objectsOf(ctx, ps.s.pool, tenant, h.GetPlanId(), start, limit+1)
	if err != nil {
		return nil, false, err
	}
	if len(objs) > limit {
		return objs[:limit], true, nil
	}
	return objs, false, nil
}

// Update reads the header FOR UPDATE and the objects in the transaction, runs fn on the
// whole plan and stores its header; the plan fn changed keeps its objects.
func (ps *plans) Update(ctx context.Context, tenant, id string, fn func(*svcv1.Plan) error, also ...storage.Write) error {
	return ps.update(ctx, tenant, id, true, fn, also)
}

// UpdateHeader is Update without reading the objects.
func (ps *plans) UpdateHeader(ctx context.Context, tenant, id string, fn func(*svcv1.Plan) error, also ...storage.Write) error {
	return ps.update(ctx, tenant, id, false, fn, also)
}

func (ps *plans) update(ctx context.Context, tenant, id string, whole bool, fn func(*svcv1.Plan) error, also []storage.Write) error {
	ws, err := writesOf(also)
	if err != nil {
		return err
	}
	return ps.s.inTx(ctx, func(tx pgx.Tx) error {
		var n int
		var b []byte
		err := tx.QueryRow(ctx, "SELECT n_objects, header FROM plans WHERE tenant = $1 AND id = $2 FOR UPDATE", tenant, id).Scan(&n, &b)
		if errors.Is(err, pgx.ErrNoRows) {
			return notFound("plan", tenant, id)
		} else if err != nil {
			return fmt.Errorf("read plan %s: %w", id, err)
		}
		p := &svcv1.Plan{}
		if err := decode("plan", b, p); err != nil {
			return err
		}
		if whole {
			if p.Objects, err = objectsOf(ctx, tx, tenant, id, 0, -1); err != nil {
				return err
			}
		}
		if err := fn(p); err != nil {
			return err
		}
		if err := putHeader(ctx, tx, tenant, p, n); err != nil {
			return err
		}
		return applyWrites(ctx, tx, ws)
	})
}

func (ps *plans) Scan(ctx context.Context, tenant string, fn func(*svcv1.Plan) bool) error {
	return headerTable.scan(ctx, ps.s.pool, tenant, true, func(_ string, p *svcv1.Plan) bool { return fn(p) })
}
