package bolt

import (
	"context"
	"fmt"
	"sync"
	"time"

	"go.etcd.io/bbolt"

	"svc.dev/svc/storage"
)

// Leases are the one process's: a bbolt file is open in one process at a time (bbolt locks
// it), so the leases live in memory, cost a map lookup, and none survives the process, which
// is right: after a restart nothing of the last process still runs.
func (s *Seam) Leases() storage.Leases { return &s.db.lease }

var _ storage.Leaser = (*Seam)(nil)

// localLeases is storage.Leases in memory.
type localLeases struct {
	mu     sync.Mutex
	held   map[string]storage.Lease
	tokens map[string]int64 // the last token of each name ever claimed
}

func (l *localLeases) Claim(_ context.Context, name, holder string, ttl time.Duration) (storage.Lease, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.held == nil {
		l.held, l.tokens = map[string]storage.Lease{}, map[string]int64{}
	}
	now := time.Now()
	if cur, ok := l.held[name]; ok && now.Before(cur.Expires) {
		if cur.Holder != holder {
			return storage.Lease{}, fmt.Errorf("claim %s: %w", name, storage.ErrLeaseHeld)
		}
		cur.Expires = now.Add(ttl)
		l.held[name] = cur
		return cur, nil
	}
	l.tokens[name]++
	cur := storage.Lease{Name: name, Holder: holder, Token: l.tokens[name], Expires: now.Add(ttl)}
	l.held[name] = cur
	return cur, nil
}

// holds reports whether lease is the running lease on its name; l.mu is held.
func (l *localLeases) holds(lease storage.Lease, now time.Time) bool {
	cur, ok := l.held[lease.Name]
	return ok && cur.Holder == lease.Holder && cur.Token == lease.Token && now.Before(cur.Expires)
}

func (l *localLeases) Renew(_ context.Context, lease storage.Lease, ttl time.Duration) (storage.Lease, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := time.Now()
	if !l.holds(lease, now) {
		return storage.Lease{}, fmt.Errorf("renew %s: %w", lease.Name, storage.ErrLeaseLost)
	}
	lease.Expires = now.Add(ttl)
	l.held[lease.Name] = lease
	return lease, nil
}

func (l *localLeases) Release(_ context.Context, lease storage.Lease) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if cur, ok := l.held[lease.Name]; ok && cur.Holder == lease.Holder && cur.Token == lease.Token {
		delete(l.held, lease.Name)
	}
	return nil
}

// Held checks the lease when the transaction it is passed to applies its writes.
func (l *localLeases) Held(lease storage.Lease) storage.Write {
	return Extra{func(*bbolt.Tx) error {
		l.mu.Lock()
		defer l.mu.Unlock()
		if !l.holds(lease, time.Now()) {
			return fmt.Errorf("lease %s: %w", lease.Name, storage.ErrLeaseLost)
		}
		return nil
	}}
}
