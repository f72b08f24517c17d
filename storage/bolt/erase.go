package bolt

import (
	"bytes"
	"context"
	"errors"

	bbolt "go.etcd.io/bbolt"

	"svc.dev/svc/platform"
)

// eraseBatch bounds the deletions of one write transaction, so erasing a large tenant never
// holds the writer for long.
const eraseBatch = 1000

// EraseTenant deletes every record of a tenant, in every bucket whose keys are the tenant
// ("live:usr_...") or start with it and a slash (resources, journals, blobs, vault records
// and the vault's data key), except those keep(bucket, key) keeps (nil keeps none). It works in
// transactions of at most 1000 deletions and returns how many records it deleted.
func (db *DB) EraseTenant(ctx context.Context, tenant string, keep func(bucket, key string) bool) (int, error) {
	exact, prefix := []byte(tenant), []byte(tenant+"/")
	total := 0
	for {
		n := 0
		err := db.update(func(tx *bbolt.Tx) error {
			return tx.ForEach(func(name []byte, b *bbolt.Bucket) error {
				if n >= eraseBatch {
					return nil
				}
				var del [][]byte
				if b.Get(exact) != nil && (keep == nil || !keep(string(name), string(exact))) {
					del = append(del, exact)
				}
				c := b.Cursor()
				for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix) && n+len(del) < eraseBatch; k, _ = c.Next() {
					if keep != nil && keep(string(name), string(k)) {
						continue
					}
					del = append(del, bytes.Clone(k))
				}
				for _, k := range del {
					if err := b.Delete(k); err != nil {
						return err
					}
				}
				n += len(del)
				return nil
			})
		})
		total += n
		if err != nil {
			return total, err
		}
		if n == 0 {
			_, err := db.pruneOwners(ctx, tenant) // index entries, not records: not counted
			return total, err
		}
		if err := ctxErr(ctx); err != nil {
			return total, err
		}
	}
}

// DeleteUser removes a user's record, email index entry, sessions, connections and pending
// OAuth states, and takes the user out of the connect sessions they decided (which stay, as
// the application's record of its request): the account's credentials and links. Everything
// else the user owned is erased per tenant (EraseTenant).
func (db *DB) DeleteUser(ctx context.Context, userID string) error {
	defer db.conns.changed()
	if err := ctxErr(ctx); err != nil {
		return err
	}
	return db.update(func(tx *bbolt.Tx) error {
		var u platform.User
		if err := getJSON(tx, bUsers, userID, &u, platform.ErrNotFound); err != nil {
			return err
		}
		if idx := tx.Bucket([]byte(bUsersByEmail)); idx != nil {
			if err := idx.Delete([]byte(emailKey(u.Email))); err != nil {
				return err
			}
		}
		if err := tx.Bucket([]byte(bUsers)).Delete([]byte(userID)); err != nil {
			return err
		}
		if err := deleteJSONWhere(tx, bSessions, func(s *platform.Session) bool { return s.UserID == userID }); err != nil {
			return err
		}
		if err := deleteJSONWhere(tx, bConnections, func(c *platform.Connection) bool {
			if c.UserID != userID {
				return false
			}
			unindexConnection(tx, c)
			return true
		}); err != nil {
			return err
		}
		if err := deleteJSONWhere(tx, bOAuthStates, func(s *platform.OAuthState) bool { return s.UserID == userID }); err != nil {
			return err
		}
		return updateJSONWhere(tx, bConnectSessions, func(c *platform.ConnectSession) bool {
			if c.UserID != userID {
				return false
			}
			c.UserID, c.ConnectedSourceIDs = "", nil
			return true
		})
	})
}

// updateJSONWhere rewrites the JSON records of a bucket that fn changed (fn returns true).
func updateJSONWhere[T any](tx *bbolt.Tx, name string, fn func(*T) bool) error {
	b := tx.Bucket([]byte(name))
	if b == nil {
		return nil
	}
	type change struct {
		k []byte
		v *T
	}
	var changed []change
	err := b.ForEach(func(k, v []byte) error {
		rec := new(T)
		if err := jsonUnmarshal(v, rec); err != nil {
			return err
		}
		if fn(rec) {
			changed = append(changed, change{bytes.Clone(k), rec})
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, c := range changed {
		if err := putJSON(tx, name, string(c.k), c.v); err != nil {
			return err
		}
	}
	return nil
}

// deleteJSONWhere deletes the JSON records of a bucket that match.
func deleteJSONWhere[T any](tx *bbolt.Tx, name string, match func(*T) bool) error {
	b := tx.Bucket([]byte(name))
	if b == nil {
		return nil
	}
	var del [][]byte
	err := b.ForEach(func(k, v []byte) error {
		var rec T
		if err := jsonUnmarshal(v, &rec); err != nil {
			return err
		}
		if match(&rec) {
			del = append(del, bytes.Clone(k))
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, k := range del {
		if err := b.Delete(k); err != nil {
			return err
		}
	}
	return nil
}

// Scan calls fn with every record of every bucket (nested buckets' names joined with "/"),
// in one read transaction, until fn returns false: for audits of what the store holds, such
// as the test that an erased tenant left nothing behind.
func (db *DB) Scan(fn func(bucket string, key, value []byte) bool) error {
	return db.view(func(tx *bbolt.Tx) error {
		stop := errors.New("stop")
		var walk func(name string, b *bbolt.Bucket) error
		walk = func(name string, b *bbolt.Bucket) error {
			return b.ForEach(func(k, v []byte) error {
				if v == nil { // a nested bucket
					if nb := b.Bucket(k); nb != nil {
						return walk(name+"/"+string(k), nb)
					}
					return nil
				}
				if !fn(name, k, v) {
					return stop
				}
				return nil
			})
		}
		err := tx.ForEach(func(name []byte, b *bbolt.Bucket) error { return walk(string(name), b) })
		if errors.Is(err, stop) {
			return nil
		}
		return err
	})
}
