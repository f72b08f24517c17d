package postgres

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"svc.dev/svc/storage"
	"svc.dev/svc/vault"
)

// VaultMeta is the vault's records on PostgreSQL (vault.Meta and vault.RewrapStore): objects,
// blobs and packs as the vault's JSON in tables of their own, and the tenants' wrapped data
// keys.
type VaultMeta struct{ s *Store }

var (
	_ vault.Meta        = (*VaultMeta)(nil)
	_ vault.RewrapStore = (*VaultMeta)(nil)
)

// View runs fn in a read-only, repeatable-read transaction: one consistent view.
func (m *VaultMeta) View(ctx context.Context, tenant string, fn func(vault.MetaTx) error) error {
	return m.s.inTxWith(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		return fn(&metaTx{ctx: ctx, tx: tx, tenant: tenant})
	})
}

// Update runs fn in one transaction holding a lock on the tenant's vault records, so that
// the tenant's updates (a blob's reference count read and written back) run one at a time, as
// on bbolt; tenants do not wait for each other.
func (m *VaultMeta) Update(ctx context.Context, tenant string, fn func(vault.MetaTx) error) error {
	return m.s.inTx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock(hashtextextended($1, 0))", "vault/"+tenant); err != nil {
			return fmt.Errorf("lock the vault records of %s: %w", tenant, err)
		}
		return fn(&metaTx{ctx: ctx, tx: tx, tenant: tenant, writable: true})
	})
}

// WrappedKey implements vault.KeyStore.
func (m *VaultMeta) WrappedKey(ctx context.Context, tenant string) ([]byte, error) {
	var b []byte
	err := m.s.pool.QueryRow(ctx, "SELECT wrapped FROM vault_keys WHERE tenant = $1", tenant).Scan(&b)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("data key of %s: %w", tenant, vault.ErrNotFound)
	} else if err != nil {
		return nil, fmt.Errorf("read the data key of %s: %w", tenant, err)
	}
	return b, nil
}

// CreateWrappedKey implements vault.KeyStore: the first key stored wins, and every caller
// gets it.
func (m *VaultMeta) CreateWrappedKey(ctx context.Context, tenant string, wrapped []byte) ([]byte, error) {
	var b []byte
	err := m.s.inTx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "INSERT INTO vault_keys (tenant, wrapped) VALUES ($1, $2) ON CONFLICT (tenant) DO NOTHING", tenant, wrapped); err != nil {
			return err
		}
		return tx.QueryRow(ctx, "SELECT wrapped FROM vault_keys WHERE tenant = $1", tenant).Scan(&b)
	})
	if err != nil {
		return nil, fmt.Errorf("create the data key of %s: %w", tenant, err)
	}
	return b, nil
}

// ReplaceWrappedKeys implements vault.RewrapStore: every key is read FOR UPDATE and compared
// before any is written.
func (m *VaultMeta) ReplaceWrappedKeys(ctx context.Context, rs []vault.KeyReplacement) error {
	return m.s.inTx(ctx, func(tx pgx.Tx) error {
		for _, r := range rs {
			var b []byte
			err := tx.QueryRow(ctx, "SELECT wrapped FROM vault_keys WHERE tenant = $1 FOR UPDATE", r.Tenant).Scan(&b)
			if err != nil && !errors.Is(err, pgx.ErrNoRows) {
				return fmt.Errorf("read the data key of %s: %w", r.Tenant, err)
			}
			if err != nil || !bytes.Equal(b, r.Old) {
				return fmt.Errorf("the data key of %q changed: %w", r.Tenant, vault.ErrInvalidState)
			}
		}
		for _, r := range rs {
			if _, err := tx.Exec(ctx, "UPDATE vault_keys SET wrapped = $2 WHERE tenant = $1", r.Tenant, r.New); err != nil {
				return fmt.Errorf("write the data key of %s: %w", r.Tenant, err)
			}
		}
		return nil
	})
}

// Tenants lists the tenants that have a vault (a data key), in order.
func (m *VaultMeta) Tenants(ctx context.Context) ([]string, error) {
	rows, err := m.s.pool.Query(ctx, "SELECT tenant FROM vault_keys ORDER BY tenant COLLATE \"C\"")
	if err != nil {
		return nil, fmt.Errorf("list vault tenants: %w", err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("list vault tenants: %w", err)
	}
	return out, nil
}

// metaTx is one transaction on a tenant's vault records.
type metaTx struct {
	ctx      context.Context
	tx       pgx.Tx
	tenant   string
	writable bool
}

// errReadOnly is returned by a write in a View.
var errReadOnly = errors.New("vault records: a write in a read-only view")

// metaTables names the vault's record tables and their key columns.
var metaKeys = map[string]string{"vault_objects": "id", "vault_blobs": "digest", "vault_packs": "name"}

func (t *metaTx) get(table, key string, v any) error {
	var b []byte
	err := t.tx.QueryRow(t.ctx, fmt.Sprintf("SELECT body FROM %s WHERE tenant = $1 AND %s = $2", table, metaKeys[table]), t.tenant, key).Scan(&b)
	if errors.Is(err, pgx.ErrNoRows) {
		return &missing{table, key}
	} else if err != nil {
		return fmt.Errorf("read %s %s: %w", table, key, err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("decode %s %s: %w", table, key, err)
	}
	return nil
}

// missing is a record not found: vault.ErrNotFound, with what was looked up, formatted only
// when read (the vault looks up records it expects to be missing several times per object).
type missing struct{ table, key string }

func (e *missing) Error() string { return e.table + " " + e.key + ": " + vault.ErrNotFound.Error() }
func (e *missing) Unwrap() error { return vault.ErrNotFound }

func (t *metaTx) put(table, key string, v any, extra string, extraVal any) error {
	if !t.writable {
		return errReadOnly
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode %s %s: %w", table, key, err)
	}
	k := metaKeys[table]
	sql := fmt.Sprintf("INSERT INTO %s (tenant, %s, body) VALUES ($1, $2, $3) ON CONFLICT (tenant, %s) DO UPDATE SET body = EXCLUDED.body", table, k, k)
	args := []any{t.tenant, key, b}
	if extra != "" {
		sql = fmt.Sprintf("INSERT INTO %s (tenant, %s, body, %s) VALUES ($1, $2, $3, $4) ON CONFLICT (tenant, %s) DO UPDATE SET body = EXCLUDED.body, %s = EXCLUDED.%s",
			table, k, extra, k, extra, extra)
		args = append(args, extraVal)
	}
	if _, err := t.tx.Exec(t.ctx, sql, args...); err != nil {
		return fmt.Errorf("write %s %s: %w", table, key, err)
	}
	return nil
}

func (t *metaTx) del(table, key string) error {
	if !t.writable {
		return errReadOnly
	}
	if _, err := t.tx.Exec(t.ctx, fmt.Sprintf("DELETE FROM %s WHERE tenant = $1 AND %s = $2", table, metaKeys[table]), t.tenant, key); err != nil {
		return fmt.Errorf("delete %s %s: %w", table, key, err)
	}
	return nil
}

// scanPage is how many records scan reads per statement.
const scanPage = 256

// scan calls fn for the tenant's records of a table with keys greater than after, in key
// order. It reads a page at a time and calls fn between statements, so fn may use the
// transaction (a connection runs one statement at a time).
func (t *metaTx) scan(table, after string, fn func(b []byte) (bool, error)) error {
	k := metaKeys[table]
	for {
		rows, err := t.tx.Query(t.ctx, fmt.Sprintf(`SELECT %s, body FROM %s WHERE tenant = $1 AND %s > $2
			ORDER BY %s COLLATE "C" LIMIT $3`, k, table, k, k), t.tenant, after, scanPage)
		if err != nil {
			return fmt.Errorf("scan %s: %w", table, err)
		}
		type rec struct {
			Key  string
			Body []byte
		}
		page, err := pgx.CollectRows(rows, pgx.RowToStructByPos[rec])
		if err != nil {
			return fmt.Errorf("scan %s: %w", table, err)
		}
		for _, r := range page {
			more, err := fn(r.Body)
			if err != nil || !more {
				return err
			}
		}
		if len(page) < scanPage {
			return nil
		}
		after = page[len(page)-1].Key
	}
}

func (t *metaTx) Object(id string) (vault.Object, error) {
	var o vault.Object
	return o, t.get("vault_objects", id, &o)
}

// PutObject stores o and, when the change matters to what is derived from the vault
// (storage.FeedsVaultChange), appends it to the change feed in the same transaction.
func (t *metaTx) PutObject(o vault.Object) error {
	if !t.writable {
		return errReadOnly
	}
	var prev *vault.Object
	var state string
	err := t.tx.QueryRow(t.ctx, "SELECT state FROM vault_objects WHERE tenant = $1 AND id = $2", t.tenant, o.ID).Scan(&state)
	if err == nil {
		prev = &vault.Object{State: vault.State(state)}
	} else if !errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("read vault object %s: %w", o.ID, err)
	}
	if err := t.put("vault_objects", o.ID, o, "state", string(o.State)); err != nil {
		return err
	}
	if storage.FeedsVaultChange(prev, o) {
		return logChange(t.ctx, t.tx, t.tenant, o.ID)
	}
	return nil
}

func (t *metaTx) Objects(after string, fn func(vault.Object) bool) error {
	return t.scan("vault_objects", after, func(b []byte) (bool, error) {
		var o vault.Object
		if err := json.Unmarshal(b, &o); err != nil {
			return false, fmt.Errorf("decode vault object: %w", err)
		}
		return fn(o), nil
	})
}

func (t *metaTx) Blob(d vault.Digest) (vault.Blob, error) {
	var b vault.Blob
	return b, t.get("vault_blobs", d.String(), &b)
}

func (t *metaTx) PutBlob(b vault.Blob) error {
	return t.put("vault_blobs", b.Digest.String(), b, "", nil)
}

func (t *metaTx) DeleteBlob(d vault.Digest) error { return t.del("vault_blobs", d.String()) }

func (t *metaTx) Blobs(after vault.Digest, fn func(vault.Blob) bool) error {
	start := ""
	if !after.IsZero() {
		start = after.String()
	}
	return t.scan("vault_blobs", start, func(v []byte) (bool, error) {
		var b vault.Blob
		if err := json.Unmarshal(v, &b); err != nil {
			return false, fmt.Errorf("decode vault blob: %w", err)
		}
		return fn(b), nil
	})
}

func (t *metaTx) Pack(name string) (vault.Pack, error) {
	var p vault.Pack
	return p, t.get("vault_packs", name, &p)
}

func (t *metaTx) PutPack(p vault.Pack) error { return t.put("vault_packs", p.Name, p, "", nil) }

func (t *metaTx) DeletePack(name string) error { return t.del("vault_packs", name) }

// logChange appends an entry to the vault's change feed in tx. Its sequence number comes
// from the counter row, which tx holds locked until it commits: numbers follow commit order.
func logChange(ctx context.Context, tx pgx.Tx, tenant, objectID string) error {
	var seq int64
	if err := tx.QueryRow(ctx, "UPDATE vault_change_seq SET last = last + 1 RETURNING last").Scan(&seq); err != nil {
		return fmt.Errorf("vault change feed: %w", err)
	}
	if _, err := tx.Exec(ctx, "INSERT INTO vault_changes (seq, tenant, object_id) VALUES ($1, $2, $3)", seq, tenant, objectID); err != nil {
		return fmt.Errorf("vault change feed: %w", err)
	}
	return nil
}

// vaultChanges is the vault's change feed.
type vaultChanges struct{ s *Store }

// Read reads the entries and the last sequence number in one repeatable-read snapshot.
func (f *vaultChanges) Read(ctx context.Context, after uint64, limit int) ([]storage.VaultChange, uint64, error) {
	var out []storage.VaultChange
	var last int64
	err := f.s.inTxWith(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		out = out[:0]
		if err := tx.QueryRow(ctx, "SELECT last FROM vault_change_seq").Scan(&last); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, "SELECT seq, tenant, object_id FROM vault_changes WHERE seq > $1 ORDER BY seq LIMIT $2", int64(after), limit)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var c storage.VaultChange
			var seq int64
			if err := rows.Scan(&seq, &c.Tenant, &c.ObjectID); err != nil {
				return err
			}
			c.Seq = uint64(seq)
			out = append(out, c)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, 0, fmt.Errorf("read the vault change feed: %w", err)
	}
	return out, uint64(last), nil
}

func (f *vaultChanges) Last(ctx context.Context) (uint64, error) {
	var last int64
	if err := f.s.pool.QueryRow(ctx, "SELECT last FROM vault_change_seq").Scan(&last); err != nil {
		return 0, fmt.Errorf("read the vault change feed: %w", err)
	}
	return uint64(last), nil
}

func (f *vaultChanges) Ack(ctx context.Context, upTo uint64) error {
	if _, err := f.s.pool.Exec(ctx, "DELETE FROM vault_changes WHERE seq <= $1", int64(upTo)); err != nil {
		return fmt.Errorf("acknowledge the vault change feed: %w", err)
	}
	return nil
}
