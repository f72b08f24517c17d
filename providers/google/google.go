// Package google is what the Google connectors (vendor_a_mail over the Gmail
// API, vendor_a_files over the Drive API) share: the HTTP client built from
// a source's configuration (endpoint override, OAuth credentials, pacing to
// a quota in units per minute), how Google's answers say "slow down", and
// the mapping of Google's errors to the provider errors.
package google

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/time/rate"
	"google.golang.org/api/googleapi"

	"svc.dev/svc/providers"
	"svc.dev/svc/providers/vendorhttp"
)

// Config keys both Google connectors read, besides vendorhttp's
// credentials (access_token, refresh_token, token_type, expiry, client_id,
// client_secret, token_url).
const (
	// KeyEndpoint overrides the API's root URL (tests, proxies, sovereign
	// clouds): "https://gmail.googleapis.com/" by default for Gmail.
	KeyEndpoint = "endpoint"
	// KeyQuota is the pacing in quota units per minute per user; "off"
	// turns pacing off (a fake on loopback).
	KeyQuota = "quota_per_minute"
)

// Client is a connector's HTTP client and endpoint.
type Client struct {
	HTTP     *http.Client
	Endpoint string // with a trailing slash
	Limiter  *rate.Limiter
	// Credentials authorize HTTP's requests; connectors forward their
	// providers.CredentialWatcher to them.
	Credentials *vendorhttp.Credentials
}

type costKey struct{}

type onceKey struct{}

// Once marks the requests made with ctx as not idempotent (Gmail's
// messages.import stores another copy each time it is sent): the client
// does not send them again after a 5xx answer or a dropped connection,
// which may have come after the vendor acted. A 429 is still retried: the
// vendor refused it unperformed. The caller finds out what happened and
// decides.
func Once(ctx context.Context) context.Context {
	return context.WithValue(ctx, onceKey{}, true)
}

// WithCost sets the quota cost of the requests made with ctx (a batch
// carries its calls' sum).
func WithCost(ctx context.Context, units int) context.Context {
	return context.WithValue(ctx, costKey{}, units)
}

// NewClient builds the client of a Google connector from cfg: its
// endpoint (defaultEndpoint unless overridden), its credentials, and
// pacing at cfg's quota_per_minute (defaultQuota unless set) in the
// units cost charges per request.
func NewClient(cfg providers.Config, defaultEndpoint string, defaultQuota int, cost func(*http.Request) int) (*Client, error) {
	ep := cfg[KeyEndpoint]
	if ep == "" {
		ep = defaultEndpoint
	}
	u, err := url.Parse(ep)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return nil, fmt.Errorf("config: %s must be an absolute http(s) URL: %w", KeyEndpoint, providers.ErrInvalidArgument)
	}
	if !strings.HasSuffix(ep, "/") {
		ep += "/"
	}
	creds, err := vendorhttp.CredentialsFromConfig(cfg, nil)
	if err != nil {
		return nil, err
	}
	var lim *rate.Limiter
	switch q := cfg[KeyQuota]; q {
	case "off":
	case "":
		lim = shared(cfg, ep, defaultQuota)
	default:
		n, err := strconv.Atoi(q)
		if err != nil || n < 60 {
			return nil, fmt.Errorf("config: %s must be at least 60 or \"off\": %w", KeyQuota, providers.ErrInvalidArgument)
		}
		lim = shared(cfg, ep, n)
	}
	opts := vendorhttp.Options{
		Credentials: creds,
		Limiter:     lim,
		Cost: func(r *http.Request) int {
			if n, ok := r.Context().Value(costKey{}).(int); ok {
				return n
			}
			return cost(r)
		},
		// The calls these connectors make are idempotent (reads, and
		// trash/untrash, which leave the same state when repeated) but for
		// those made with Once.
		Idempotent: func(r *http.Request) bool { return r.Context().Value(onceKey{}) == nil },
		Throttled:  func(resp *http.Response, body []byte) bool { return resp.StatusCode == 403 && RateLimited(body) },
		// The client library reuses a chunked upload's buffer as soon as a chunk's round trip
		// returns (a -race failure of TestWriteResumable).
		OwnBodies: true,
	}
	return &Client{HTTP: vendorhttp.NewClient(opts), Endpoint: ep, Limiter: lim, Credentials: creds}, nil
}

// limiters holds one limiter per account and API in this process: the
// quota is per user, so instances opened for the same account (a source
// reopened after a plugin restart, two sources of one mailbox) share it.
var limiters sync.Map // key -> *rate.Limiter

// shared returns the limiter of the account cfg's grant names at endpoint
// ep, paced at perMinute. The key is a hash: it holds no secret.
func shared(cfg providers.Config, ep string, perMinute int) *rate.Limiter {
	grant := cfg[vendorhttp.KeyRefreshToken]
	if grant == "" {
		grant = cfg[vendorhttp.KeyAccessToken]
	}
	sum := sha256.Sum256([]byte(ep + "\x00" + grant + "\x00" + strconv.Itoa(perMinute)))
	l, _ := limiters.LoadOrStore(sum, Limiter(perMinute))
	return l.(*rate.Limiter)
}

// Limiter returns the pacing of perMinute units a minute: a second's worth
// of burst, and a rate low enough that burst and rate together never pass
// perMinute in any 60 seconds (a token bucket lets through at most
// burst + rate*t in any t).
func Limiter(perMinute int) *rate.Limiter {
	burst := max(perMinute/60, 1)
	return rate.NewLimiter(rate.Limit(float64(perMinute-burst)/60), burst)
}

// RateLimited reports whether a Google JSON error body gives a rate-limit
// reason (rateLimitExceeded, userRateLimitExceeded): Google answers those
// with 403 as well as 429.
func RateLimited(body []byte) bool {
	var e struct {
		Error struct {
			Errors []struct {
				Reason string `json:"reason"`
			} `json:"errors"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &e) != nil {
		return false
	}
	for _, x := range e.Error.Errors {
		switch x.Reason {
		case "rateLimitExceeded", "userRateLimitExceeded":
			return true
		}
	}
	return false
}

// known reports whether err already is a provider error.
func known(err error) bool {
	for _, k := range []error{providers.ErrNotFound, providers.ErrVersionMismatch, providers.ErrPermission,
		providers.ErrInvalidArgument, providers.ErrTransient, providers.ErrTooLarge, providers.ErrInvalidData,
		providers.ErrMarkerExpired, providers.ErrUnsupported, providers.ErrAlreadyExists} {
		if errors.Is(err, k) {
			return true
		}
	}
	return false
}

// StatusErr is the provider error of an HTTP status Google answered.
func StatusErr(code int) error {
	switch {
	case code == http.StatusNotFound || code == http.StatusGone:
		return providers.ErrNotFound
	case code == http.StatusUnauthorized:
		return providers.ErrReauthRequired
	case code == http.StatusForbidden:
		return providers.ErrPermission
	case code == http.StatusTooManyRequests || code >= 500:
		return providers.ErrTransient
	case code == http.StatusBadRequest:
		return providers.ErrInvalidArgument
	}
	return fmt.Errorf("http %d", code)
}

// Err wraps a failed call as a *providers.Error matching the provider
// error its cause means. A cancelled or expired context stays itself.
func Err(name providers.Name, op, objectID string, err error) error {
	if err == nil {
		return nil
	}
	var ge *googleapi.Error
	switch {
	case known(err):
	case errors.As(err, &ge):
		kind := StatusErr(ge.Code)
		if ge.Code == 403 && RateLimited([]byte(ge.Body)) {
			kind = providers.ErrTransient
		}
		err = fmt.Errorf("%w: %d %s", kind, ge.Code, ge.Message)
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
	default:
		// A transport failure the retries did not get past.
		err = fmt.Errorf("%w: %v", providers.ErrTransient, err)
	}
	return &providers.Error{Op: op, Provider: name, ObjectID: objectID, Err: err}
}
