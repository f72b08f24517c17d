// Package keylock serializes work on the same key (a message's Message-ID) among the
// goroutines of one process, with a fixed set of locks: two keys may share a lock, which only
// orders their work, never mixes it.
package keylock

import (
	"hash/maphash"
	"sync"
)

// Locks is a set of locks by key. The zero value is ready to use.
type Locks struct {
	seedOnce sync.Once
	seed     maphash.Seed
	mu       [64]sync.Mutex
}

// Lock locks key's lock and returns its unlock.
func (l *Locks) Lock(key string) (unlock func()) {
	l.seedOnce.Do(func() { l.seed = maphash.MakeSeed() })
	m := &l.mu[maphash.String(l.seed, key)%uint64(len(l.mu))]
	m.Lock()
	return m.Unlock
}
