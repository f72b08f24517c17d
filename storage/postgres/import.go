package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"svc.dev/svc/storage"
)

var _ storage.PlatformImporter = (*Store)(nil)

// importFields are the fields of a platform record that fill its table's columns: a record
// is decoded into them only, and stored as the exact bytes it came as.
type importFields struct {
	ID          string          `json:"id"`
	Email       string          `json:"email"`
	TokenHash   string          `json:"token_hash"`
	UserID      string          `json:"user_id"`
	OrgID       string          `json:"org_id"`
	AppID       string          `json:"app_id"`
	Application string          `json:"application_id"` // a webhook's application
	SecretHash  string          `json:"secret_hash"`
	CreatedAt   time.Time       `json:"created_at"`
	Done        bool            `json:"done"`
	Hash        string          `json:"hash"`
	ExpiresAt   time.Time       `json:"expires_at"`
	WebhookID   string          `json:"webhook_id"`
	EventID     string          `json:"event_id"`
	Status      json.RawMessage `json:"status"` // a delivery's is a string; an idempotency record's, a number
	Cents       int64           `json:"cents"`
	UpdatedAt   string          `json:"updated_at"`
}

// ImportPlatform stores records moved from another store, each as the exact bytes it came
// as, in one transaction; a record with the kind and key of a stored one replaces it.
func (s *Store) ImportPlatform(ctx context.Context, records []storage.PlatformRecord) error {
	return s.inTx(ctx, func(tx pgx.Tx) error {
		for _, r := range records {
			if err := importRecord(ctx, tx, r); err != nil {
				return fmt.Errorf("import %s %q: %w", r.Kind, r.Key, err)
			}
		}
		return nil
	})
}

func importRecord(ctx context.Context, tx pgx.Tx, r storage.PlatformRecord) error {
	var f importFields
	switch r.Kind {
	case storage.PlatformBilling, storage.PlatformUsageCounter, storage.PlatformUsageOnce,
		storage.PlatformIntelState, storage.PlatformCreatorState:
	default:
		if err := json.Unmarshal(r.Value, &f); err != nil {
			return err
		}
	}
	body := r.Value
	upsert := func(table string, cols []string, vals ...any) error {
		cols = append(cols, "body")
		vals = append(vals, body)
		ph := make([]string, len(cols))
		set := make([]string, 0, len(cols))
		for i, c := range cols {
			ph[i] = fmt.Sprintf("$%d", i+1)
			if i > 0 {
				set = append(set, c+" = EXCLUDED."+c)
			}
		}
		_, err := tx.Exec(ctx, fmt.Sprintf("INSERT INTO %s (%s) VALUES (%s) ON CONFLICT (%s) DO UPDATE SET %s",
			table, strings.Join(cols, ", "), strings.Join(ph, ", "), cols[0], strings.Join(set, ", ")), vals...)
		return err
	}
	var err error
	switch r.Kind {
	case storage.PlatformUser:
		err = upsert("users", []string{"id", "email"}, r.Key, emailKey(f.Email))
	case storage.PlatformSession:
		err = upsert("sessions", []string{"token_hash", "user_id"}, r.Key, f.UserID)
	case storage.PlatformOrg:
		err = upsert("orgs", []string{"id"}, r.Key)
	case storage.PlatformApplication:
		err = upsert("applications", []string{"id", "org_id"}, r.Key, f.OrgID)
	case storage.PlatformAPIKey:
		err = upsert("api_keys", []string{"id", "app_id", "secret_hash"}, r.Key, f.AppID, f.SecretHash)
	case storage.PlatformConnection:
		err = upsert("connections", []string{"id", "app_id", "user_id"}, r.Key, f.AppID, f.UserID)
	case storage.PlatformIdempotency:
		err = upsert("idempotency", []string{"key", "created_at", "done"}, []byte(r.Key), f.CreatedAt, f.Done)
	case storage.PlatformConnectSession:
		err = upsert("connect_sessions", []string{"id", "user_id"}, r.Key, f.UserID)
	case storage.PlatformOAuthState:
		err = upsert("oauth_states", []string{"hash", "user_id", "expires_at"}, r.Key, f.UserID, f.ExpiresAt)
	case storage.PlatformWebhook:
		err = upsert("webhooks", []string{"id", "app_id"}, r.Key, f.Application)
	case storage.PlatformQueuedEvent:
		_, err = tx.Exec(ctx, `INSERT INTO webhook_queue (webhook_id, event_id, body) VALUES ($1, $2, $3)
			ON CONFLICT (webhook_id, event_id) DO UPDATE SET body = EXCLUDED.body`, f.WebhookID, f.EventID, body)
	case storage.PlatformDelivery:
		var status string
		json.Unmarshal(f.Status, &status)
		final := status == "succeeded" || status == "dead"
		err = upsert("webhook_deliveries", []string{"id", "webhook_id", "final", "created_at"}, r.Key, f.WebhookID, final, f.CreatedAt)
	case storage.PlatformBilling:
		_, err = tx.Exec(ctx, `INSERT INTO billing (key, value) VALUES ($1, $2)
			ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value`, r.Key, string(r.Value))
	case storage.PlatformUsageCounter:
		parts := strings.SplitN(r.Key, "|", 3)
		q, perr := strconv.ParseFloat(string(r.Value), 64)
		if len(parts) != 3 || perr != nil {
			return fmt.Errorf("not a usage counter (scope|month|meter, quantity)")
		}
		_, err = tx.Exec(ctx, `INSERT INTO usage_counters (scope, month, meter, quantity) VALUES ($1, $2, $3, $4)
			ON CONFLICT (scope, month, meter) DO UPDATE SET quantity = EXCLUDED.quantity`, parts[0], parts[1], parts[2], q)
	case storage.PlatformUsageOnce:
		_, err = tx.Exec(ctx, "INSERT INTO usage_once (key) VALUES ($1) ON CONFLICT (key) DO NOTHING", []byte(r.Key))
	case storage.PlatformCeiling:
		_, err = tx.Exec(ctx, `INSERT INTO ceilings (org_id, cents, updated_at) VALUES ($1, $2, $3)
			ON CONFLICT (org_id) DO UPDATE SET cents = EXCLUDED.cents, updated_at = EXCLUDED.updated_at`, r.Key, f.Cents, f.UpdatedAt)
	case storage.PlatformIntelState, storage.PlatformCreatorState:
		kind := map[storage.PlatformKind]string{storage.PlatformIntelState: "intel", storage.PlatformCreatorState: "creator"}[r.Kind]
		tenant, key, ok := strings.Cut(r.Key, "/")
		if !ok {
			return fmt.Errorf("not tenant/key")
		}
		_, err = tx.Exec(ctx, `INSERT INTO tenant_blobs (tenant, kind, key, value) VALUES ($1, $2, $3, $4)
			ON CONFLICT (tenant, kind, key) DO UPDATE SET value = EXCLUDED.value`, tenant, kind, key, r.Value)
	default:
		return fmt.Errorf("unknown kind")
	}
	return err
}

var _ storage.PlatformExporter = (*Store)(nil)

// exportQueries read each kind's records as (key, value), in key order.
var exportQueries = map[storage.PlatformKind]string{
	storage.PlatformUser:           "SELECT id, body FROM users ORDER BY id",
	storage.PlatformSession:        "SELECT token_hash, body FROM sessions ORDER BY token_hash",
	storage.PlatformOrg:            "SELECT id, body FROM orgs ORDER BY id",
	storage.PlatformApplication:    "SELECT id, body FROM applications ORDER BY id",
	storage.PlatformAPIKey:         "SELECT id, body FROM api_keys ORDER BY id",
	storage.PlatformConnection:     "SELECT id, body FROM connections ORDER BY id",
	storage.PlatformIdempotency:    "SELECT key, body FROM idempotency ORDER BY key",
	storage.PlatformConnectSession: "SELECT id, body FROM connect_sessions ORDER BY id",
	storage.PlatformOAuthState:     "SELECT hash, body FROM oauth_states ORDER BY hash",
	storage.PlatformWebhook:        "SELECT id, body FROM webhooks ORDER BY id",
	storage.PlatformQueuedEvent:    "SELECT webhook_id || '/' || event_id, body FROM webhook_queue ORDER BY webhook_id, event_id",
	storage.PlatformDelivery:       "SELECT id, body FROM webhook_deliveries ORDER BY id",
	storage.PlatformBilling:        "SELECT key, convert_to(value, 'UTF8') FROM billing ORDER BY key",
	storage.PlatformUsageCounter:   "SELECT scope || '|' || month || '|' || meter, quantity FROM usage_counters ORDER BY 1",
	storage.PlatformUsageOnce:      "SELECT key, NULL::bytea FROM usage_once ORDER BY key",
	storage.PlatformCeiling:        "SELECT org_id, cents, updated_at FROM ceilings ORDER BY org_id",
	storage.PlatformIntelState:     "SELECT tenant || '/' || key, value FROM tenant_blobs WHERE kind = 'intel' ORDER BY 1",
	storage.PlatformCreatorState:   "SELECT tenant || '/' || key, value FROM tenant_blobs WHERE kind = 'creator' ORDER BY 1",
}

// ExportPlatform yields every record of kind, as ImportPlatform takes it, from one statement.
func (s *Store) ExportPlatform(ctx context.Context, kind storage.PlatformKind, fn func(storage.PlatformRecord) error) error {
	q, ok := exportQueries[kind]
	if !ok {
		return fmt.Errorf("export: unknown kind %q", kind)
	}
	rows, err := s.pool.Query(ctx, q)
	if err != nil {
		return fmt.Errorf("export %s: %w", kind, err)
	}
	defer rows.Close()
	for rows.Next() {
		r := storage.PlatformRecord{Kind: kind}
		switch kind {
		case storage.PlatformUsageCounter:
			var q float64
			err = rows.Scan(&r.Key, &q)
			r.Value = strconv.AppendFloat(nil, q, 'g', -1, 64)
		case storage.PlatformUsageOnce:
			var key []byte
			var none []byte
			err = rows.Scan(&key, &none)
			r.Key = string(key)
		case storage.PlatformCeiling:
			var c storage.Ceiling
			if err = rows.Scan(&r.Key, &c.Cents, &c.UpdatedAt); err == nil {
				r.Value, err = json.Marshal(c)
			}
		case storage.PlatformIdempotency:
			var key []byte
			err = rows.Scan(&key, &r.Value)
			r.Key = string(key)
		default:
			err = rows.Scan(&r.Key, &r.Value)
		}
		if err != nil {
			return fmt.Errorf("export %s: %w", kind, err)
		}
		if err := fn(r); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("export %s: %w", kind, err)
	}
	return nil
}
