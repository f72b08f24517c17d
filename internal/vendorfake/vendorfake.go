package vendorfake

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"time"
)

// Fault is one injected failure.
type Fault struct {
	// Status is the HTTP status to answer (429, 500, 503, 403, ...); 0
	// with Drop set drops the connection instead.
	Status int
	// RetryAfter is the Retry-After header sent with it ("" for none).
	RetryAfter string
	// Reason is the Google error reason in the body (rateLimitExceeded,
	// userRateLimitExceeded, backendError); empty picks one from Status.
	Reason string
	// Drop closes the connection without an answer.
	Drop bool
}

// Base is the state every fake has: grants, faults, the request log and
// the body recorder. Its zero value is not usable; use NewBase.
type Base struct {
	*Grants // the tokens it accepts: Revoke, ExpireAccess
	srv     *httptest.Server

	mu       sync.Mutex
	faults   []Fault // consumed in order, one per API request
	match    func(*http.Request) bool
	delay    time.Duration
	log      []Request
	recorder func(schema string, body []byte)
}

// Request is one API request the fake answered (or failed).
type Request struct {
	At     time.Time
	Method string
	Path   string
	Cost   int // the vendor's quota units for it
	Status int
}

// Credentials of a fresh fake: the access token it accepts, the refresh
// token that mints more, and svc's client id at it.
const (
	AccessToken  = "fake-access-token"
	RefreshToken = "fake-refresh-token"
	ClientID     = "svc-fake-client"
	ClientSecret = "svc-fake-secret"
)

// NewBase returns a fake's shared state, accepting AccessToken (for an
// hour) and RefreshToken.
func NewBase() *Base {
	return &Base{Grants: NewGrants("fake-access", AccessToken, RefreshToken)}
}

// Serve starts the fake's loopback server: the OAuth token endpoint at
// POST /token, the authorization endpoint for ClientID at GET /authorize (Grants.Authorize)
// and the fake's routes (http.ServeMux patterns).
func (b *Base) Serve(routes map[string]http.HandlerFunc) {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /token", b.Token)
	mux.HandleFunc("GET /authorize", b.Authorize(ClientID))
	for p, h := range routes {
		mux.HandleFunc(p, h)
	}
	b.srv = httptest.NewServer(mux)
}

// URL is the fake's root URL (no trailing slash).
func (b *Base) URL() string { return b.srv.URL }

// Close stops the fake's server.
func (b *Base) Close() { b.srv.Close() }

// Config is the provider configuration that reaches the fake (Config of
// its URL).
func (b *Base) Config() map[string]string { return Config(b.URL()) }

// Inject queues faults: each of the next API requests (that match, if
// match is set) gets the next fault in order.
func (b *Base) Inject(match func(*http.Request) bool, faults ...Fault) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.faults = append(b.faults, faults...)
	b.match = match
}

// Slow delays every API answer by d (0 stops).
func (b *Base) Slow(d time.Duration) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.delay = d
}

// Record calls fn with every JSON body the fake serves and the name of
// its schema in the vendor's discovery document.
func (b *Base) Record(fn func(schema string, body []byte)) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.recorder = fn
}

// Log returns the requests answered so far.
func (b *Base) Log() []Request {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]Request(nil), b.log...)
}

// Logged appends a request to the log.
func (b *Base) Logged(r *http.Request, cost, status int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.log = append(b.log, Request{At: time.Now(), Method: r.Method, Path: r.URL.Path, Cost: cost, Status: status})
}

// Token serves an OAuth 2.0 token endpoint (RFC 6749 section 6): a
// refresh_token grant with ClientID and a valid refresh token mints an
// access token; a revoked grant is invalid_grant. An authorization_code
// grant exchanges a code from Authorize (Grants.Exchange).
func (b *Base) Token(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil || r.Method != http.MethodPost {
		oauthError(w, 400, "invalid_request")
		return
	}
	id, _, basic := r.BasicAuth()
	if !basic {
		id = r.PostForm.Get("client_id")
	}
	if id != ClientID {
		oauthError(w, 401, "invalid_client")
		return
	}
	if r.PostForm.Get("grant_type") == "authorization_code" {
		b.exchange(w, r)
		return
	}
	if r.PostForm.Get("grant_type") != "refresh_token" {
		oauthError(w, 400, "unsupported_grant_type")
		return
	}
	tok, rotated, ok := b.Refresh(r.PostForm.Get("refresh_token"))
	if !ok {
		oauthError(w, 400, "invalid_grant")
		return
	}
	body := map[string]any{"access_token": tok, "token_type": "Bearer", "expires_in": 3599}
	if rotated != "" {
		body["refresh_token"] = rotated
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(body)
}

func oauthError(w http.ResponseWriter, status int, code string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"error": code, "error_description": "fake authorization server: " + code})
}

type innerKey struct{}

// Inner marks a request as a call inside a batch: Admit does not delay it
// again (the batch took the delay).
func Inner(ctx context.Context) context.Context { return context.WithValue(ctx, innerKey{}, true) }

// Admit checks an API request's bearer token and applies the injected
// faults and delay. It returns false when it answered the request itself.
func (b *Base) Admit(w http.ResponseWriter, r *http.Request, cost int) bool {
	b.mu.Lock()
	delay := b.delay
	var f *Fault
	if len(b.faults) > 0 && (b.match == nil || b.match(r)) {
		f = &b.faults[0]
		b.faults = b.faults[1:]
	}
	b.mu.Unlock()
	ok := b.Valid(Bearer(r))
	if delay > 0 && r.Context().Value(innerKey{}) == nil {
		select {
		case <-time.After(delay):
		case <-r.Context().Done():
			return false
		}
	}
	if !ok {
		b.Logged(r, cost, 401)
		w.Header().Set("WWW-Authenticate", `Bearer realm="https://accounts.google.com/", error="invalid_token"`)
		GoogleError(w, 401, "authError", "Request had invalid authentication credentials.")
		return false
	}
	if f != nil {
		if f.Drop {
			b.Logged(r, cost, 0)
			if hj, ok := w.(http.Hijacker); ok {
				if c, _, err := hj.Hijack(); err == nil {
					_ = c.Close()
					return false
				}
			}
			panic(http.ErrAbortHandler)
		}
		b.Logged(r, cost, f.Status)
		if f.RetryAfter != "" {
			w.Header().Set("Retry-After", f.RetryAfter)
		}
		reason := f.Reason
		if reason == "" {
			reason = map[int]string{429: "rateLimitExceeded", 403: "userRateLimitExceeded", 500: "backendError", 503: "backendError"}[f.Status]
		}
		GoogleError(w, f.Status, reason, fmt.Sprintf("fake: injected %d", f.Status))
		return false
	}
	b.Logged(r, cost, 200)
	return true
}

// JSON writes v as a JSON answer and records it under schema.
func (b *Base) JSON(w http.ResponseWriter, status int, schema string, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		GoogleError(w, 500, "backendError", err.Error())
		return
	}
	b.mu.Lock()
	rec := b.recorder
	b.mu.Unlock()
	if rec != nil && schema != "" {
		rec(schema, body)
	}
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// GoogleError writes Google's JSON error body (the format every Google
// REST API answers errors in).
func GoogleError(w http.ResponseWriter, status int, reason, message string) {
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	w.WriteHeader(status)
	e := map[string]any{
		"code": status, "message": message,
		"errors": []map[string]string{{"message": message, "domain": "global", "reason": reason}},
	}
	if st, ok := map[int]string{400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED", 404: "NOT_FOUND",
		409: "ABORTED", 412: "FAILED_PRECONDITION", 429: "RESOURCE_EXHAUSTED", 500: "INTERNAL", 501: "NOT_IMPLEMENTED",
		503: "UNAVAILABLE", 504: "DEADLINE_EXCEEDED"}[status]; ok {
		e["status"] = st
	}
	_ = json.NewEncoder(w).Encode(map[string]any{"error": e})
}

// Config is the provider configuration that points a connector at a fake
// whose root is url, with the fake's credentials (a refresh token and the
// client to use it) and pacing off (the fake is on loopback).
func Config(url string) map[string]string {
	return map[string]string{
		"endpoint": url + "/", "access_token": AccessToken, "token_type": "Bearer", "refresh_token": RefreshToken,
		"client_id": ClientID, "client_secret": ClientSecret, "token_url": url + "/token", "quota_per_minute": "off",
	}
}
