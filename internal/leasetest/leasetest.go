// Package leasetest holds platform.Leases in memory for tests of several holders sharing
// work, as replicas share a database's leases; a holder's leases can be made to expire.
package leasetest

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"svc.dev/svc/platform"
)

// Leases are the leases every holder of a test shares.
type Leases struct {
	mu      sync.Mutex
	holders map[string]string // lease name -> holder
}

// New returns leases nobody holds.
func New() *Leases { return &Leases{holders: map[string]string{}} }

// Holder returns the leases as holder takes them.
func (l *Leases) Holder(holder string) platform.Leases { return holderOf{l, holder} }

// HolderOf returns who holds the lease named name ("" for nobody).
func (l *Leases) HolderOf(name string) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.holders[name]
}

// Expire ends every lease of holder, as when it died and stopped renewing them.
func (l *Leases) Expire(holder string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for name, h := range l.holders {
		if h == holder {
			delete(l.holders, name)
		}
	}
}

type holderOf struct {
	l      *Leases
	holder string
}

func (h holderOf) Take(_ context.Context, name string) (platform.Lease, error) {
	h.l.mu.Lock()
	defer h.l.mu.Unlock()
	if cur, ok := h.l.holders[name]; ok && cur != h.holder {
		return nil, fmt.Errorf("%s: %w", name, platform.ErrLeaseTaken)
	}
	h.l.holders[name] = h.holder
	return &lease{h.l, name, h.holder}, nil
}

type lease struct {
	l            *Leases
	name, holder string
}

func (m *lease) Renew(context.Context) error {
	m.l.mu.Lock()
	defer m.l.mu.Unlock()
	if m.l.holders[m.name] != m.holder {
		return errors.New("lease lost")
	}
	return nil
}

func (m *lease) Release(context.Context) error {
	m.l.mu.Lock()
	defer m.l.mu.Unlock()
	if m.l.holders[m.name] == m.holder {
		delete(m.l.holders, m.name)
	}
	return nil
}
