package vendorhttp

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"

	"golang.org/x/time/rate"
)

// Options configures NewClient. The zero value retries with the defaults,
// does not pace, and sends requests unauthorized.
type Options struct {
	// Base carries the requests; nil means http.DefaultTransport.
	Base http.RoundTripper
	// Credentials authorize every request; nil sends none.
	Credentials *Credentials
	// Attempts bounds how many times one request is sent (the first try
	// included); 0 means 6.
	Attempts int
	// BaseDelay and MaxDelay shape the backoff: attempt n (from 0) waits a
	// random time in [0, min(MaxDelay, BaseDelay*2^n)) ("full jitter").
	// Zero means 500 ms and 32 s.
	BaseDelay, MaxDelay time.Duration
	// MaxRetryAfter is the longest Retry-After honoured; an answer asking
	// for longer is returned to the caller at once. 0 means 2 minutes.
	MaxRetryAfter time.Duration
	// Limiter paces the requests (one token per unit of Cost); nil means no
	// pacing. Share one limiter between the clients of one vendor account.
	Limiter *rate.Limiter
	// Cost is what a request costs in the limiter's unit (a vendor's quota
	// units); nil means 1 per request. A cost above the limiter's burst is
	// clamped to it.
	Cost func(*http.Request) int
	// Idempotent reports whether a request may be sent again after a 5xx
	// answer or a dropped connection (a 429 is always retried: the vendor
	// refused it unperformed). nil means the HTTP method decides (GET,
	// HEAD, OPTIONS, TRACE, PUT and DELETE are idempotent).
	Idempotent func(*http.Request) bool
	// Throttled reports whether a non-2xx answer other than 429 is the
	// vendor's way of saying "slow down" (Google answers some with 403 and
	// a reason of rateLimitExceeded); such an answer is retried like a 429.
	// It is given the answer with up to 64 KiB of its body, which the
	// caller still reads afterwards. nil means none is.
	Throttled func(resp *http.Response, body []byte) bool
	// OwnBodies copies each request's body (of a known length, up to 64 MiB) before sending
	// it, for a caller that reuses a request's buffer once the round trip returns:
	// google.golang.org/api's chunked uploads do, while net/http may still be reading the
	// body (a server that answered before it had read all of it). Callers whose bodies are
	// their own (a section of a spooled file) leave it off and cost no copy.
	OwnBodies bool
}

func (o *Options) defaults() {
	if o.Base == nil {
		o.Base = http.DefaultTransport
	}
	if o.Attempts <= 0 {
		o.Attempts = 6
	}
	if o.BaseDelay <= 0 {
		o.BaseDelay = 500 * time.Millisecond
	}
	if o.MaxDelay <= 0 {
		o.MaxDelay = 32 * time.Second
	}
	if o.MaxRetryAfter <= 0 {
		o.MaxRetryAfter = 2 * time.Minute
	}
}

// NewClient returns a client that paces, authorizes and retries its
// requests as opts says. Its transport is a *Transport.
func NewClient(opts Options) *http.Client {
	return &http.Client{Transport: NewTransport(opts)}
}

// Transport is the http.RoundTripper of NewClient.
type Transport struct {
	opts Options
	next http.RoundTripper // Base, authorized when Credentials are set
}

// NewTransport returns the RoundTripper NewClient uses, for callers that
// build their own http.Client.
func NewTransport(opts Options) *Transport {
	opts.defaults()
	next := opts.Base
	if opts.Credentials != nil {
		next = &authTransport{base: opts.Base, creds: opts.Credentials}
	}
	return &Transport{opts: opts, next: next}
}

// RoundTrip sends req, pacing and retrying it. It returns the vendor's last
// answer or the last transport error when the attempts, the context's
// deadline or a Retry-After beyond MaxRetryAfter end the retries.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	replayable := req.Body == nil || req.Body == http.NoBody || req.GetBody != nil
	idempotent := t.idempotent(req)
	if t.opts.OwnBodies {
		var err error
		if req, err = ownBody(req); err != nil {
			return nil, err
		}
	}
	for attempt := 0; ; attempt++ {
		if err := t.pace(req); err != nil {
			return nil, err
		}
		try := req
		if attempt > 0 && req.GetBody != nil {
			body, err := req.GetBody()
			if err != nil {
				return nil, err
			}
			try = req.Clone(ctx)
			try.Body = body
		}
		resp, err := t.next.RoundTrip(try)
		last := attempt+1 >= t.opts.Attempts || !replayable
		var wait time.Duration
		switch {
		case err != nil:
			// A refused grant or a cancelled context ends it; a dropped
			// connection is retried when sending again is safe.
			if last || !idempotent || errors.Is(err, errNoRetry) || ctx.Err() != nil {
				return nil, err
			}
			wait = t.backoff(attempt)
		case t.throttled(resp):
			if last {
				return resp, nil
			}
			ra, ok := ParseRetryAfter(resp.Header.Get("Retry-After"), time.Now())
			if ok && ra > t.opts.MaxRetryAfter {
				return resp, nil
			}
			wait = t.backoff(attempt)
			if ok {
				// Honour the vendor's wait, plus a little jitter so that
				// clients told the same instant do not return together.
				wait = ra + rand.N(t.opts.BaseDelay)
			}
		case resp.StatusCode >= 500 && resp.StatusCode != http.StatusNotImplemented:
			if last || !idempotent {
				return resp, nil
			}
			wait = t.backoff(attempt)
			if ra, ok := ParseRetryAfter(resp.Header.Get("Retry-After"), time.Now()); ok {
				if ra > t.opts.MaxRetryAfter {
					return resp, nil
				}
				wait = max(wait, ra)
			}
		default:
			return resp, nil
		}
		if dl, ok := ctx.Deadline(); ok && time.Until(dl) < wait {
			// Waiting would outlive the caller: give it the answer now.
			if resp != nil {
				return resp, nil
			}
			return nil, err
		}
		if resp != nil {
			drain(resp.Body)
		}
		if serr := sleep(ctx, wait); serr != nil {
			return nil, serr
		}
	}
}

// maxOwnedBody is the largest request body RoundTrip copies (ownBody).
const maxOwnedBody = 64 << 20

// ownBody returns req with its body (when its length is known and at most maxOwnedBody) read
// into a buffer of the transport's own, and closes the caller's (Options.OwnBodies). net/http
// may go on reading a request's body after RoundTrip has returned (a server that answers
// before it has read the whole body), while a caller such as google.golang.org/api's chunked
// upload reuses its buffer for the next chunk as soon as RoundTrip returns: a copy nobody
// else writes keeps the bytes sent those of this request.
func ownBody(req *http.Request) (*http.Request, error) {
	if req.Body == nil || req.Body == http.NoBody || req.ContentLength <= 0 || req.ContentLength > maxOwnedBody {
		return req, nil
	}
	buf := make([]byte, req.ContentLength)
	_, err := io.ReadFull(req.Body, buf)
	req.Body.Close()
	if err != nil {
		return nil, fmt.Errorf("read request body: %w", err)
	}
	hadGetBody := req.GetBody != nil
	out := req.Clone(req.Context())
	out.Body = io.NopCloser(bytes.NewReader(buf))
	out.GetBody = nil
	if hadGetBody {
		out.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(buf)), nil }
	}
	return out, nil
}

// throttled reports whether resp asks the client to slow down, reading and
// restoring up to 64 KiB of its body for Options.Throttled.
func (t *Transport) throttled(resp *http.Response) bool {
	if resp.StatusCode == http.StatusTooManyRequests {
		return true
	}
	if t.opts.Throttled == nil || resp.StatusCode < 400 {
		return false
	}
	head, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	resp.Body = struct {
		io.Reader
		io.Closer
	}{io.MultiReader(bytes.NewReader(head), resp.Body), resp.Body}
	return t.opts.Throttled(resp, head)
}

func (t *Transport) idempotent(req *http.Request) bool {
	if t.opts.Idempotent != nil {
		return t.opts.Idempotent(req)
	}
	switch req.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodTrace, http.MethodPut, http.MethodDelete:
		return true
	}
	return false
}

func (t *Transport) pace(req *http.Request) error {
	if t.opts.Limiter == nil {
		return nil
	}
	n := 1
	if t.opts.Cost != nil {
		n = t.opts.Cost(req)
	}
	n = max(1, min(n, t.opts.Limiter.Burst()))
	return t.opts.Limiter.WaitN(req.Context(), n)
}

// backoff is attempt n's wait: full jitter over an exponential cap.
func (t *Transport) backoff(n int) time.Duration {
	ceil := t.opts.MaxDelay
	if n < 30 && t.opts.BaseDelay<<n < ceil {
		ceil = t.opts.BaseDelay << n
	}
	return rand.N(ceil) + 1
}

// ParseRetryAfter reads a Retry-After header value: delta-seconds or an
// HTTP-date (RFC 9110, section 10.2.3), as a wait from now. ok is false
// when the value is empty or neither form; a date in the past is a wait of
// zero.
func ParseRetryAfter(v string, now time.Time) (wait time.Duration, ok bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if secs, err := strconv.ParseInt(v, 10, 64); err == nil {
		if secs < 0 {
			return 0, false
		}
		return time.Duration(min(secs, 1<<31)) * time.Second, true
	}
	at, err := http.ParseTime(v)
	if err != nil {
		return 0, false
	}
	return max(at.Sub(now), 0), true
}

func sleep(ctx context.Context, d time.Duration) error {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-timer.C:
		return nil
	}
}

// drain reads a little of a body being dropped, so its connection can be
// reused, and closes it.
func drain(body io.ReadCloser) {
	_, _ = io.Copy(io.Discard, io.LimitReader(body, 64<<10))
	_ = body.Close()
}
