package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"google.golang.org/protobuf/proto"
)

// table is one kind of protobuf record kept by tenant and id in a table of its own: the
// columns tenant, key (id by default) and body, and the columns cols extracts from a record
// (what lists filter on).
type table[T proto.Message] struct {
	name string
	key  string // the id column
	body string // the record column
	newT func() T
	// cols are the extra columns, set from a record by vals.
	cols []string
	vals func(T) []any
}

func (t *table[T]) get(ctx context.Context, q querier, tenant, id string, forUpdate bool) (T, error) {
	sql := fmt.Sprintf("SELECT %s FROM %s WHERE tenant = $1 AND %s = $2", t.body, t.name, t.key)
	if forUpdate {
		sql += " FOR UPDATE"
	}
	var b []byte
	var zero T
	if err := q.QueryRow(ctx, sql, tenant, id).Scan(&b); errors.Is(err, pgx.ErrNoRows) {
		return zero, notFound(t.name, tenant, id)
	} else if err != nil {
		return zero, fmt.Errorf("read %s %s: %w", t.name, id, err)
	}
	m := t.newT()
	if err := decode(t.name, b, m); err != nil {
		return zero, err
	}
	return m, nil
}

// put stores m as the record id of tenant, replacing any previous version.
func (t *table[T]) put(ctx context.Context, q querier, tenant, id string, m T) error {
	b, err := encode(t.name, m)
	if err != nil {
		return err
	}
	cols := append([]string{"tenant", t.key, t.body}, t.cols...)
	args := []any{tenant, id, b}
	if t.vals != nil {
		args = append(args, t.vals(m)...)
	}
	ph := make([]string, len(cols))
	set := make([]string, 0, len(cols)-2)
	for i, c := range cols {
		ph[i] = fmt.Sprintf("$%d", i+1)
		if i >= 2 {
			set = append(set, c+" = EXCLUDED."+c)
		}
	}
	sql := fmt.Sprintf("INSERT INTO %s (%s) VALUES (%s) ON CONFLICT (tenant, %s) DO UPDATE SET %s",
		t.name, strings.Join(cols, ", "), strings.Join(ph, ", "), t.key, strings.Join(set, ", "))
	if _, err := q.Exec(ctx, sql, args...); err != nil {
		return fmt.Errorf("write %s %s: %w", t.name, id, err)
	}
	return nil
}

// update applies fn to the record read FOR UPDATE in tx and stores it.
func (t *table[T]) update(ctx context.Context, tx pgx.Tx, tenant, id string, fn func(T) error) error {
	m, err := t.get(ctx, tx, tenant, id, true)
	if err != nil {
		return err
	}
	if err := fn(m); err != nil {
		return err
	}
	return t.put(ctx, tx, tenant, id, m)
}

// scan calls fn with the tenant's records in key order (descending when newest), until fn
// returns false; with tenant "" it scans every tenant's, and fn gets each record's tenant.
func (t *table[T]) scan(ctx context.Context, q querier, tenant string, newest bool, fn func(tenant string, m T) bool) error {
	order := "ASC"
	if newest {
		order = "DESC"
	}
	var rows pgx.Rows
	var err error
	if tenant == "" {
		rows, err = q.Query(ctx, fmt.Sprintf("SELECT tenant, %s FROM %s ORDER BY tenant, %s %s", t.body, t.name, t.key, order))
	} else {
		rows, err = q.Query(ctx, fmt.Sprintf("SELECT tenant, %s FROM %s WHERE tenant = $1 ORDER BY %s %s", t.body, t.name, t.key, order), tenant)
	}
	if err != nil {
		return fmt.Errorf("scan %s: %w", t.name, err)
	}
	defer rows.Close()
	for rows.Next() {
		var tn string
		var b []byte
		if err := rows.Scan(&tn, &b); err != nil {
			return fmt.Errorf("scan %s: %w", t.name, err)
		}
		m := t.newT()
		if err := decode(t.name, b, m); err != nil {
			return err
		}
		if !fn(tn, m) {
			return nil
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("scan %s: %w", t.name, err)
	}
	return nil
}

// page returns up to limit records of tenant with keys after after (before, when newest),
// in key order, read in one statement.
func (t *table[T]) page(ctx context.Context, q querier, tenant, after string, newest bool, limit int) ([]string, []T, error) {
	cmp, order := ">", "ASC"
	if newest {
		cmp, order = "<", "DESC"
	}
	sql := fmt.Sprintf("SELECT %s, %s FROM %s WHERE tenant = $1 AND ($2 = '' OR %s %s $2) ORDER BY %s %s LIMIT $3",
		t.key, t.body, t.name, t.key, cmp, t.key, order)
	rows, err := q.Query(ctx, sql, tenant, after, limit)
	if err != nil {
		return nil, nil, fmt.Errorf("list %s: %w", t.name, err)
	}
	defer rows.Close()
	var ids []string
	var out []T
	for rows.Next() {
		var k string
		var b []byte
		if err := rows.Scan(&k, &b); err != nil {
			return nil, nil, fmt.Errorf("list %s: %w", t.name, err)
		}
		m := t.newT()
		if err := decode(t.name, b, m); err != nil {
			return nil, nil, err
		}
		ids, out = append(ids, k), append(out, m)
	}
	if err := rows.Err(); err != nil {
		return nil, nil, fmt.Errorf("list %s: %w", t.name, err)
	}
	return ids, out, nil
}
