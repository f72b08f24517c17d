package bolt

import (
	"context"
	"errors"
	"slices"
	"strings"
	"time"

	bbolt "go.etcd.io/bbolt"

	"svc.dev/svc/platform"
)

// Bucket names of the platform's records.
const (
	bUsers        = "users"
	bUsersByEmail = "users_by_email"
	bSessions     = "sessions"
	bOrgs         = "orgs"
	bApps         = "applications"
	bKeys         = "api_keys"
	bKeysByHash   = "api_keys_by_hash"
	bConnections  = "connections"
	bIdempotency  = "idempotency"
)

var (
	_ platform.AccountStore     = (*DB)(nil)
	_ platform.DeveloperStore   = (*DB)(nil)
	_ platform.IdempotencyStore = (*DB)(nil)
)

func emailKey(email string) string { return strings.ToLower(strings.TrimSpace(email)) }

// CreateUser implements platform.AccountStore.
func (db *DB) CreateUser(ctx context.Context, u *platform.User) error {
	if err := ctxErr(ctx); err != nil {
		return err
	}
	return db.update(func(tx *bbolt.Tx) error {
		idx, err := bucket(tx, bUsersByEmail)
		if err != nil {
			return err
		}
		if idx.Get([]byte(emailKey(u.Email))) != nil {
			return platform.ErrEmailTaken
		}
		if err := idx.Put([]byte(emailKey(u.Email)), []byte(u.ID)); err != nil {
			return err
		}
		return putJSON(tx, bUsers, u.ID, u)
	})
}

// User implements platform.AccountStore.
func (db *DB) User(ctx context.Context, id string) (*platform.User, error) {
	return viewJSON[platform.User](db, bUsers, id)
}

// UserByEmail implements platform.AccountStore.
func (db *DB) UserByEmail(ctx context.Context, email string) (*platform.User, error) {
	var u platform.User
	err := db.view(func(tx *bbolt.Tx) error {
		idx := tx.Bucket([]byte(bUsersByEmail))
		if idx == nil {
			return platform.ErrNotFound
		}
		id := idx.Get([]byte(emailKey(email)))
		if id == nil {
			return platform.ErrNotFound
		}
		return getJSON(tx, bUsers, string(id), &u, platform.ErrNotFound)
	})
	if err != nil {
		return nil, err
	}
	return &u, nil
}

// UpdateUser implements platform.AccountStore.
func (db *DB) UpdateUser(ctx context.Context, id string, fn func(*platform.User) error) (*platform.User, error) {
	return updateJSON(db, ctx, bUsers, id, fn)
}

// CreateSession implements platform.AccountStore.
func (db *DB) CreateSession(ctx context.Context, s *platform.Session) error {
	return db.update(func(tx *bbolt.Tx) error { return putJSON(tx, bSessions, s.TokenHash, s) })
}

// Session implements platform.AccountStore.
func (db *DB) Session(ctx context.Context, tokenHash string) (*platform.Session, error) {
	return viewJSON[platform.Session](db, bSessions, tokenHash)
}

// DeleteSession implements platform.AccountStore.
func (db *DB) DeleteSession(ctx context.Context, tokenHash string) error {
	return db.update(func(tx *bbolt.Tx) error {
		b, err := bucket(tx, bSessions)
		if err != nil {
			return err
		}
		return b.Delete([]byte(tokenHash))
	})
}

// CreateOrg implements platform.AccountStore.
func (db *DB) CreateOrg(ctx context.Context, o *platform.Org) error {
	if err := ctxErr(ctx); err != nil {
		return err
	}
	return db.update(func(tx *bbolt.Tx) error {
		var u platform.User
		if err := getJSON(tx, bUsers, o.OwnerID, &u, platform.ErrNotFound); err != nil {
			return err
		}
		u.OrgIDs = append(u.OrgIDs, o.ID)
		if err := putJSON(tx, bUsers, u.ID, &u); err != nil {
			return err
		}
		return putJSON(tx, bOrgs, o.ID, o)
	})
}

// Org implements platform.AccountStore.
func (db *DB) Org(ctx context.Context, id string) (*platform.Org, error) {
	return viewJSON[platform.Org](db, bOrgs, id)
}

// CreateApplication implements platform.DeveloperStore.
func (db *DB) CreateApplication(ctx context.Context, a *platform.Application) error {
	return db.update(func(tx *bbolt.Tx) error {
		var o platform.Org
		if err := getJSON(tx, bOrgs, a.OrgID, &o, platform.ErrNotFound); err != nil {
			return err
		}
		return putJSON(tx, bApps, a.ID, a)
	})
}

// Application implements platform.DeveloperStore.
func (db *DB) Application(ctx context.Context, id string) (*platform.Application, error) {
	return viewJSON[platform.Application](db, bApps, id)
}

// CreateKey implements platform.DeveloperStore.
func (db *DB) CreateKey(ctx context.Context, k *platform.APIKey) error {
	return db.update(func(tx *bbolt.Tx) error {
		idx, err := bucket(tx, bKeysByHash)
		if err != nil {
			return err
		}
		if err := idx.Put([]byte(k.SecretHash), []byte(k.ID)); err != nil {
			return err
		}
		return putJSON(tx, bKeys, k.ID, k)
	})
}

// KeyBySecretHash implements platform.DeveloperStore.
func (db *DB) KeyBySecretHash(ctx context.Context, hash string) (*platform.APIKey, error) {
	var k platform.APIKey
	err := db.view(func(tx *bbolt.Tx) error {
		idx := tx.Bucket([]byte(bKeysByHash))
		if idx == nil {
			return platform.ErrNotFound
		}
		id := idx.Get([]byte(hash))
		if id == nil {
			return platform.ErrNotFound
		}
		return getJSON(tx, bKeys, string(id), &k, platform.ErrNotFound)
	})
	if err != nil {
		return nil, err
	}
	return &k, nil
}

// CreateConnection implements platform.DeveloperStore.
func (db *DB) CreateConnection(ctx context.Context, c *platform.Connection) error {
	defer db.conns.changed()
	return db.update(func(tx *bbolt.Tx) error {
		if err := putJSON(tx, bConnections, c.ID, c); err != nil {
			return err
		}
		return indexConnection(tx, c)
	})
}

// Connection implements platform.DeveloperStore.
func (db *DB) Connection(ctx context.Context, id string) (*platform.Connection, error) {
	return viewJSON[platform.Connection](db, bConnections, id)
}

// ClaimIdempotency implements platform.IdempotencyStore. bbolt serializes write
// transactions, so the read-then-put below is atomic across concurrent claims.
func (db *DB) ClaimIdempotency(ctx context.Context, key string, rec *platform.IdempotencyRecord, notBefore, unfinishedBefore time.Time) (*platform.IdempotencyRecord, error) {
	var prev *platform.IdempotencyRecord
	err := db.update(func(tx *bbolt.Tx) error {
		var old platform.IdempotencyRecord
		err := getJSON(tx, bIdempotency, key, &old, platform.ErrNotFound)
		switch {
		case err == nil && !old.CreatedAt.Before(notBefore) && (old.Done || !old.CreatedAt.Before(unfinishedBefore)):
			prev = &old
			return nil
		case err != nil && !errors.Is(err, platform.ErrNotFound):
			return err
		}
		return putJSON(tx, bIdempotency, key, rec)
	})
	return prev, err
}

// FinishIdempotency implements platform.IdempotencyStore.
func (db *DB) FinishIdempotency(ctx context.Context, key string, rec *platform.IdempotencyRecord) error {
	return db.update(func(tx *bbolt.Tx) error { return putJSON(tx, bIdempotency, key, rec) })
}

// ReleaseIdempotency implements platform.IdempotencyStore.
func (db *DB) ReleaseIdempotency(ctx context.Context, key string) error {
	return db.update(func(tx *bbolt.Tx) error {
		b, err := bucket(tx, bIdempotency)
		if err != nil {
			return err
		}
		return b.Delete([]byte(key))
	})
}

// PurgeIdempotency implements platform.IdempotencyStore.
func (db *DB) PurgeIdempotency(ctx context.Context, before time.Time, unfinished bool) (int, error) {
	n := 0
	err := db.update(func(tx *bbolt.Tx) error {
		b, err := bucket(tx, bIdempotency)
		if err != nil {
			return err
		}
		var doomed [][]byte
		err = b.ForEach(func(k, v []byte) error {
			var rec platform.IdempotencyRecord
			if err := jsonUnmarshal(v, &rec); err != nil || rec.CreatedAt.Before(before) || (unfinished && !rec.Done) {
				doomed = append(doomed, slices.Clone(k))
			}
			return nil
		})
		if err != nil {
			return err
		}
		for _, k := range doomed {
			if err := b.Delete(k); err != nil {
				return err
			}
		}
		n = len(doomed)
		return nil
	})
	return n, err
}

// ApplicationsOf implements platform.DeveloperStore.
func (db *DB) ApplicationsOf(ctx context.Context, orgID string) ([]*platform.Application, error) {
	var out []*platform.Application
	err := db.view(func(tx *bbolt.Tx) error {
		b := tx.Bucket([]byte(bApps))
		if b == nil {
			return nil
		}
		return b.ForEach(func(_, v []byte) error {
			var a platform.Application
			if err := jsonUnmarshal(v, &a); err != nil {
				return err
			}
			if a.OrgID == orgID {
				out = append(out, &a)
			}
			return nil
		})
	})
	return out, err
}

// KeysOf implements platform.DeveloperStore.
func (db *DB) KeysOf(ctx context.Context, appID string) ([]*platform.APIKey, error) {
	var out []*platform.APIKey
	err := db.view(func(tx *bbolt.Tx) error {
		b := tx.Bucket([]byte(bKeys))
		if b == nil {
			return nil
		}
		return b.ForEach(func(_, v []byte) error {
			var k platform.APIKey
			if err := jsonUnmarshal(v, &k); err != nil {
				return err
			}
			if k.AppID == appID {
				out = append(out, &k)
			}
			return nil
		})
	})
	return out, err
}

// UpdateKey implements platform.DeveloperStore.
func (db *DB) UpdateKey(ctx context.Context, id string, fn func(*platform.APIKey) error) (*platform.APIKey, error) {
	return updateJSON(db, ctx, bKeys, id, fn)
}

// ConnectionsOf implements platform.DeveloperStore.
func (db *DB) ConnectionsOf(ctx context.Context, userID string) ([]*platform.Connection, error) {
	g := db.conns.gen.Load()
	if cs, ok := db.conns.get(g, userID); ok {
		return cs, ctxErr(ctx)
	}
	cs, err := db.connectionsUnder(ctx, bConnectionsByUser, userID+"/")
	if err == nil {
		db.conns.put(g, userID, cs)
	}
	return cs, err
}

// ConnectionsOfApp implements platform.DeveloperStore.
func (db *DB) ConnectionsOfApp(ctx context.Context, appID string) ([]*platform.Connection, error) {
	return db.connectionsUnder(ctx, bConnectionsByApp, appID+"/")
}
