package platform

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"svc.dev/svc/id"
)

// OperationClasses are the spec's operation classes, the unit of every scope and grant.
var OperationClasses = []string{"discover", "preserve", "write", "remove", "restore", "migrate", "monitor", "automate", "billable_execute"}

// Application is a developer application in an organization.
type Application struct {
	ID               string    `json:"id"`
	OrgID            string    `json:"org_id"`
	Name             string    `json:"name"`
	OperationClasses []string  `json:"operation_classes"`
	RedirectURIs     []string  `json:"redirect_uris,omitempty"`
	CreatedAt        time.Time `json:"created_at"`
}

// APIKey is a developer key. The secret is shown once; only its hash is kept.
type APIKey struct {
	ID         string     `json:"id"`
	AppID      string     `json:"app_id"`
	OrgID      string     `json:"org_id"`
	Mode       Mode       `json:"mode"`
	Scopes     []string   `json:"scopes"`
	SecretHash string     `json:"secret_hash"`
	Last4      string     `json:"last4"`
	CreatedAt  time.Time  `json:"created_at"`
	ExpiresAt  *time.Time `json:"expires_at,omitempty"` // set when the key is rotated
	RevokedAt  *time.Time `json:"revoked_at,omitempty"`
}

// Grant is what an end user allowed an application to do through a connection.
type Grant struct {
	ID               string   `json:"id"`
	OperationClasses []string `json:"operation_classes"`
	// SourceIDs limits the grant to these sources; empty means all of the user's sources.
	SourceIDs []string `json:"source_ids,omitempty"`
}

// Allows reports whether the grant includes the operation class.
func (g Grant) Allows(op string) bool { return slices.Contains(g.OperationClasses, op) }

// AllowsSource reports whether the grant reaches the source.
func (g Grant) AllowsSource(sourceID string) bool {
	return len(g.SourceIDs) == 0 || slices.Contains(g.SourceIDs, sourceID)
}

// Connection is an end user's delegation to an application, in one mode.
type Connection struct {
	ID        string     `json:"id"`
	AppID     string     `json:"app_id"`
	OrgID     string     `json:"org_id"`
	UserID    string     `json:"user_id"`
	Mode      Mode       `json:"mode"`
	Grant     Grant      `json:"grant"`
	Status    string     `json:"status"`
	CreatedAt time.Time  `json:"created_at"`
	RevokedAt *time.Time `json:"revoked_at,omitempty"`
}

// Tenant is the end-user tenant the connection reaches.
func (c *Connection) Tenant() Tenant { return Tenant{Owner: c.UserID, Mode: c.Mode} }

// DeveloperStore keeps applications, keys and connections.
type DeveloperStore interface {
	CreateApplication(ctx context.Context, a *Application) error
	Application(ctx context.Context, id string) (*Application, error)
	CreateKey(ctx context.Context, k *APIKey) error
	// KeyBySecretHash returns the key whose secret hashes to hash, or ErrNotFound.
	KeyBySecretHash(ctx context.Context, hash string) (*APIKey, error)
	// ApplicationsOf lists an organization's applications, oldest first.
	ApplicationsOf(ctx context.Context, orgID string) ([]*Application, error)
	// KeysOf lists an application's keys, oldest first.
	KeysOf(ctx context.Context, appID string) ([]*APIKey, error)
	// UpdateKey applies fn to a stored key atomically.
	UpdateKey(ctx context.Context, id string, fn func(*APIKey) error) (*APIKey, error)
	CreateConnection(ctx context.Context, c *Connection) error
	Connection(ctx context.Context, id string) (*Connection, error)
	// ConnectionsOf lists the connections of an end user.
	ConnectionsOf(ctx context.Context, userID string) ([]*Connection, error)
	// ConnectionsOfApp lists the connections of an application.
	ConnectionsOfApp(ctx context.Context, appID string) ([]*Connection, error)
}

// KeyOverlap is how long a rotated key keeps working.
const KeyOverlap = 24 * time.Hour

// Developers manages applications, keys and connections.
type Developers struct {
	store DeveloperStore
	now   func() time.Time
}

// NewDevelopers returns a developer service over s; now defaults to time.Now.
func NewDevelopers(s DeveloperStore, now func() time.Time) *Developers {
	if now == nil {
		now = time.Now
	}
	return &Developers{store: s, now: now}
}

// CreateApplication creates an application allowed the given operation classes.
func (d *Developers) CreateApplication(ctx context.Context, orgID, name string, ops, redirectURIs []string) (*Application, error) {
	for _, op := range ops {
		if !slices.Contains(OperationClasses, op) {
			return nil, fmt.Errorf("unknown operation class %q", op)
		}
	}
	a := &Application{ID: id.New("app"), OrgID: orgID, Name: name, OperationClasses: ops, RedirectURIs: redirectURIs,
		CreatedAt: d.now().UTC().Truncate(time.Millisecond)}
	if err := d.store.CreateApplication(ctx, a); err != nil {
		return nil, fmt.Errorf("create application: %w", err)
	}
	return a, nil
}

// CreateKey makes a key for an application in a mode and returns it with its secret, which is
// not kept and cannot be shown again. Scopes default to all of the application's operation
// classes and may not exceed them (ErrScope).
func (d *Developers) CreateKey(ctx context.Context, appID string, mode Mode, scopes []string) (*APIKey, string, error) {
	app, err := d.store.Application(ctx, appID)
	if err != nil {
		return nil, "", fmt.Errorf("find application: %w", err)
	}
	if scopes == nil {
		scopes = app.OperationClasses
	}
	for _, s := range scopes {
		if !slices.Contains(app.OperationClasses, s) {
			return nil, "", fmt.Errorf("%w: %q", ErrScope, s)
		}
	}
	secret, err := NewToken("sk_"+string(mode)+"_", 32)
	if err != nil {
		return nil, "", err
	}
	k := &APIKey{ID: id.New("key"), AppID: app.ID, OrgID: app.OrgID, Mode: mode, Scopes: slices.Clone(scopes),
		SecretHash: HashToken(secret), Last4: secret[len(secret)-4:], CreatedAt: d.now().UTC().Truncate(time.Millisecond)}
	if err := d.store.CreateKey(ctx, k); err != nil {
		return nil, "", fmt.Errorf("create key: %w", err)
	}
	return k, secret, nil
}

// AuthenticateKey returns the live key for a secret, or ErrUnauthenticated when it is unknown,
// revoked or past its rotation overlap.
func (d *Developers) AuthenticateKey(ctx context.Context, secret string) (*APIKey, error) {
	if !strings.HasPrefix(secret, "sk_test_") && !strings.HasPrefix(secret, "sk_live_") {
		return nil, ErrUnauthenticated
	}
	k, err := d.store.KeyBySecretHash(ctx, HashToken(secret))
	if errors.Is(err, ErrNotFound) {
		return nil, ErrUnauthenticated
	}
	if err != nil {
		return nil, fmt.Errorf("find key: %w", err)
	}
	now := d.now()
	if k.RevokedAt != nil || (k.ExpiresAt != nil && !now.Before(*k.ExpiresAt)) {
		return nil, ErrUnauthenticated
	}
	return k, nil
}

// Connect records an end user's grant to an application in a mode. The grant may not exceed
// the application's operation classes.
func (d *Developers) Connect(ctx context.Context, appID, userID string, mode Mode, g Grant) (*Connection, error) {
	app, err := d.store.Application(ctx, appID)
	if err != nil {
		return nil, fmt.Errorf("find application: %w", err)
	}
	for _, op := range g.OperationClasses {
		if !slices.Contains(app.OperationClasses, op) {
			return nil, fmt.Errorf("%w: %q", ErrScope, op)
		}
	}
	if g.ID == "" {
		g.ID = id.New("grt")
	}
	c := &Connection{ID: id.New("cxn"), AppID: app.ID, OrgID: app.OrgID, UserID: userID, Mode: mode, Grant: g,
		Status: "active", CreatedAt: d.now().UTC().Truncate(time.Millisecond)}
	if err := d.store.CreateConnection(ctx, c); err != nil {
		return nil, fmt.Errorf("create connection: %w", err)
	}
	return c, nil
}

// Connection returns the active connection with the given id, as seen by a key: a connection
// of another application or mode, or a revoked one, is ErrNotFound.
func (d *Developers) Connection(ctx context.Context, k *APIKey, connID string) (*Connection, error) {
	c, err := d.store.Connection(ctx, connID)
	if err != nil {
		return nil, err
	}
	if c.AppID != k.AppID || c.Mode != k.Mode || c.RevokedAt != nil {
		return nil, ErrNotFound
	}
	return c, nil
}

// Application returns an application by id.
func (d *Developers) Application(ctx context.Context, id string) (*Application, error) {
	return d.store.Application(ctx, id)
}

// Applications lists an organization's applications.
func (d *Developers) Applications(ctx context.Context, orgID string) ([]*Application, error) {
	return d.store.ApplicationsOf(ctx, orgID)
}

// Keys lists an application's keys.
func (d *Developers) Keys(ctx context.Context, appID string) ([]*APIKey, error) {
	return d.store.KeysOf(ctx, appID)
}

// appKey returns an application's key, or ErrNotFound when the key is another application's.
func (d *Developers) appKey(ctx context.Context, appID, keyID string) (*APIKey, error) {
	keys, err := d.store.KeysOf(ctx, appID)
	if err != nil {
		return nil, err
	}
	for _, k := range keys {
		if k.ID == keyID {
			return k, nil
		}
	}
	return nil, ErrNotFound
}

// RotateKey makes a new key with the same mode and scopes and returns it with its secret; the
// old key keeps working for KeyOverlap (or less, if it was already expiring sooner).
func (d *Developers) RotateKey(ctx context.Context, appID, keyID string) (*APIKey, string, error) {
	old, err := d.appKey(ctx, appID, keyID)
	if err != nil {
		return nil, "", err
	}
	if old.RevokedAt != nil || (old.ExpiresAt != nil && !d.now().Before(*old.ExpiresAt)) {
		return nil, "", fmt.Errorf("%w: the key is revoked or expired", ErrNotFound)
	}
	k, secret, err := d.CreateKey(ctx, appID, old.Mode, old.Scopes)
	if err != nil {
		return nil, "", err
	}
	until := d.now().UTC().Add(KeyOverlap)
	_, err = d.store.UpdateKey(ctx, old.ID, func(o *APIKey) error {
		if o.ExpiresAt == nil || o.ExpiresAt.After(until) {
			o.ExpiresAt = &until
		}
		return nil
	})
	return k, secret, err
}

// RevokeKey stops a key at once. Revoking a revoked key is harmless.
func (d *Developers) RevokeKey(ctx context.Context, appID, keyID string) (*APIKey, error) {
	if _, err := d.appKey(ctx, appID, keyID); err != nil {
		return nil, err
	}
	now := d.now().UTC()
	return d.store.UpdateKey(ctx, keyID, func(k *APIKey) error {
		if k.RevokedAt == nil {
			k.RevokedAt = &now
		}
		return nil
	})
}

// Reaching returns the applications whose keys in a tenant's mode can see the tenant: through
// an active connection to its end user, or as an application of the organization that owns it.
func (d *Developers) Reaching(ctx context.Context, t Tenant) ([]string, error) {
	var apps []string
	if strings.HasPrefix(t.Owner, "org_") {
		list, err := d.store.ApplicationsOf(ctx, t.Owner)
		if err != nil {
			return nil, err
		}
		for _, a := range list {
			apps = append(apps, a.ID)
		}
		return apps, nil
	}
	conns, err := d.store.ConnectionsOf(ctx, t.Owner)
	if err != nil {
		return nil, err
	}
	for _, c := range conns {
		if c.Mode == t.Mode && c.RevokedAt == nil && !slices.Contains(apps, c.AppID) {
			apps = append(apps, c.AppID)
		}
	}
	return apps, nil
}

// ConnectionsOfApp lists an application's connections.
func (d *Developers) ConnectionsOfApp(ctx context.Context, appID string) ([]*Connection, error) {
	return d.store.ConnectionsOfApp(ctx, appID)
}

// RevokeOrgKeys revokes every API key of the applications of the organizations, and returns
// how many it revoked (an account's deletion revokes those of the organizations it created).
func (d *Developers) RevokeOrgKeys(ctx context.Context, orgIDs []string) (int, error) {
	n := 0
	for _, orgID := range orgIDs {
		apps, err := d.Applications(ctx, orgID)
		if err != nil {
			return n, err
		}
		for _, a := range apps {
			keys, err := d.Keys(ctx, a.ID)
			if err != nil {
				return n, err
			}
			for _, k := range keys {
				if k.RevokedAt != nil {
					continue
				}
				if _, err := d.RevokeKey(ctx, a.ID, k.ID); err != nil {
					return n, err
				}
				n++
			}
		}
	}
	return n, nil
}
