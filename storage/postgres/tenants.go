package postgres

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"svc.dev/svc/storage"
)

// IntelState keeps what the intel detectors carry between scans (table tenant_blobs, kind
// "intel").
func (s *Store) IntelState() storage.Blobs { return blobs{s, "intel"} }

// CreatorState keeps a tenant's creator revenue state (table tenant_blobs, kind "creator").
func (s *Store) CreatorState() storage.Blobs { return blobs{s, "creator"} }

type blobs struct {
	s    *Store
	kind string
}

func (b blobs) Get(ctx context.Context, tenant, key string) ([]byte, error) {
	var v []byte
	err := b.s.pool.QueryRow(ctx, "SELECT value FROM tenant_blobs WHERE tenant = $1 AND kind = $2 AND key = $3", tenant, b.kind, key).Scan(&v)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, notFound(b.kind+" state", tenant, key)
	} else if err != nil {
		return nil, fmt.Errorf("read %s state %s: %w", b.kind, key, err)
	}
	return v, nil
}

func (b blobs) Put(ctx context.Context, tenant, key string, value []byte) error {
	_, err := b.s.pool.Exec(ctx, `INSERT INTO tenant_blobs (tenant, kind, key, value) VALUES ($1, $2, $3, $4)
		ON CONFLICT (tenant, kind, key) DO UPDATE SET value = EXCLUDED.value`, tenant, b.kind, key, value)
	if err != nil {
		return fmt.Errorf("write %s state %s: %w", b.kind, key, err)
	}
	return nil
}

// tenantTables are the tables keyed by tenant first, with the column that names a record
// (EraseTenant deletes from each); events are erased by stream, a tenant's own stream being
// its tenant string.
var tenantTables = []struct{ name, key string }{
	{"plans", "id"}, {"plan_objects", "plan_id"}, {"executions", "id"}, {"journal", "execution_id"},
	{"sources", "id"}, {"configs", "id"}, {"destinations", "id"}, {"destination_origins", "id"},
	{"receipts", "id"}, {"manifests", "asset_id"}, {"events", "id"}, {"jobs", "id"}, {"audit", "id"},
	{"meters", "id"}, {"trials", "id"}, {"tenant_blobs", "key"}, {"vault_objects", "id"},
	{"vault_blobs", "digest"}, {"vault_packs", "name"}, {"vault_keys", "tenant"},
}

// eraseBatch bounds the rows one statement of EraseTenant deletes, so erasing a large tenant
// never holds locks for long.
const eraseBatch = 1000

// EraseTenant deletes every record of tenant, table by table in statements of at most
// eraseBatch rows (each its own transaction), except the jobs and receipts named in keep,
// and returns how many it deleted.
func (s *Store) EraseTenant(ctx context.Context, tenant string, keep []storage.Ref) (int, error) {
	kept := map[string][]string{}
	for _, r := range keep {
		switch r.Kind {
		case storage.KindJob:
			kept["jobs"] = append(kept["jobs"], r.ID)
		case storage.KindReceipt:
			kept["receipts"] = append(kept["receipts"], r.ID)
		default:
			return 0, fmt.Errorf("erase %s: cannot keep a record of kind %q", tenant, r.Kind)
		}
	}
	total := 0
	for _, t := range tenantTables {
		sql := fmt.Sprintf(`DELETE FROM %[1]s WHERE ctid IN (SELECT ctid FROM %[1]s WHERE tenant = $1 AND NOT (%[2]s = ANY($2)) LIMIT %[3]d)`,
			t.name, t.key, eraseBatch)
		ids := kept[t.name]
		if ids == nil {
			ids = []string{}
		}
		for {
			tag, err := s.pool.Exec(ctx, sql, tenant, ids)
			if err != nil {
				return total, fmt.Errorf("erase %s from %s: %w", tenant, t.name, err)
			}
			total += int(tag.RowsAffected())
			if tag.RowsAffected() < eraseBatch {
				break
			}
		}
	}
	return total, nil
}

// Probe writes a record and reads it back after its commit: it returns once the database
// can commit. Each probe has its own record, so replicas probing at once do not mix them up.
func (s *Store) Probe(ctx context.Context) error {
	var b [12]byte
	rand.Read(b[:])
	token := hex.EncodeToString(b[:])
	if _, err := s.pool.Exec(ctx, "INSERT INTO health (token) VALUES ($1)", token); err != nil {
		return fmt.Errorf("probe write: %w", err)
	}
	var n int
	if err := s.pool.QueryRow(ctx, "SELECT count(*) FROM health WHERE token = $1", token).Scan(&n); err != nil {
		return fmt.Errorf("probe read: %w", err)
	}
	if n != 1 {
		return errors.New("probe read: the record written is not there")
	}
	if _, err := s.pool.Exec(ctx, "DELETE FROM health WHERE token = $1", token); err != nil {
		return fmt.Errorf("probe cleanup: %w", err)
	}
	return nil
}
