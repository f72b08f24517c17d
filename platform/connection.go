package platform

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"time"

	"svc.dev/svc/id"
)

// Connect session statuses.
const (
	ConnectPending  = "pending"
	ConnectApproved = "approved"
	ConnectDenied   = "denied"
	ConnectExpired  = "expired"
)

// Connection statuses.
const (
	ConnectionActive  = "active"
	ConnectionRevoked = "revoked"
)

const (
	// ConnectSessionTTL is how long an end user has to decide on a connect session.
	ConnectSessionTTL = 30 * time.Minute
	// OAuthStateTTL is how long a provider authorization may take between the redirect to the
	// provider and its callback.
	OAuthStateTTL = 10 * time.Minute
)

var (
	// ErrRedirectURI is returned when a connect session names a redirect URI that is not one
	// of the application's.
	ErrRedirectURI = errors.New("redirect URI is not registered for the application")
	// ErrConnectDecided is returned when a connect session was already approved or denied.
	ErrConnectDecided = errors.New("connect session already decided")
	// ErrConnectExpired is returned when a connect session is past its expiry.
	ErrConnectExpired = errors.New("connect session expired")
	// ErrNoSources is returned when an approval names no source, or a source the application
	// did not ask for.
	ErrNoSources = errors.New("the approval must name sources the application asked for")
	// ErrOAuthState is returned when a provider callback's state is unknown, expired, already
	// used, or was issued to another browser session or provider.
	ErrOAuthState = errors.New("invalid OAuth state")
)

// ConnectSession is an application's request for an end user's consent. The end user decides
// on the consent page; the decision is final. A session without an application (AppID "") is
// a user's own provider authorization (StartOwn): it names its user from the start, asks for
// no grant, and is approved when the provider account is connected.
type ConnectSession struct {
	ID               string   `json:"id"`
	AppID            string   `json:"app_id"`
	OrgID            string   `json:"org_id"`
	Mode             Mode     `json:"mode"`
	RedirectURI      string   `json:"redirect_uri"`
	OperationClasses []string `json:"operation_classes"`
	// SourceIDs, when set, are the only sources the user is offered.
	SourceIDs []string `json:"source_ids,omitempty"`
	// Provider asks the user to connect a new source at that provider.
	Provider string `json:"provider,omitempty"`
	// State is the application's opaque value, returned on the redirect.
	State  string `json:"state,omitempty"`
	Status string `json:"status"`
	// UserID is the end user who decided.
	UserID       string `json:"user_id,omitempty"`
	ConnectionID string `json:"connection_id,omitempty"`
	// ConnectedSourceIDs are the sources the user connected at a provider during the session.
	ConnectedSourceIDs []string `json:"connected_source_ids,omitempty"`
	// ProviderError is the provider's last refusal of a user's own provider authorization (an
	// OAuth error code); the user may try again while the session is pending.
	ProviderError string `json:"provider_error,omitempty"`
	// CSRFSecret keys the consent form's token (see ConsentToken).
	CSRFSecret []byte     `json:"csrf_secret"`
	CreatedAt  time.Time  `json:"created_at"`
	ExpiresAt  time.Time  `json:"expires_at"`
	DecidedAt  *time.Time `json:"decided_at,omitempty"`
}

// Own reports whether the session is a user's own provider authorization, with no application.
func (c *ConnectSession) Own() bool { return c.AppID == "" }

// StatusAt is the session's status at t: a pending session past its expiry is expired.
func (c *ConnectSession) StatusAt(t time.Time) string {
	if c.Status == ConnectPending && !t.Before(c.ExpiresAt) {
		return ConnectExpired
	}
	return c.Status
}

// ConsentToken is the anti-CSRF token of the consent forms shown to one browser session: an
// HMAC of the session token's hash under the connect session's secret, so it is bound to both
// and a token seen by another browser, or for another consent, is worthless.
func (c *ConnectSession) ConsentToken(sessionToken string) string {
	m := hmac.New(sha256.New, c.CSRFSecret)
	m.Write([]byte("consent\x00" + HashToken(sessionToken)))
	return hex.EncodeToString(m.Sum(nil))
}

// CheckConsentToken reports, in constant time, whether token is ConsentToken(sessionToken).
func (c *ConnectSession) CheckConsentToken(sessionToken, token string) bool {
	return len(c.CSRFSecret) > 0 && subtle.ConstantTimeCompare([]byte(c.ConsentToken(sessionToken)), []byte(token)) == 1
}

// OAuthState is the server side of a provider authorization in flight. The state value
// itself travels only through the browser; the record is keyed by its hash, bound to the
// browser session and the connect session, used once, and short-lived.
type OAuthState struct {
	Hash             string `json:"hash"`
	SessionHash      string `json:"session_hash"`
	UserID           string `json:"user_id"`
	ConnectSessionID string `json:"connect_session_id"`
	Provider         string `json:"provider"`
	// SealedVerifier is the PKCE code verifier, sealed.
	SealedVerifier []byte `json:"sealed_verifier"`
	// RedirectURL is the callback URL sent to the provider, which the code exchange repeats.
	RedirectURL string    `json:"redirect_url"`
	ExpiresAt   time.Time `json:"expires_at"`
}

// ConnectStore keeps connect sessions and OAuth states, and updates connections.
type ConnectStore interface {
	CreateConnectSession(ctx context.Context, c *ConnectSession) error
	// ConnectSession returns a connect session by id, or ErrNotFound.
	ConnectSession(ctx context.Context, id string) (*ConnectSession, error)
	// UpdateConnectSession applies fn to a stored connect session atomically; if fn fails
	// nothing is stored.
	UpdateConnectSession(ctx context.Context, id string, fn func(*ConnectSession) error) (*ConnectSession, error)
	// PutOAuthState stores a state record, dropping records that expired before now.
	PutOAuthState(ctx context.Context, s *OAuthState, now time.Time) error
	// TakeOAuthState returns and deletes the state record with the given hash, in one
	// transaction, so that a state is used at most once; ErrNotFound if there is none.
	TakeOAuthState(ctx context.Context, hash string) (*OAuthState, error)
	ConnectionUpdater
}

// ConnectionUpdater updates a stored connection atomically. Developers.Revoke needs it from
// its DeveloperStore.
type ConnectionUpdater interface {
	UpdateConnection(ctx context.Context, id string, fn func(*Connection) error) (*Connection, error)
}

// Revoke revokes a connection at once: Connection refuses it from then on, so no key can use
// it. It reports whether this call revoked it (false when it already was).
func (d *Developers) Revoke(ctx context.Context, connID string) (*Connection, bool, error) {
	u, ok := d.store.(ConnectionUpdater)
	if !ok {
		return nil, false, errors.New("revoke connection: the store cannot update connections")
	}
	now := d.now().UTC().Truncate(time.Millisecond)
	changed := false
	c, err := u.UpdateConnection(ctx, connID, func(c *Connection) error {
		if c.RevokedAt == nil {
			c.RevokedAt, c.Status, changed = &now, ConnectionRevoked, true
		}
		return nil
	})
	if err != nil {
		return nil, false, fmt.Errorf("revoke connection: %w", err)
	}
	return c, changed, nil
}

// LookupConnection returns a connection by id whatever its state or owner; callers decide who
// may see it.
func (d *Developers) LookupConnection(ctx context.Context, connID string) (*Connection, error) {
	return d.store.Connection(ctx, connID)
}

// ConnectionsOfUser lists an end user's connections.
func (d *Developers) ConnectionsOfUser(ctx context.Context, userID string) ([]*Connection, error) {
	return d.store.ConnectionsOf(ctx, userID)
}

// ConnectFlow runs connect sessions: an application asks, the end user approves or denies on
// the consent page (connecting new sources at providers on the way), and an approval becomes
// a connection.
type ConnectFlow struct {
	store  ConnectStore
	devs   *Developers
	sealer *Sealer
	now    func() time.Time
}

// NewConnectFlow returns the connect flow over s; connections are made with devs, PKCE
// verifiers are sealed with sealer; now defaults to time.Now.
func NewConnectFlow(s ConnectStore, devs *Developers, sealer *Sealer, now func() time.Time) *ConnectFlow {
	if now == nil {
		now = time.Now
	}
	return &ConnectFlow{store: s, devs: devs, sealer: sealer, now: now}
}

// ConnectRequest is what an application asks of an end user.
type ConnectRequest struct {
	RedirectURI      string
	OperationClasses []string
	SourceIDs        []string
	Provider         string
	State            string
}

// Start records a connect session for the key's application, in the key's mode. The
// redirect URI must be one of the application's (ErrRedirectURI) and the operation classes
// within its allowance (ErrScope).
func (f *ConnectFlow) Start(ctx context.Context, k *APIKey, r ConnectRequest) (*ConnectSession, error) {
	app, err := f.devs.Application(ctx, k.AppID)
	if err != nil {
		return nil, fmt.Errorf("find application: %w", err)
	}
	if !slices.Contains(app.RedirectURIs, r.RedirectURI) {
		return nil, ErrRedirectURI
	}
	for _, op := range r.OperationClasses {
		if !slices.Contains(app.OperationClasses, op) {
			return nil, fmt.Errorf("%w: %q", ErrScope, op)
		}
	}
	secret := make([]byte, 32)
	if _, err := rand.Read(secret); err != nil {
		return nil, fmt.Errorf("connect session secret: %w", err)
	}
	now := f.now().UTC().Truncate(time.Millisecond)
	c := &ConnectSession{ID: id.New("csn"), AppID: app.ID, OrgID: app.OrgID, Mode: k.Mode, RedirectURI: r.RedirectURI,
		OperationClasses: slices.Clone(r.OperationClasses), SourceIDs: slices.Clone(r.SourceIDs), Provider: r.Provider,
		State: r.State, Status: ConnectPending, CSRFSecret: secret, CreatedAt: now, ExpiresAt: now.Add(ConnectSessionTTL)}
	if err := f.store.CreateConnectSession(ctx, c); err != nil {
		return nil, fmt.Errorf("create connect session: %w", err)
	}
	return c, nil
}

// Session returns a connect session with its status as of now.
func (f *ConnectFlow) Session(ctx context.Context, csnID string) (*ConnectSession, error) {
	c, err := f.store.ConnectSession(ctx, csnID)
	if err != nil {
		return nil, err
	}
	c.Status = c.StatusAt(f.now())
	return c, nil
}

// decide moves a pending session to status for the user, atomically: of two decisions at
// once, one wins and the other gets ErrConnectDecided.
func (f *ConnectFlow) decide(ctx context.Context, csnID, userID, status string, check func(*ConnectSession) error) (*ConnectSession, error) {
	now := f.now().UTC().Truncate(time.Millisecond)
	return f.store.UpdateConnectSession(ctx, csnID, func(c *ConnectSession) error {
		switch c.StatusAt(now) {
		case ConnectPending:
		case ConnectExpired:
			return ErrConnectExpired
		default:
			return ErrConnectDecided
		}
		if check != nil {
			if err := check(c); err != nil {
				return err
			}
		}
		c.Status, c.UserID, c.DecidedAt = status, userID, &now
		return nil
	})
}

// Approve records the user's approval and makes the connection: the requested operation
// classes over the sources the user ticked (at least one; within those the application asked
// for, if it asked). The caller checks that the sources are the user's.
func (f *ConnectFlow) Approve(ctx context.Context, csnID, userID string, sourceIDs []string) (*ConnectSession, *Connection, error) {
	c, err := f.decide(ctx, csnID, userID, ConnectApproved, func(c *ConnectSession) error {
		if len(sourceIDs) == 0 {
			return ErrNoSources
		}
		for _, src := range sourceIDs {
			if len(c.SourceIDs) > 0 && !slices.Contains(c.SourceIDs, src) && !slices.Contains(c.ConnectedSourceIDs, src) {
				return fmt.Errorf("%w: %s", ErrNoSources, src)
			}
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	conn, err := f.devs.Connect(ctx, c.AppID, userID, c.Mode, Grant{OperationClasses: c.OperationClasses, SourceIDs: slices.Clone(sourceIDs)})
	if err != nil {
		// Give the decision back, so the user can try again.
		_, rerr := f.store.UpdateConnectSession(context.WithoutCancel(ctx), csnID, func(c *ConnectSession) error {
			c.Status, c.UserID, c.DecidedAt = ConnectPending, "", nil
			return nil
		})
		return nil, nil, errors.Join(err, rerr)
	}
	c, err = f.store.UpdateConnectSession(ctx, csnID, func(c *ConnectSession) error {
		c.ConnectionID = conn.ID
		return nil
	})
	if err != nil {
		return nil, nil, fmt.Errorf("record connection on connect session: %w", err)
	}
	return c, conn, nil
}

// Deny records the user's refusal.
func (f *ConnectFlow) Deny(ctx context.Context, csnID, userID string) (*ConnectSession, error) {
	return f.decide(ctx, csnID, userID, ConnectDenied, nil)
}

// AddSource records a source the user connected during a pending session, so the consent
// page offers it (ticked).
func (f *ConnectFlow) AddSource(ctx context.Context, csnID, sourceID string) (*ConnectSession, error) {
	now := f.now()
	return f.store.UpdateConnectSession(ctx, csnID, func(c *ConnectSession) error {
		if c.StatusAt(now) != ConnectPending {
			return ErrConnectDecided
		}
		if !slices.Contains(c.ConnectedSourceIDs, sourceID) {
			c.ConnectedSourceIDs = append(c.ConnectedSourceIDs, sourceID)
		}
		return nil
	})
}

// StartOwn records a user's own provider authorization: a connect session with no
// application, for userID in mode, that connects an account at provider. It is approved by
// Connected once the provider's callback connected the account.
func (f *ConnectFlow) StartOwn(ctx context.Context, userID string, mode Mode, provider string) (*ConnectSession, error) {
	if userID == "" || provider == "" {
		return nil, errors.New("start provider authorization: a user and a provider are required")
	}
	secret := make([]byte, 32)
	if _, err := rand.Read(secret); err != nil {
		return nil, fmt.Errorf("connect session secret: %w", err)
	}
	now := f.now().UTC().Truncate(time.Millisecond)
	c := &ConnectSession{ID: id.New("csn"), Mode: mode, Provider: provider, UserID: userID, Status: ConnectPending,
		CSRFSecret: secret, CreatedAt: now, ExpiresAt: now.Add(ConnectSessionTTL)}
	if err := f.store.CreateConnectSession(ctx, c); err != nil {
		return nil, fmt.Errorf("create provider authorization: %w", err)
	}
	return c, nil
}

// Connected approves a user's own provider authorization with the source its provider
// callback connected: ErrConnectExpired or ErrConnectDecided when it is no longer pending.
func (f *ConnectFlow) Connected(ctx context.Context, csnID, sourceID string) (*ConnectSession, error) {
	now := f.now().UTC().Truncate(time.Millisecond)
	return f.store.UpdateConnectSession(ctx, csnID, func(c *ConnectSession) error {
		switch {
		case !c.Own():
			return fmt.Errorf("connect session %s has an application: %w", csnID, ErrConnectDecided)
		case c.StatusAt(now) == ConnectExpired:
			return ErrConnectExpired
		case c.StatusAt(now) != ConnectPending:
			return ErrConnectDecided
		}
		if !slices.Contains(c.ConnectedSourceIDs, sourceID) {
			c.ConnectedSourceIDs = append(c.ConnectedSourceIDs, sourceID)
		}
		c.Status, c.DecidedAt, c.ProviderError = ConnectApproved, &now, ""
		return nil
	})
}

// RefusedOwn records the provider's refusal (an OAuth error code) on a user's own provider
// authorization that is still pending; other sessions are left as they are.
func (f *ConnectFlow) RefusedOwn(ctx context.Context, csnID, code string) error {
	now := f.now()
	_, err := f.store.UpdateConnectSession(ctx, csnID, func(c *ConnectSession) error {
		if c.Own() && c.StatusAt(now) == ConnectPending {
			c.ProviderError = code
		}
		return nil
	})
	return err
}

// OAuthStart is a provider authorization about to begin.
type OAuthStart struct {
	SessionToken     string // the browser session's token
	UserID           string
	ConnectSessionID string
	Provider         string
	Verifier         string // the PKCE code verifier
	RedirectURL      string
}

// BeginOAuth stores the server side of a provider authorization and returns the state value
// to send to the provider: 256 random bits, of which only the hash is kept.
func (f *ConnectFlow) BeginOAuth(ctx context.Context, s OAuthStart) (string, error) {
	state, err := NewToken("", 43)
	if err != nil {
		return "", err
	}
	hash := HashToken(state)
	sealed, err := f.sealer.Seal([]byte(s.Verifier), []byte("oauth-state/"+hash))
	if err != nil {
		return "", err
	}
	now := f.now().UTC()
	rec := &OAuthState{Hash: hash, SessionHash: HashToken(s.SessionToken), UserID: s.UserID, ConnectSessionID: s.ConnectSessionID,
		Provider: s.Provider, SealedVerifier: sealed, RedirectURL: s.RedirectURL, ExpiresAt: now.Add(OAuthStateTTL)}
	if err := f.store.PutOAuthState(ctx, rec, now); err != nil {
		return "", fmt.Errorf("store OAuth state: %w", err)
	}
	return state, nil
}

// FinishOAuth consumes a callback's state: it must exist, be unexpired and unused, and belong
// to this browser session and provider; otherwise ErrOAuthState. The record is used up
// either way, so a state can never be tried twice. It returns the record and the verifier.
func (f *ConnectFlow) FinishOAuth(ctx context.Context, state, sessionToken, provider string) (*OAuthState, string, error) {
	if state == "" {
		return nil, "", ErrOAuthState
	}
	rec, err := f.store.TakeOAuthState(ctx, HashToken(state))
	if errors.Is(err, ErrNotFound) {
		return nil, "", ErrOAuthState
	}
	if err != nil {
		return nil, "", fmt.Errorf("take OAuth state: %w", err)
	}
	if !f.now().Before(rec.ExpiresAt) || rec.Provider != provider ||
		subtle.ConstantTimeCompare([]byte(rec.SessionHash), []byte(HashToken(sessionToken))) != 1 {
		return nil, "", ErrOAuthState
	}
	verifier, err := f.sealer.Open(rec.SealedVerifier, []byte("oauth-state/"+rec.Hash))
	if err != nil {
		return nil, "", err
	}
	return rec, string(verifier), nil
}
