// Package graph is the Microsoft Graph client the vendor_b providers share
// (providers/outlook for mail, providers/onedrive for files): plain HTTP
// over providers/vendorhttp (OAuth 2.0 with refresh, retries of 429 and 5xx
// honouring Retry-After, pacing), JSON decoding, OData paging links that
// never leave the configured endpoint, and OData errors mapped onto the
// providers' sentinel errors.
//
// Config keys every Graph provider takes:
//
//	endpoint             the Graph API root (default https://graph.microsoft.com/v1.0);
//	                     a national cloud's, a proxy's or a test fake's
//	access_token         from the connect flow
//	refresh_token        from the connect flow; refreshes need client_id and token_url too
//	token_type, expiry   from the connect flow
//	client_id, client_secret
//	                     svc's app registration (the --oauth-config entry)
//	token_url            default https://login.microsoftonline.com/common/oauth2/v2.0/token
//	requests_per_second  pacing (default: the provider's documented quota)
//	burst                pacing burst (default: the provider's)
package graph

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	"golang.org/x/time/rate"

	"svc.dev/svc/providers"
	"svc.dev/svc/providers/vendorhttp"
)

// Defaults.
const (
	DefaultEndpoint = "https://graph.microsoft.com/v1.0"
	DefaultTokenURL = "https://login.microsoftonline.com/common/oauth2/v2.0/token"
)

// ConfigKeys are the config keys New reads; a provider adds its own.
var ConfigKeys = []string{
	"endpoint", vendorhttp.KeyAccessToken, vendorhttp.KeyRefreshToken, vendorhttp.KeyTokenType, vendorhttp.KeyExpiry,
	vendorhttp.KeyClientID, vendorhttp.KeyClientSecret, vendorhttp.KeyTokenURL, "requests_per_second", "burst",
}

// Pacing is a provider's default pace: Rate requests (or cost units) per
// second with Burst, MaxConcurrent requests in flight (0: no bound), and
// the cost of a request.
type Pacing struct {
	Rate          rate.Limit
	Burst         int
	MaxConcurrent int
	Cost          func(*http.Request) int
}

// Client talks to one account's Graph endpoint. It is safe for concurrent
// use.
type Client struct {
	http     *http.Client // authorized, paced, retrying
	download *http.Client // paced and retrying, unauthorized: pre-authenticated URLs
	base     string
	// Header is added to every API request (Prefer: IdType="ImmutableId").
	Header http.Header
	// Credentials authorize the API requests; connectors forward their
	// providers.CredentialWatcher to them.
	Credentials *vendorhttp.Credentials
}

// New returns a client for the config (keys ConfigKeys; the caller checks
// for unknown ones) with pace as the default pacing. base is the transport
// under it (nil: http.DefaultTransport).
func New(cfg providers.Config, pace Pacing, base http.RoundTripper) (*Client, error) {
	endpoint := strings.TrimSuffix(cfg["endpoint"], "/")
	if endpoint == "" {
		endpoint = DefaultEndpoint
	}
	if !strings.HasPrefix(endpoint, "https://") && !strings.HasPrefix(endpoint, "http://") {
		return nil, fmt.Errorf("config: endpoint must be an http(s) URL: %w", providers.ErrInvalidArgument)
	}
	c := providers.Config{}
	for k, v := range cfg {
		c[k] = v
	}
	if c[vendorhttp.KeyTokenURL] == "" {
		c[vendorhttp.KeyTokenURL] = DefaultTokenURL
	}
	if base == nil {
		base = http.DefaultTransport
	}
	creds, err := vendorhttp.CredentialsFromConfig(c, &http.Client{Transport: base})
	if err != nil {
		return nil, err
	}
	if v := cfg["requests_per_second"]; v != "" {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || f <= 0 {
			return nil, fmt.Errorf("config: requests_per_second must be a positive number: %w", providers.ErrInvalidArgument)
		}
		pace.Rate = rate.Limit(f)
	}
	if v := cfg["burst"]; v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return nil, fmt.Errorf("config: burst must be a positive integer: %w", providers.ErrInvalidArgument)
		}
		pace.Burst = n
	}
	if pace.MaxConcurrent > 0 {
		base = &bounded{next: base, slots: make(chan struct{}, pace.MaxConcurrent)}
	}
	lim := rate.NewLimiter(pace.Rate, max(1, pace.Burst))
	opts := vendorhttp.Options{Base: stripHeader{base}, Credentials: creds, Limiter: lim, Cost: pace.Cost,
		Idempotent: func(r *http.Request) bool {
			if r.Header.Get(noRetryHeader) != "" {
				return false
			}
			switch r.Method {
			case http.MethodGet, http.MethodHead, http.MethodPut, http.MethodDelete:
				return true
			}
			return false
		}}
	dl := opts
	dl.Credentials = nil
	return &Client{http: vendorhttp.NewClient(opts), download: vendorhttp.NewClient(dl), base: endpoint, Header: http.Header{}, Credentials: creds}, nil
}

// stripHeader removes svc's own marks before a request leaves.
type stripHeader struct{ next http.RoundTripper }

func (s stripHeader) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Header.Get(noRetryHeader) == "" {
		return s.next.RoundTrip(req)
	}
	r := req.Clone(req.Context())
	r.Header.Del(noRetryHeader)
	return s.next.RoundTrip(r)
}

// bounded allows at most cap(slots) requests in flight (Outlook's limit of
// four concurrent requests per mailbox).
type bounded struct {
	next  http.RoundTripper
	slots chan struct{}
}

func (b *bounded) RoundTrip(req *http.Request) (*http.Response, error) {
	select {
	case b.slots <- struct{}{}:
	case <-req.Context().Done():
		return nil, req.Context().Err()
	}
	resp, err := b.next.RoundTrip(req)
	if err != nil {
		<-b.slots
		return nil, err
	}
	resp.Body = &releasing{ReadCloser: resp.Body, release: func() { <-b.slots }}
	return resp, nil
}

type releasing struct {
	io.ReadCloser
	release func()
	done    bool
}

func (r *releasing) Close() error {
	err := r.ReadCloser.Close()
	if !r.done {
		r.done = true
		r.release()
	}
	return err
}

// Base returns the endpoint the client talks to.
func (c *Client) Base() string { return c.base }

// URL resolves a path ("/me/drive") or a link the service returned
// (@odata.nextLink) into a URL under the endpoint. A link elsewhere is
// refused: the client never sends the account's token off its endpoint.
func (c *Client) URL(pathOrLink string) (string, error) {
	if strings.HasPrefix(pathOrLink, "/") {
		return c.base + pathOrLink, nil
	}
	if strings.HasPrefix(pathOrLink, c.base+"/") {
		return pathOrLink, nil
	}
	return "", fmt.Errorf("graph: link outside the endpoint: %w", providers.ErrInvalidArgument)
}

// Relative returns a link under the endpoint as a path ("/me/drive/...").
func (c *Client) Relative(link string) (string, bool) {
	p, ok := strings.CutPrefix(link, c.base)
	return p, ok && strings.HasPrefix(p, "/")
}

// Do sends a request (body marshalled as JSON when non-nil) and decodes a
// 2xx JSON answer into out (when non-nil). Any other answer is an error
// mapped by Error.
func (c *Client) Do(ctx context.Context, method, pathOrLink string, hdr http.Header, body, out any) (*http.Response, error) {
	u, err := c.URL(pathOrLink)
	if err != nil {
		return nil, err
	}
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return nil, fmt.Errorf("graph: %w", providers.ErrInvalidArgument)
	}
	for k, v := range c.Header {
		req.Header[k] = v
	}
	for k, v := range hdr {
		req.Header[k] = v
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, transportError(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return resp, Error(resp)
	}
	if out != nil {
		if err := json.NewDecoder(io.LimitReader(resp.Body, 64<<20)).Decode(out); err != nil {
			return resp, fmt.Errorf("graph: decode %s answer: %v: %w", method, err, providers.ErrTransient)
		}
	}
	return resp, nil
}

// Upload PUTs n bytes of content (read from r at offset 0, again for a
// retry) to a path under the endpoint and returns the 2xx answer's body.
// It is not retried after a 5xx or a dropped connection (it may have been
// stored); a 429 is.
func (c *Client) Upload(ctx context.Context, pathOrLink string, r io.ReaderAt, n int64) ([]byte, error) {
	u, err := c.URL(pathOrLink)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, io.NewSectionReader(r, 0, n))
	if err != nil {
		return nil, fmt.Errorf("graph: %w", providers.ErrInvalidArgument)
	}
	req.Method = http.MethodPut
	req.ContentLength = n
	req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(io.NewSectionReader(r, 0, n)), nil }
	for k, v := range c.Header {
		req.Header[k] = v
	}
	req.Header.Set("Content-Type", "application/octet-stream")
	req.Header.Set(noRetryHeader, "1")
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, transportError(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return nil, Error(resp)
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return nil, fmt.Errorf("graph: %v: %w", err, providers.ErrTransient)
	}
	return b, nil
}

// Create POSTs body with the given Content-Type to a path under the
// endpoint and decodes the 2xx JSON answer into out (when non-nil). A POST
// creates something, so it is not resent after a 5xx or a dropped
// connection (it may have been carried out and only the answer lost: the
// caller looks for what it may have created before trying again); a 429 is
// resent (Graph refused it unperformed).
func (c *Client) Create(ctx context.Context, pathOrLink, contentType string, body []byte, out any) error {
	u, err := c.URL(pathOrLink)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("graph: %w", providers.ErrInvalidArgument)
	}
	req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	for k, v := range c.Header {
		req.Header[k] = v
	}
	req.Header.Set("Content-Type", contentType)
	req.Header.Set(noRetryHeader, "1")
	resp, err := c.http.Do(req)
	if err != nil {
		return transportError(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return Error(resp)
	}
	if out != nil {
		if err := json.NewDecoder(io.LimitReader(resp.Body, 64<<20)).Decode(out); err != nil {
			return fmt.Errorf("graph: decode POST answer: %v: %w", err, providers.ErrTransient)
		}
	}
	return nil
}

// noRetryHeader marks a request the transport must not send again after a
// 5xx or a dropped connection; it is removed before the request leaves.
const noRetryHeader = "X-Svc-No-Retry"

// Open sends a GET and returns the answer with its body open (content).
// download says the URL is a pre-authenticated download link (any host):
// it is fetched without the account's token.
func (c *Client) Open(ctx context.Context, pathOrLink string, download bool) (*http.Response, error) {
	u := pathOrLink
	cl := c.download
	if !download {
		var err error
		if u, err = c.URL(pathOrLink); err != nil {
			return nil, err
		}
		cl = c.http
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, fmt.Errorf("graph: %w", providers.ErrInvalidArgument)
	}
	if !download {
		for k, v := range c.Header {
			req.Header[k] = v
		}
	}
	resp, err := cl.Do(req)
	if err != nil {
		return nil, transportError(err)
	}
	if resp.StatusCode/100 != 2 {
		defer resp.Body.Close()
		return nil, Error(resp)
	}
	return resp, nil
}

func transportError(err error) error {
	if errors.Is(err, context.DeadlineExceeded) {
		// The vendor did not answer within the caller's time: transient, and still the
		// deadline's error for a caller that asks.
		return fmt.Errorf("graph: no answer in time: %w (%w)", providers.ErrTransient, err)
	}
	if errors.Is(err, providers.ErrReauthRequired) || errors.Is(err, context.Canceled) || errors.Is(err, providers.ErrInvalidArgument) {
		return fmt.Errorf("graph: %w", err)
	}
	return fmt.Errorf("graph: %v: %w", err, providers.ErrTransient)
}

// ODataError is Graph's error body.
type ODataError struct {
	Error struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// Error maps a non-2xx answer onto the providers' sentinels, keeping the
// OData error code (never the message, which may quote the request).
func Error(resp *http.Response) error {
	var e ODataError
	_ = json.NewDecoder(io.LimitReader(resp.Body, 64<<10)).Decode(&e)
	code := e.Error.Code
	if code == "" {
		code = resp.Status
	}
	var sentinel error
	switch s := resp.StatusCode; {
	case s == http.StatusNotFound:
		sentinel = providers.ErrNotFound
	case s == http.StatusGone:
		sentinel = providers.ErrMarkerExpired
	case s == http.StatusPreconditionFailed:
		sentinel = providers.ErrVersionMismatch
	case s == http.StatusConflict && (strings.Contains(strings.ToLower(code), "namealreadyexists") || strings.EqualFold(code, "ErrorFolderExists")):
		sentinel = providers.ErrAlreadyExists
	case s == http.StatusRequestEntityTooLarge:
		sentinel = providers.ErrTooLarge
	case s == http.StatusUnauthorized:
		sentinel = providers.ErrReauthRequired
	case s == http.StatusForbidden:
		sentinel = providers.ErrPermission
	case s == http.StatusTooManyRequests || s >= 500:
		sentinel = providers.ErrTransient
	case s == http.StatusBadRequest:
		sentinel = providers.ErrInvalidArgument
	default:
		return fmt.Errorf("graph: %d %s", resp.StatusCode, code)
	}
	return fmt.Errorf("graph: %d %s: %w", resp.StatusCode, code, sentinel)
}
