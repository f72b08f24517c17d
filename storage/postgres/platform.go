package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"svc.dev/svc/platform"
)

var (
	_ platform.AccountStore     = (*Store)(nil)
	_ platform.DeveloperStore   = (*Store)(nil)
	_ platform.IdempotencyStore = (*Store)(nil)
	_ platform.ConnectStore     = (*Store)(nil)
)

// getJSON reads the JSON record of table whose keyCol is key (FOR UPDATE when lock), or an
// error wrapping platform.ErrNotFound.
func getJSON[T any](ctx context.Context, q querier, table, keyCol string, key any, lock bool) (*T, error) {
	sql := fmt.Sprintf("SELECT body FROM %s WHERE %s = $1", table, keyCol)
	if lock {
		sql += " FOR UPDATE"
	}
	var b []byte
	if err := q.QueryRow(ctx, sql, key).Scan(&b); errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("%s %q: %w", table, key, platform.ErrNotFound)
	} else if err != nil {
		return nil, fmt.Errorf("read %s %q: %w", table, key, err)
	}
	v := new(T)
	if err := json.Unmarshal(b, v); err != nil {
		return nil, fmt.Errorf("decode %s %q: %w", table, key, err)
	}
	return v, nil
}

// listJSON reads the JSON records a query returns (its one column is the record).
func listJSON[T any](ctx context.Context, q querier, sql string, args ...any) ([]*T, error) {
	rows, err := q.Query(ctx, sql, args...)
	if err != nil {
		return nil, err
	}
	bodies, err := pgx.CollectRows(rows, pgx.RowTo[[]byte])
	if err != nil {
		return nil, err
	}
	out := make([]*T, len(bodies))
	for i, b := range bodies {
		out[i] = new(T)
		if err := json.Unmarshal(b, out[i]); err != nil {
			return nil, fmt.Errorf("decode: %w", err)
		}
	}
	return out, nil
}

// upsertJSON stores v as JSON in table under the key columns and values given (the first
// is the primary key).
func upsertJSON(ctx context.Context, q querier, table string, v any, cols []string, vals ...any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode %s: %w", table, err)
	}
	cols = append(cols, "body")
	vals = append(vals, b)
	ph := make([]string, len(cols))
	set := make([]string, 0, len(cols))
	for i, c := range cols {
		ph[i] = fmt.Sprintf("$%d", i+1)
		if i > 0 {
			set = append(set, c+" = EXCLUDED."+c)
		}
	}
	sql := fmt.Sprintf("INSERT INTO %s (%s) VALUES (%s) ON CONFLICT (%s) DO UPDATE SET %s",
		table, strings.Join(cols, ", "), strings.Join(ph, ", "), cols[0], strings.Join(set, ", "))
	if _, err := q.Exec(ctx, sql, vals...); err != nil {
		return fmt.Errorf("write %s %q: %w", table, vals[0], err)
	}
	return nil
}

// updateJSON applies fn to a record read FOR UPDATE and stores it with put, in one
// transaction; fn's error leaves it unchanged.
func updateJSON[T any](ctx context.Context, s *Store, table, keyCol string, key any, fn func(*T) error,
	put func(pgx.Tx, *T) error) (*T, error) {
	var out *T
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		v, err := getJSON[T](ctx, tx, table, keyCol, key, true)
		if err != nil {
			return err
		}
		if err := fn(v); err != nil {
			return err
		}
		out = v
		return put(tx, v)
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

func emailKey(email string) string { return strings.ToLower(strings.TrimSpace(email)) }

func putUser(ctx context.Context, q querier, u *platform.User) error {
	return upsertJSON(ctx, q, "users", u, []string{"id", "email"}, u.ID, emailKey(u.Email))
}

// CreateUser implements platform.AccountStore: an email already taken is
// platform.ErrEmailTaken.
func (s *Store) CreateUser(ctx context.Context, u *platform.User) error {
	b, err := json.Marshal(u)
	if err != nil {
		return fmt.Errorf("encode user: %w", err)
	}
	tag, err := s.pool.Exec(ctx, "INSERT INTO users (id, email, body) VALUES ($1, $2, $3) ON CONFLICT (email) DO NOTHING", u.ID, emailKey(u.Email), b)
	if err != nil {
		return fmt.Errorf("create user: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return platform.ErrEmailTaken
	}
	return nil
}

// User implements platform.AccountStore.
func (s *Store) User(ctx context.Context, id string) (*platform.User, error) {
	return getJSON[platform.User](ctx, s.pool, "users", "id", id, false)
}

// UserByEmail implements platform.AccountStore.
func (s *Store) UserByEmail(ctx context.Context, email string) (*platform.User, error) {
	return getJSON[platform.User](ctx, s.pool, "users", "email", emailKey(email), false)
}

// UpdateUser implements platform.AccountStore.
func (s *Store) UpdateUser(ctx context.Context, id string, fn func(*platform.User) error) (*platform.User, error) {
	return updateJSON(ctx, s, "users", "id", id, fn, func(tx pgx.Tx, u *platform.User) error { return putUser(ctx, tx, u) })
}

// CreateSession implements platform.AccountStore.
func (s *Store) CreateSession(ctx context.Context, x *platform.Session) error {
	return upsertJSON(ctx, s.pool, "sessions", x, []string{"token_hash", "user_id"}, x.TokenHash, x.UserID)
}

// Session implements platform.AccountStore.
func (s *Store) Session(ctx context.Context, tokenHash string) (*platform.Session, error) {
	return getJSON[platform.Session](ctx, s.pool, "sessions", "token_hash", tokenHash, false)
}

// DeleteSession implements platform.AccountStore.
func (s *Store) DeleteSession(ctx context.Context, tokenHash string) error {
	if _, err := s.pool.Exec(ctx, "DELETE FROM sessions WHERE token_hash = $1", tokenHash); err != nil {
		return fmt.Errorf("delete session: %w", err)
	}
	return nil
}

// CreateOrg implements platform.AccountStore: the organization and its owner's list of
// organizations change together.
func (s *Store) CreateOrg(ctx context.Context, o *platform.Org) error {
	return s.inTx(ctx, func(tx pgx.Tx) error {
		u, err := getJSON[platform.User](ctx, tx, "users", "id", o.OwnerID, true)
		if err != nil {
			return err
		}
		u.OrgIDs = append(u.OrgIDs, o.ID)
		if err := putUser(ctx, tx, u); err != nil {
			return err
		}
		return upsertJSON(ctx, tx, "orgs", o, []string{"id"}, o.ID)
	})
}

// Org implements platform.AccountStore.
func (s *Store) Org(ctx context.Context, id string) (*platform.Org, error) {
	return getJSON[platform.Org](ctx, s.pool, "orgs", "id", id, false)
}

// CreateApplication implements platform.DeveloperStore: the organization must exist.
func (s *Store) CreateApplication(ctx context.Context, a *platform.Application) error {
	return s.inTx(ctx, func(tx pgx.Tx) error {
		var one int
		if err := tx.QueryRow(ctx, "SELECT 1 FROM orgs WHERE id = $1 FOR SHARE", a.OrgID).Scan(&one); errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("organization %s: %w", a.OrgID, platform.ErrNotFound)
		} else if err != nil {
			return fmt.Errorf("create application: %w", err)
		}
		return upsertJSON(ctx, tx, "applications", a, []string{"id", "org_id"}, a.ID, a.OrgID)
	})
}

// Application implements platform.DeveloperStore.
func (s *Store) Application(ctx context.Context, id string) (*platform.Application, error) {
	return getJSON[platform.Application](ctx, s.pool, "applications", "id", id, false)
}

// ApplicationsOf implements platform.DeveloperStore, in id order.
func (s *Store) ApplicationsOf(ctx context.Context, orgID string) ([]*platform.Application, error) {
	out, err := listJSON[platform.Application](ctx, s.pool, "SELECT body FROM applications WHERE org_id = $1 ORDER BY id", orgID)
	if err != nil {
		return nil, fmt.Errorf("applications of %s: %w", orgID, err)
	}
	return out, nil
}

func putKey(ctx context.Context, q querier, k *platform.APIKey) error {
	return upsertJSON(ctx, q, "api_keys", k, []string{"id", "app_id", "secret_hash"}, k.ID, k.AppID, k.SecretHash)
}

// CreateKey implements platform.DeveloperStore.
func (s *Store) CreateKey(ctx context.Context, k *platform.APIKey) error {
	return putKey(ctx, s.pool, k)
}

// KeyBySecretHash implements platform.DeveloperStore.
func (s *Store) KeyBySecretHash(ctx context.Context, hash string) (*platform.APIKey, error) {
	return getJSON[platform.APIKey](ctx, s.pool, "api_keys", "secret_hash", hash, false)
}

// KeysOf implements platform.DeveloperStore, in id order.
func (s *Store) KeysOf(ctx context.Context, appID string) ([]*platform.APIKey, error) {
	out, err := listJSON[platform.APIKey](ctx, s.pool, "SELECT body FROM api_keys WHERE app_id = $1 ORDER BY id", appID)
	if err != nil {
		return nil, fmt.Errorf("keys of %s: %w", appID, err)
	}
	return out, nil
}

// UpdateKey implements platform.DeveloperStore.
func (s *Store) UpdateKey(ctx context.Context, id string, fn func(*platform.APIKey) error) (*platform.APIKey, error) {
	return updateJSON(ctx, s, "api_keys", "id", id, fn, func(tx pgx.Tx, k *platform.APIKey) error { return putKey(ctx, tx, k) })
}

func putConnection(ctx context.Context, q querier, c *platform.Connection) error {
	return upsertJSON(ctx, q, "connections", c, []string{"id", "app_id", "user_id"}, c.ID, c.AppID, c.UserID)
}

// CreateConnection implements platform.DeveloperStore.
func (s *Store) CreateConnection(ctx context.Context, c *platform.Connection) error {
	return putConnection(ctx, s.pool, c)
}

// Connection implements platform.DeveloperStore.
func (s *Store) Connection(ctx context.Context, id string) (*platform.Connection, error) {
	return getJSON[platform.Connection](ctx, s.pool, "connections", "id", id, false)
}

// ConnectionsOf implements platform.DeveloperStore, in id order. Unlike bbolt's store it
// keeps no cache: another replica may change a connection.
func (s *Store) ConnectionsOf(ctx context.Context, userID string) ([]*platform.Connection, error) {
	out, err := listJSON[platform.Connection](ctx, s.pool, "SELECT body FROM connections WHERE user_id = $1 ORDER BY id", userID)
	if err != nil {
		return nil, fmt.Errorf("connections of %s: %w", userID, err)
	}
	return out, nil
}

// ConnectionsOfApp implements platform.DeveloperStore, by user then id.
func (s *Store) ConnectionsOfApp(ctx context.Context, appID string) ([]*platform.Connection, error) {
	out, err := listJSON[platform.Connection](ctx, s.pool, "SELECT body FROM connections WHERE app_id = $1 ORDER BY user_id, id", appID)
	if err != nil {
		return nil, fmt.Errorf("connections of %s: %w", appID, err)
	}
	return out, nil
}

// ConnectionsOfAppUser lists the connections of an application to one end user, in id order.
func (s *Store) ConnectionsOfAppUser(ctx context.Context, appID, userID string) ([]*platform.Connection, error) {
	out, err := listJSON[platform.Connection](ctx, s.pool, "SELECT body FROM connections WHERE app_id = $1 AND user_id = $2 ORDER BY id", appID, userID)
	if err != nil {
		return nil, fmt.Errorf("connections of %s to %s: %w", appID, userID, err)
	}
	return out, nil
}

// UpdateConnection implements platform.ConnectionUpdater.
func (s *Store) UpdateConnection(ctx context.Context, id string, fn func(*platform.Connection) error) (*platform.Connection, error) {
	return updateJSON(ctx, s, "connections", "id", id, fn, func(tx pgx.Tx, c *platform.Connection) error { return putConnection(ctx, tx, c) })
}

// ClaimIdempotency implements platform.IdempotencyStore: the record is read FOR UPDATE (or
// its insertion races), so of concurrent claims of one key exactly one proceeds.
func (s *Store) ClaimIdempotency(ctx context.Context, key string, rec *platform.IdempotencyRecord, notBefore, unfinishedBefore time.Time) (*platform.IdempotencyRecord, error) {
	var prev *platform.IdempotencyRecord
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		prev = nil
		old, err := getJSON[platform.IdempotencyRecord](ctx, tx, "idempotency", "key", []byte(key), true)
		switch {
		case err == nil && !old.CreatedAt.Before(notBefore) && (old.Done || !old.CreatedAt.Before(unfinishedBefore)):
			prev = old
			return nil
		case err != nil && !errors.Is(err, platform.ErrNotFound):
			return err
		case err != nil: // none yet: insert, unless a concurrent claim did
			b, err := json.Marshal(rec)
			if err != nil {
				return fmt.Errorf("encode idempotency record: %w", err)
			}
			tag, err := tx.Exec(ctx, `INSERT INTO idempotency (key, created_at, done, body) VALUES ($1, $2, $3, $4)
				ON CONFLICT (key) DO NOTHING`, []byte(key), rec.CreatedAt, rec.Done, b)
			if err != nil {
				return fmt.Errorf("claim idempotency key: %w", err)
			}
			if tag.RowsAffected() == 0 {
				return errRetry
			}
			return nil
		}
		return putIdempotency(ctx, tx, key, rec) // an expired or abandoned record is replaced
	})
	return prev, err
}

func putIdempotency(ctx context.Context, q querier, key string, rec *platform.IdempotencyRecord) error {
	return upsertJSON(ctx, q, "idempotency", rec, []string{"key", "created_at", "done"}, []byte(key), rec.CreatedAt, rec.Done)
}

// FinishIdempotency implements platform.IdempotencyStore.
func (s *Store) FinishIdempotency(ctx context.Context, key string, rec *platform.IdempotencyRecord) error {
	return putIdempotency(ctx, s.pool, key, rec)
}

// ReleaseIdempotency implements platform.IdempotencyStore.
func (s *Store) ReleaseIdempotency(ctx context.Context, key string) error {
	if _, err := s.pool.Exec(ctx, "DELETE FROM idempotency WHERE key = $1", []byte(key)); err != nil {
		return fmt.Errorf("release idempotency key: %w", err)
	}
	return nil
}

// PurgeIdempotency implements platform.IdempotencyStore.
func (s *Store) PurgeIdempotency(ctx context.Context, before time.Time, unfinished bool) (int, error) {
	tag, err := s.pool.Exec(ctx, "DELETE FROM idempotency WHERE created_at < $1 OR ($2 AND NOT done)", before, unfinished)
	if err != nil {
		return 0, fmt.Errorf("purge idempotency records: %w", err)
	}
	return int(tag.RowsAffected()), nil
}

func putConnectSession(ctx context.Context, q querier, c *platform.ConnectSession) error {
	return upsertJSON(ctx, q, "connect_sessions", c, []string{"id", "user_id"}, c.ID, c.UserID)
}

// CreateConnectSession implements platform.ConnectStore.
func (s *Store) CreateConnectSession(ctx context.Context, c *platform.ConnectSession) error {
	return putConnectSession(ctx, s.pool, c)
}

// ConnectSession implements platform.ConnectStore.
func (s *Store) ConnectSession(ctx context.Context, id string) (*platform.ConnectSession, error) {
	return getJSON[platform.ConnectSession](ctx, s.pool, "connect_sessions", "id", id, false)
}

// UpdateConnectSession implements platform.ConnectStore.
func (s *Store) UpdateConnectSession(ctx context.Context, id string, fn func(*platform.ConnectSession) error) (*platform.ConnectSession, error) {
	return updateJSON(ctx, s, "connect_sessions", "id", id, fn, func(tx pgx.Tx, c *platform.ConnectSession) error { return putConnectSession(ctx, tx, c) })
}

// PutOAuthState implements platform.ConnectStore: states expired at now are removed with it.
func (s *Store) PutOAuthState(ctx context.Context, st *platform.OAuthState, now time.Time) error {
	return s.inTx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "DELETE FROM oauth_states WHERE expires_at <= $1", now); err != nil {
			return fmt.Errorf("remove expired OAuth states: %w", err)
		}
		return upsertJSON(ctx, tx, "oauth_states", st, []string{"hash", "user_id", "expires_at"}, st.Hash, st.UserID, st.ExpiresAt)
	})
}

// TakeOAuthState implements platform.ConnectStore: it deletes the state it returns, so a
// state is taken once.
func (s *Store) TakeOAuthState(ctx context.Context, hash string) (*platform.OAuthState, error) {
	var b []byte
	err := s.pool.QueryRow(ctx, "DELETE FROM oauth_states WHERE hash = $1 RETURNING body", hash).Scan(&b)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("OAuth state: %w", platform.ErrNotFound)
	} else if err != nil {
		return nil, fmt.Errorf("take OAuth state: %w", err)
	}
	var st platform.OAuthState
	if err := json.Unmarshal(b, &st); err != nil {
		return nil, fmt.Errorf("decode OAuth state: %w", err)
	}
	return &st, nil
}

// DeleteUser removes a user's record, sessions, connections and pending OAuth states, and
// takes the user out of the connect sessions they decided (which stay, as the application's
// record of its request), in one transaction.
func (s *Store) DeleteUser(ctx context.Context, userID string) error {
	return s.inTx(ctx, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, "DELETE FROM users WHERE id = $1", userID)
		if err != nil {
			return fmt.Errorf("delete user %s: %w", userID, err)
		}
		if tag.RowsAffected() == 0 {
			return fmt.Errorf("user %s: %w", userID, platform.ErrNotFound)
		}
		for _, t := range []string{"sessions", "connections", "oauth_states"} {
			if _, err := tx.Exec(ctx, "DELETE FROM "+t+" WHERE user_id = $1", userID); err != nil {
				return fmt.Errorf("delete user %s: %w", userID, err)
			}
		}
		decided, err := listJSON[platform.ConnectSession](ctx, tx, "SELECT body FROM connect_sessions WHERE user_id = $1 FOR UPDATE", userID)
		if err != nil {
			return fmt.Errorf("delete user %s: %w", userID, err)
		}
		for _, c := range decided {
			c.UserID, c.ConnectedSourceIDs = "", nil
			if err := putConnectSession(ctx, tx, c); err != nil {
				return err
			}
		}
		return nil
	})
}

// jsonMarshal encodes a platform record.
func jsonMarshal(v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encode %T: %w", v, err)
	}
	return b, nil
}
