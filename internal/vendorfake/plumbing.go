package vendorfake

import (
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Grants is the state of a fake's authorization server: the access tokens
// it accepts (each until its expiry) and the refresh tokens that mint
// more, and the authorization codes its authorization endpoint issued
// and no exchange has used yet (authorize.go). Every fake holds one. It
// is safe for concurrent use.
type Grants struct {
	mu      sync.Mutex
	prefix  string
	access  map[string]time.Time
	refresh map[string]bool
	minted  int
	rotate  bool // each refresh replaces the refresh token it used
	codes   map[string]authCode
}

// NewGrants returns grants accepting access (for an hour) and refresh;
// tokens it mints are prefix + "-" + a number.
func NewGrants(prefix, access, refresh string) *Grants {
	return &Grants{prefix: prefix, access: map[string]time.Time{access: time.Now().Add(time.Hour)}, refresh: map[string]bool{refresh: true}}
}

// Valid reports whether an access token is accepted now.
func (g *Grants) Valid(token string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	exp, ok := g.access[token]
	return ok && time.Now().Before(exp)
}

// Refresh mints an access token for a valid refresh token (an hour's
// worth); ok is false when the refresh token is unknown or revoked. When
// the grants rotate refresh tokens (RotateRefreshTokens), rotated is the
// refresh token that replaces the one used, which stops working; else it
// is empty.
func (g *Grants) Refresh(refresh string) (token, rotated string, ok bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.refresh[refresh] {
		return "", "", false
	}
	g.minted++
	n := strconv.Itoa(g.minted)
	token = g.prefix + "-" + n
	g.access[token] = time.Now().Add(time.Hour)
	if g.rotate {
		delete(g.refresh, refresh)
		rotated = g.prefix + "-refresh-" + n
		g.refresh[rotated] = true
	}
	return token, rotated, true
}

// RotateRefreshTokens makes each refresh answer a new refresh token and
// revoke the one it used, as the strictest vendors do: a connector that
// does not keep the new one cannot refresh again.
func (g *Grants) RotateRefreshTokens() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.rotate = true
}

// Mint issues a new grant's tokens, as an authorization code's exchange
// does: an access token (for an hour) and a refresh token.
func (g *Grants) Mint() (access, refresh string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.minted++
	n := strconv.Itoa(g.minted)
	access, refresh = g.prefix+"-"+n, g.prefix+"-refresh-"+n
	g.access[access] = time.Now().Add(time.Hour)
	g.refresh[refresh] = true
	return access, refresh
}

// Revoke revokes the grant, as a user removing the app's access does:
// every access token stops working and refresh tokens are refused.
func (g *Grants) Revoke() {
	g.mu.Lock()
	defer g.mu.Unlock()
	clear(g.access)
	clear(g.refresh)
}

// ExpireAccess makes the current access tokens invalid (as when they
// expire early); refresh tokens still mint new ones.
func (g *Grants) ExpireAccess() {
	g.mu.Lock()
	defer g.mu.Unlock()
	clear(g.access)
}

// Bearer returns a request's bearer token ("" for none).
func Bearer(r *http.Request) string {
	t, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	return t
}

// PathFault makes matching requests fail: a request matches when its
// method (empty: any) and path prefix do; after After matching requests
// pass, the next Times get Status (with Retry-After seconds when set).
type PathFault struct {
	Method     string
	PathPrefix string
	Status     int
	RetryAfter int
	Times      int
	After      int
	// Performed makes the fake carry the request out before it answers
	// Status: the answer is lost, not the request (a create that stored
	// and then failed). Only the Graph fake honours it so far.
	Performed bool
}

// maxHits bounds the request times a fake keeps.
const maxHits = 1 << 16

// Traffic counts a fake's API requests, keeps their arrival times (for
// pacing tests) and holds its path faults. It is safe for concurrent use.
type Traffic struct {
	mu       sync.Mutex
	requests int64
	hits     []time.Time
	faults   []*PathFault
}

// Arrive records an API request and returns the fault it must get, or nil.
func (t *Traffic) Arrive(r *http.Request) *PathFault {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.requests++
	if len(t.hits) == maxHits {
		t.hits = append(t.hits[:0], t.hits[maxHits/2:]...) // a long-running fake keeps the recent half
	}
	t.hits = append(t.hits, time.Now())
	for _, f := range t.faults {
		if (f.Method == "" || f.Method == r.Method) && strings.HasPrefix(r.URL.Path, f.PathPrefix) && f.Times > 0 {
			if f.After > 0 {
				f.After--
				continue
			}
			f.Times--
			hit := *f
			return &hit
		}
	}
	return nil
}

// Inject adds a fault.
func (t *Traffic) Inject(f PathFault) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.faults = append(t.faults, &f)
}

// ClearFaults removes every fault.
func (t *Traffic) ClearFaults() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.faults = nil
}

// Requests returns how many API requests the fake has answered.
func (t *Traffic) Requests() int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.requests
}

// RequestTimes returns the arrival times of the API requests so far (the
// latest 32,768 to 65,536 of them).
func (t *Traffic) RequestTimes() []time.Time {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]time.Time(nil), t.hits...)
}
