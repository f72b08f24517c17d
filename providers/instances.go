package providers

import (
	"context"
	"errors"
	"strings"
	"sync"
)

// Instances caches opened provider instances by key (a tenant's source, say), for a caller
// that opens each source once and reuses it. Its lock is never held across a provider's Open
// (which, through a plugin, is a call into another process that may take up to its deadline):
// opening one key waits for nothing but an open of the same key already in flight, and a
// slow or stuck provider holds up only the callers of its own source. It is safe for
// concurrent use; the zero value is ready.
type Instances struct {
	mu      sync.Mutex
	entries map[string]*instance
}

// instance is a cache entry: opened, or being opened (done not yet closed).
type instance struct {
	done chan struct{}
	p    Provider
	val  any // what the caller stored with it (a source ref)
	err  error
	gone bool // forgotten while being opened: close it once opened
}

// Get returns the provider cached under key, and the value stored with it, opening it with
// open if there is none. Concurrent Gets of one key share one open; an open that fails is not
// cached (the next Get tries again). A caller whose ctx ends while another's open of the key
// is in flight returns ctx's error; the open goes on for the others.
func (c *Instances) Get(ctx context.Context, key string, open func(ctx context.Context) (Provider, any, error)) (Provider, any, error) {
	for {
		c.mu.Lock()
		if c.entries == nil {
			c.entries = map[string]*instance{}
		}
		e, ok := c.entries[key]
		if !ok {
			e = &instance{done: make(chan struct{})}
			c.entries[key] = e
			c.mu.Unlock()
			p, val, err := open(ctx)
			c.mu.Lock()
			e.p, e.val, e.err = p, val, err
			if err != nil || e.gone {
				if c.entries[key] == e {
					delete(c.entries, key)
				}
			}
			gone := e.gone
			c.mu.Unlock()
			close(e.done)
			if gone && err == nil {
				// Forgotten while it opened (its source was deleted): nobody holds it.
				CloseProvider(p)
				return nil, nil, ErrForgotten
			}
			return p, val, err
		}
		c.mu.Unlock()
		select {
		case <-e.done:
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		}
		switch {
		case e.err == nil && !e.gone:
			return e.p, e.val, nil
		case ctx.Err() != nil:
			return nil, nil, ctx.Err()
		case e.err != nil && !errors.Is(e.err, context.Canceled) && !errors.Is(e.err, context.DeadlineExceeded):
			return nil, nil, e.err
		}
		// Forgotten, or the opener's own context ended: open again.
	}
}

// ErrForgotten is returned by Instances.Get when the key was forgotten while this call opened
// it; the instance was closed.
var ErrForgotten = errors.New("provider instance forgotten while it was opened")

// Forget closes and drops the provider cached under key; one being opened is closed once
// opened. The next Get opens it again.
func (c *Instances) Forget(key string) {
	c.forget(func(k string) bool { return k == key })
}

// ForgetPrefix forgets every key that starts with prefix (a tenant's sources).
func (c *Instances) ForgetPrefix(prefix string) {
	c.forget(func(k string) bool { return strings.HasPrefix(k, prefix) })
}

// Close forgets every key.
func (c *Instances) Close() {
	c.forget(func(string) bool { return true })
}

func (c *Instances) forget(match func(string) bool) {
	var closing []Provider
	c.mu.Lock()
	for k, e := range c.entries {
		if !match(k) {
			continue
		}
		delete(c.entries, k)
		select {
		case <-e.done:
			closing = append(closing, e.p)
		default:
			e.gone = true
		}
	}
	c.mu.Unlock()
	for _, p := range closing { // outside the lock: a plugin instance's Close is a call
		CloseProvider(p)
	}
}
