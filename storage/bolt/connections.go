package bolt

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	bbolt "go.etcd.io/bbolt"

	"svc.dev/svc/platform"
)

// Bucket names of the connect flow's records.
const (
	bConnectSessions = "connect_sessions"
	bOAuthStates     = "oauth_states"
)

var _ platform.ConnectStore = (*DB)(nil)

// UpdateConnection implements platform.ConnectionUpdater.
func (db *DB) UpdateConnection(ctx context.Context, id string, fn func(*platform.Connection) error) (*platform.Connection, error) {
	defer db.conns.changed()
	return updateJSON(db, ctx, bConnections, id, fn)
}

// connCache keeps the connections of the end users asked about lately: every event asks
// which applications reach its tenant (ConnectionsOf), and a clean-up makes one per message.
// Any write to the connections (create, update, erase) moves gen on once it committed; an
// answer read under an older gen is not used.
type connCache struct {
	gen    atomic.Uint64
	mu     sync.Mutex
	at     uint64 // the gen of byUser
	byUser map[string][]platform.Connection
}

// maxCachedUsers bounds the cache: past it, it starts over.
const maxCachedUsers = 10_000

// changed tells the cache that the connections changed (call it after the change committed).
func (c *connCache) changed() { c.gen.Add(1) }

// get returns the cached connections of user, read under gen g.
func (c *connCache) get(g uint64, user string) ([]*platform.Connection, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.at != g {
		return nil, false
	}
	cs, ok := c.byUser[user]
	if !ok {
		return nil, false
	}
	out := make([]*platform.Connection, len(cs))
	for i := range cs {
		cp := cs[i]
		out[i] = &cp
	}
	return out, true
}

// put keeps cs as the connections of user read under gen g.
func (c *connCache) put(g uint64, user string, cs []*platform.Connection) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.at != g || c.byUser == nil || len(c.byUser) >= maxCachedUsers {
		c.at, c.byUser = g, map[string][]platform.Connection{}
	}
	kept := make([]platform.Connection, len(cs))
	for i, x := range cs {
		kept[i] = *x
	}
	c.byUser[user] = kept
}

// CreateConnectSession implements platform.ConnectStore.
func (db *DB) CreateConnectSession(ctx context.Context, c *platform.ConnectSession) error {
	if err := ctxErr(ctx); err != nil {
		return err
	}
	return db.update(func(tx *bbolt.Tx) error { return putJSON(tx, bConnectSessions, c.ID, c) })
}

// ConnectSession implements platform.ConnectStore.
func (db *DB) ConnectSession(ctx context.Context, id string) (*platform.ConnectSession, error) {
	return viewJSON[platform.ConnectSession](db, bConnectSessions, id)
}

// UpdateConnectSession implements platform.ConnectStore.
func (db *DB) UpdateConnectSession(ctx context.Context, id string, fn func(*platform.ConnectSession) error) (*platform.ConnectSession, error) {
	return updateJSON(db, ctx, bConnectSessions, id, fn)
}

// PutOAuthState implements platform.ConnectStore. States live minutes and few are in flight,
// so sweeping the expired ones on every put keeps the bucket small without a janitor.
func (db *DB) PutOAuthState(ctx context.Context, s *platform.OAuthState, now time.Time) error {
	if err := ctxErr(ctx); err != nil {
		return err
	}
	return db.update(func(tx *bbolt.Tx) error {
		b, err := bucket(tx, bOAuthStates)
		if err != nil {
			return err
		}
		var doomed [][]byte
		err = b.ForEach(func(k, v []byte) error {
			var old platform.OAuthState
			if err := jsonUnmarshal(v, &old); err != nil || !now.Before(old.ExpiresAt) {
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
		return putJSON(tx, bOAuthStates, s.Hash, s)
	})
}

// TakeOAuthState implements platform.ConnectStore: the read and the delete are one write
// transaction, so of two callbacks with the same state exactly one gets the record.
func (db *DB) TakeOAuthState(ctx context.Context, hash string) (*platform.OAuthState, error) {
	if err := ctxErr(ctx); err != nil {
		return nil, err
	}
	var s platform.OAuthState
	err := db.update(func(tx *bbolt.Tx) error {
		if err := getJSON(tx, bOAuthStates, hash, &s, platform.ErrNotFound); err != nil {
			return err
		}
		b, err := bucket(tx, bOAuthStates)
		if err != nil {
			return err
		}
		return b.Delete([]byte(hash))
	})
	if err != nil {
		return nil, err
	}
	return &s, nil
}

// bConnectionsByApp indexes connections by application and end user: keys "app/user/cxn", so
// that the connections of one application (to one user) are found without reading them all;
// bConnectionsByUser indexes them by end user: keys "user/cxn" (every event asks which
// applications reach its tenant). Connections never change application or user, so only
// CreateConnection writes them.
const (
	bConnectionsByApp  = "connections_by_app"
	bConnectionsByUser = "connections_by_user"
)

func connectionIndexKey(c *platform.Connection) []byte {
	return []byte(c.AppID + "/" + c.UserID + "/" + c.ID)
}

func connectionUserKey(c *platform.Connection) []byte { return []byte(c.UserID + "/" + c.ID) }

// indexConnection writes c's keys in both indexes.
func indexConnection(tx *bbolt.Tx, c *platform.Connection) error {
	byApp, err := bucket(tx, bConnectionsByApp)
	if err != nil {
		return err
	}
	byUser, err := bucket(tx, bConnectionsByUser)
	if err != nil {
		return err
	}
	if err := byApp.Put(connectionIndexKey(c), nil); err != nil {
		return err
	}
	return byUser.Put(connectionUserKey(c), nil)
}

// unindexConnection deletes c's keys from both indexes (its record is being deleted).
func unindexConnection(tx *bbolt.Tx, c *platform.Connection) {
	if idx := tx.Bucket([]byte(bConnectionsByApp)); idx != nil {
		idx.Delete(connectionIndexKey(c))
	}
	if idx := tx.Bucket([]byte(bConnectionsByUser)); idx != nil {
		idx.Delete(connectionUserKey(c))
	}
}

// connectionsUnder lists the connections whose ids end the keys of index under prefix, in key
// order.
func (db *DB) connectionsUnder(ctx context.Context, index, prefix string) ([]*platform.Connection, error) {
	if err := ctxErr(ctx); err != nil {
		return nil, err
	}
	var out []*platform.Connection
	p := []byte(prefix)
	err := db.view(func(tx *bbolt.Tx) error {
		idx := tx.Bucket([]byte(index))
		if idx == nil {
			return nil
		}
		cur := idx.Cursor()
		for k, _ := cur.Seek(p); k != nil && prefixed(k, p); k, _ = cur.Next() {
			id := k[bytes.LastIndexByte(k, '/')+1:]
			var c platform.Connection
			switch err := getJSON(tx, bConnections, string(id), &c, platform.ErrNotFound); {
			case errors.Is(err, platform.ErrNotFound):
				continue // a key left by a store that erased connections without their keys
			case err != nil:
				return err
			}
			out = append(out, &c)
		}
		return nil
	})
	return out, err
}

// ConnectionsOfAppUser lists the connections of an application to one end user, whatever
// their state, in id order.
func (db *DB) ConnectionsOfAppUser(ctx context.Context, appID, userID string) ([]*platform.Connection, error) {
	return db.connectionsUnder(ctx, bConnectionsByApp, appID+"/"+userID+"/")
}

// buildConnectionIndex makes the connection indexes from the stored connections, once each
// (a store from before an index existed gets it at its first open).
func (db *DB) buildConnectionIndex() error {
	return db.update(func(tx *bbolt.Tx) error {
		if tx.Bucket([]byte(bConnectionsByApp)) != nil && tx.Bucket([]byte(bConnectionsByUser)) != nil {
			return nil
		}
		b := tx.Bucket([]byte(bConnections))
		if b == nil {
			return nil
		}
		return b.ForEach(func(_, v []byte) error {
			var c platform.Connection
			if err := jsonUnmarshal(v, &c); err != nil {
				return err
			}
			return indexConnection(tx, &c)
		})
	})
}
