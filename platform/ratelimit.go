package platform

import (
	"math"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// RateLimit is a request allowance: Limit requests per Window, refilled continuously (a token
// bucket of Limit tokens refilling at Limit/Window).
type RateLimit struct {
	Limit  int
	Window time.Duration
}

// DefaultRateLimit is the per-principal allowance when none is configured.
var DefaultRateLimit = RateLimit{Limit: 600, Window: time.Minute}

// RateDecision is the outcome of one request against a principal's allowance, in the terms of
// the RateLimit-* and Retry-After headers.
type RateDecision struct {
	Allowed    bool
	Limit      int
	Remaining  int
	Reset      int // seconds until the allowance is full again
	RetryAfter int // seconds until a request would be allowed; 0 when allowed
}

// Limiter keeps one token bucket per principal.
type Limiter struct {
	cfg     RateLimit
	now     func() time.Time
	mu      sync.Mutex
	buckets map[string]*bucket
	takes   int
}

type bucket struct {
	lim  *rate.Limiter
	seen time.Time
}

// NewLimiter returns a limiter with the given allowance; now defaults to time.Now.
func NewLimiter(cfg RateLimit, now func() time.Time) *Limiter {
	if cfg.Limit <= 0 || cfg.Window <= 0 {
		cfg = DefaultRateLimit
	}
	if now == nil {
		now = time.Now
	}
	return &Limiter{cfg: cfg, now: now, buckets: map[string]*bucket{}}
}

// Take spends one request of key's allowance if there is one.
func (l *Limiter) Take(key string) RateDecision {
	now := l.now()
	every := rate.Limit(float64(l.cfg.Limit) / l.cfg.Window.Seconds())
	l.mu.Lock()
	defer l.mu.Unlock()
	b, ok := l.buckets[key]
	if !ok {
		b = &bucket{lim: rate.NewLimiter(every, l.cfg.Limit)}
		l.buckets[key] = b
	}
	b.seen = now
	l.takes++
	if l.takes%1024 == 0 {
		l.sweep(now)
	}
	allowed := b.lim.AllowN(now, 1)
	tokens := b.lim.TokensAt(now)
	d := RateDecision{
		Allowed:   allowed,
		Limit:     l.cfg.Limit,
		Remaining: max(0, int(math.Floor(tokens))),
		Reset:     int(math.Ceil((float64(l.cfg.Limit) - tokens) / float64(every))),
	}
	if !allowed {
		d.RetryAfter = max(1, int(math.Ceil((1-tokens)/float64(every))))
	}
	return d
}

// sweep forgets buckets idle for a whole window: they would be full again anyway.
func (l *Limiter) sweep(now time.Time) {
	for k, b := range l.buckets {
		if now.Sub(b.seen) > l.cfg.Window {
			delete(l.buckets, k)
		}
	}
}
