package vendorhttp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"golang.org/x/oauth2"

	"svc.dev/svc/providers"
)

// Config keys of a vendor source's OAuth credentials. The connect flow
// (server/internal/connectflow/callback.go) writes the token's; the client's are svc's
// registration at the vendor (the --oauth-config entry), which a refresh
// needs. Values are secrets: never log them.
const (
	KeyAccessToken  = providers.KeyAccessToken
	KeyRefreshToken = providers.KeyRefreshToken
	KeyTokenType    = providers.KeyTokenType
	KeyExpiry       = providers.KeyExpiry // RFC 3339
	KeyClientID     = "client_id"
	KeyClientSecret = "client_secret"
	KeyTokenURL     = "token_url"
)

// Credentials is a source's OAuth 2.0 token and, when it can refresh, the
// client that refreshes it. It is safe for concurrent use: one refresh runs
// at a time and the others wait for its token.
type Credentials struct {
	conf *oauth2.Config // nil: no refresh
	http *http.Client   // for the token endpoint; nil means http.DefaultClient

	mu        sync.Mutex
	tok       *oauth2.Token
	refreshed bool                   // tok came from a refresh, not from the configuration
	watch     func(providers.Config) // told of each refreshed token
}

// NewCredentials returns credentials holding tok. With conf (its ClientID,
// ClientSecret and Endpoint.TokenURL), a token about to expire, or one the
// vendor refused, is refreshed with tok's refresh token through httpClient
// (nil means http.DefaultClient); without, tok is used until it stops
// working.
func NewCredentials(conf *oauth2.Config, tok *oauth2.Token, httpClient *http.Client) *Credentials {
	c := *tok
	return &Credentials{conf: conf, http: httpClient, tok: &c}
}

// CredentialsFromConfig reads credentials from a provider configuration
// (the Key* entries). access_token or refresh_token is required; a refresh
// needs refresh_token, client_id and token_url. A missing or malformed
// entry is an error wrapping providers.ErrInvalidArgument that names the
// key, never its value.
func CredentialsFromConfig(cfg providers.Config, httpClient *http.Client) (*Credentials, error) {
	tok := &oauth2.Token{AccessToken: cfg[KeyAccessToken], RefreshToken: cfg[KeyRefreshToken], TokenType: cfg[KeyTokenType]}
	if tok.AccessToken == "" && tok.RefreshToken == "" {
		return nil, fmt.Errorf("config: %s or %s is required: %w", KeyAccessToken, KeyRefreshToken, providers.ErrInvalidArgument)
	}
	if v := cfg[KeyExpiry]; v != "" {
		t, err := time.Parse(time.RFC3339, v)
		if err != nil {
			return nil, fmt.Errorf("config: %s is not an RFC 3339 time: %w", KeyExpiry, providers.ErrInvalidArgument)
		}
		tok.Expiry = t
	}
	var conf *oauth2.Config
	if tok.RefreshToken != "" && cfg[KeyClientID] != "" && cfg[KeyTokenURL] != "" {
		conf = &oauth2.Config{ClientID: cfg[KeyClientID], ClientSecret: cfg[KeyClientSecret],
			// Client credentials in the form (RFC 6749 section 2.3.1), which
			// Google, Microsoft and Dropbox all accept: auto-detection would
			// send a refused grant twice.
			Endpoint: oauth2.Endpoint{TokenURL: cfg[KeyTokenURL], AuthStyle: oauth2.AuthStyleInParams}}
	}
	if tok.AccessToken == "" && conf == nil {
		return nil, fmt.Errorf("config: a %s alone needs %s and %s to be used: %w", KeyRefreshToken, KeyClientID, KeyTokenURL, providers.ErrInvalidArgument)
	}
	return NewCredentials(conf, tok, httpClient), nil
}

// errNoRetry marks errors the retrying transport must not retry.
var errNoRetry = errors.New("not retryable")

// ReauthError is the error of a request whose credentials the vendor or its
// authorization server refused for good. It matches
// providers.ErrReauthRequired (and so providers.ErrPermission). Reason is
// the OAuth error code or HTTP status that decided it; it never holds a
// token.
type ReauthError struct {
	Reason string
}

func (e *ReauthError) Error() string {
	return "credentials refused (" + e.Reason + "): the source must be connected again"
}

// Is reports whether target is providers.ErrReauthRequired, ErrPermission
// or the retrying transport's no-retry mark.
func (e *ReauthError) Is(target error) bool {
	return target == providers.ErrReauthRequired || target == providers.ErrPermission || target == errNoRetry
}

// Token returns a valid access token, refreshing it first when it has
// expired (or will within oauth2's ten-second margin).
func (c *Credentials) Token(ctx context.Context) (*oauth2.Token, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.tok.Valid() || (c.conf == nil && c.tok.AccessToken != "") {
		// Without a way to refresh, an expired token is still tried: the
		// vendor decides, and a 401 then asks for reauthorization.
		return c.tok, nil
	}
	return c.refreshLocked(ctx)
}

// Refresh refreshes the token unless it changed since stale was handed out
// (another request refreshed it meanwhile), and returns the current one.
func (c *Credentials) Refresh(ctx context.Context, stale *oauth2.Token) (*oauth2.Token, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if stale != nil && c.tok.AccessToken != stale.AccessToken && c.tok.Valid() {
		return c.tok, nil
	}
	return c.refreshLocked(ctx)
}

// CanRefresh reports whether the credentials hold what a refresh needs.
func (c *Credentials) CanRefresh() bool { return c.conf != nil }

func (c *Credentials) refreshLocked(ctx context.Context) (*oauth2.Token, error) {
	if c.conf == nil {
		return nil, &ReauthError{Reason: "token expired and no refresh configured"}
	}
	if c.http != nil {
		ctx = context.WithValue(ctx, oauth2.HTTPClient, c.http)
	}
	// A source of the refresh token alone: its Token refreshes.
	tok, err := c.conf.TokenSource(ctx, &oauth2.Token{RefreshToken: c.tok.RefreshToken}).Token()
	if err != nil {
		return nil, refreshError(err)
	}
	if tok.RefreshToken == "" {
		tok.RefreshToken = c.tok.RefreshToken
	}
	c.tok, c.refreshed = tok, true
	if c.watch != nil {
		// Under the lock: the watcher hears of tokens in the order they were issued.
		c.watch(TokenConfig(tok))
	}
	return tok, nil
}

// WatchCredentials registers fn, called (under the credentials' lock, so in the order the
// tokens were issued) with the configuration entries of each token a refresh brings: a new
// access token, and the new refresh token when the vendor rotated it. When a refresh came
// before fn was registered (a plugin's host starts watching a moment after the instance is
// opened and may already be using it), fn is called at once with the current token, so no
// rotation goes unreported. Connectors forward their providers.CredentialWatcher to it. nil
// stops the calls.
func (c *Credentials) WatchCredentials(fn func(providers.Config)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.watch = fn
	if fn != nil && c.refreshed {
		fn(TokenConfig(c.tok))
	}
}

// TokenConfig returns the configuration entries that hold tok, as CredentialsFromConfig
// reads them.
func TokenConfig(tok *oauth2.Token) providers.Config {
	cfg := providers.Config{KeyAccessToken: tok.AccessToken, KeyTokenType: tok.Type()}
	if tok.RefreshToken != "" {
		cfg[KeyRefreshToken] = tok.RefreshToken
	}
	if !tok.Expiry.IsZero() {
		cfg[KeyExpiry] = tok.Expiry.UTC().Format(time.RFC3339)
	}
	return cfg
}

// refreshError classifies a failed refresh: a grant the server refused is
// for the user to renew; anything else (the server down, a timeout) may
// pass. Only the OAuth error code is kept: a token endpoint's error body is
// not ours to repeat.
func refreshError(err error) error {
	var re *oauth2.RetrieveError
	if errors.As(err, &re) {
		switch re.ErrorCode {
		case "invalid_grant", "unauthorized_client", "invalid_client", "access_denied":
			return &ReauthError{Reason: re.ErrorCode}
		}
		if re.Response != nil && re.Response.StatusCode == http.StatusUnauthorized {
			return &ReauthError{Reason: "token endpoint answered 401"}
		}
		code := re.ErrorCode
		if code == "" && re.Response != nil {
			code = re.Response.Status
		}
		return fmt.Errorf("refresh token: %s: %w", code, providers.ErrTransient)
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("refresh token: %w", err)
	}
	return fmt.Errorf("refresh token: %w", providers.ErrTransient)
}

// authTransport sets the Authorization header and, on a 401, refreshes the
// token once and sends the request again; a second 401 (or a 401 with no
// way to refresh) is a ReauthError.
type authTransport struct {
	base  http.RoundTripper
	creds *Credentials
}

func (t *authTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	tok, err := t.creds.Token(ctx)
	if err != nil {
		return nil, err
	}
	resp, err := t.base.RoundTrip(authorized(req, tok, req.Body))
	if err != nil || resp.StatusCode != http.StatusUnauthorized {
		return resp, err
	}
	drain(resp.Body)
	if !t.creds.CanRefresh() {
		return nil, &ReauthError{Reason: "401 and no refresh configured"}
	}
	if req.Body != nil && req.Body != http.NoBody && req.GetBody == nil {
		return nil, &ReauthError{Reason: "401"}
	}
	tok, err = t.creds.Refresh(ctx, tok)
	if err != nil {
		return nil, err
	}
	body := req.Body
	if req.GetBody != nil {
		if body, err = req.GetBody(); err != nil {
			return nil, err
		}
	}
	resp, err = t.base.RoundTrip(authorized(req, tok, body))
	if err != nil || resp.StatusCode != http.StatusUnauthorized {
		return resp, err
	}
	drain(resp.Body)
	return nil, &ReauthError{Reason: "401 after a refresh"}
}

// authorized returns a copy of req with tok's Authorization header and
// body (RoundTrippers must not change the request they are given).
func authorized(req *http.Request, tok *oauth2.Token, body io.ReadCloser) *http.Request {
	r := req.Clone(req.Context())
	r.Body = body
	tok.SetAuthHeader(r)
	return r
}
