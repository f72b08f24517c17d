package connectflow

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/timestamppb"

	"svc.dev/svc"
	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/platform"
	"svc.dev/svc/platform/event"
	"svc.dev/svc/providers"
	"svc.dev/svc/wire"
)

// Caller is who makes a request, as the edge resolved it.
type Caller struct {
	RequestID string
	// Key is an application's API key, or nil.
	Key *platform.APIKey
	// User is the signed-in end user, or nil; SessionToken is their session's token.
	User         *platform.User
	SessionToken string
	// Tenant is the tenant the request acts on (zero for public endpoints).
	Tenant platform.Tenant
}

// Edge is what the flow needs of the API edge that mounts it.
type Edge interface {
	// Audit records a change to an application, made by the caller in ctx.
	Audit(ctx context.Context, appID, action, target string, detail map[string]any)
	// Emit publishes an event in tenant, also to the applications named in apps.
	Emit(ctx context.Context, tenant platform.Tenant, typ, source, subject string, data map[string]any, apps ...string)
	// WithCaller returns ctx with c as the request's caller, so audit entries and events name it.
	WithCaller(ctx context.Context, c Caller) context.Context
	// RateLimit applies the anonymous allowance to a page request and sets its headers; when
	// it refuses, it writes the answer and returns false.
	RateLimit(w http.ResponseWriter, r *http.Request) bool
	// CheckOrigin refuses a form POST the browser marks cross-origin.
	CheckOrigin(r *http.Request) error
	// SecureCookies reports whether cookies set for r must be Secure.
	SecureCookies(r *http.Request) bool
	// PublicBase is the origin users and providers reach the server at.
	PublicBase(r *http.Request) string
	// RequestID is the id of the request ctx belongs to.
	RequestID(ctx context.Context) string
}

// Accounts signs end users in.
type Accounts interface {
	Authenticate(ctx context.Context, token string) (*platform.User, error)
	SignIn(ctx context.Context, email, password string) (*platform.User, string, error)
	SessionTTL() time.Duration
}

// Developers finds applications and keeps connections.
type Developers interface {
	Application(ctx context.Context, id string) (*platform.Application, error)
	ConnectionsOfApp(ctx context.Context, appID string) ([]*platform.Connection, error)
	ConnectionsOfUser(ctx context.Context, userID string) ([]*platform.Connection, error)
	LookupConnection(ctx context.Context, connID string) (*platform.Connection, error)
	Revoke(ctx context.Context, connID string) (*platform.Connection, bool, error)
}

// Sources reads, connects and updates a tenant's sources.
type Sources interface {
	// Connect opens a provider to check it works and records a connected source (svc.Scope.ConnectSource).
	Connect(ctx context.Context, tenant platform.Tenant, spec svc.SourceSpec) (*svcv1.Source, error)
	Get(ctx context.Context, tenant, id string) (*svcv1.Source, error)
	Update(ctx context.Context, tenant, id string, fn func(*svcv1.Source) error) error
	Scan(ctx context.Context, tenant string, fn func(*svcv1.Source) bool) error
	// Probe opens spec's provider and lists one page of it, to find out whether it works.
	Probe(ctx context.Context, spec svc.SourceSpec) error
}

// Config is what a Flow is made of. Sessions, Accounts, Developers, Sources and Edge are
// required; the rest have defaults (no OAuth providers, no local roots, time.Now, slog.Default).
type Config struct {
	Sessions   *platform.ConnectFlow
	Accounts   Accounts
	Developers Developers
	Sources    Sources
	Edge       Edge
	// OAuth configures the providers whose accounts connect through OAuth.
	OAuth map[providers.Name]OAuthProvider
	// LocalRoots are the folders under which users may connect local folders (none: no local
	// folder can be connected through the API).
	LocalRoots []string
	// Dev allows buckets on loopback and private addresses (a developer's machine).
	Dev bool
	Now func() time.Time
	Log *slog.Logger
}

// Flow runs the connect flow. It holds no state of its own.
type Flow struct {
	cfg Config
	log *slog.Logger
}

// New returns the flow of cfg.
func New(cfg Config) *Flow {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	return &Flow{cfg: cfg, log: cfg.Log}
}

// invalid is a validation failure of a request field.
func invalid(field, msg string) error {
	return &svc.Error{Code: svc.CodeInvalidArgument, Field: field, Detail: msg}
}

func consentPath(csnID string) string { return "/connect/" + csnID }

// CreateSession starts a connect session for the key's application (POST /v1/connect/sessions).
func (f *Flow) CreateSession(ctx context.Context, c Caller, r *http.Request, req *svcv1.CreateConnectSessionRequest) (*svcv1.ConnectSession, error) {
	cr := platform.ConnectRequest{RedirectURI: req.GetRedirectUri(), OperationClasses: opClasses(req.GetOperationClasses()),
		SourceIDs: req.GetSourceIds(), State: req.GetState()}
	if req.Provider != nil {
		// Test mode is simulated and unbilled: a real account connected there could be
		// cleaned up for free, and the spec promises test mode works on simulated data.
		if c.Key.Mode == platform.ModeTest {
			return nil, invalid("provider", "cannot be connected in test mode, which works on simulated sources; start the session with a live key to connect a provider account")
		}
		name := providers.Name(enumWire(req.GetProvider()))
		if _, ok := f.oauthProvider(name); !ok {
			return nil, invalid("provider", "cannot be connected through the consent page: this server has no OAuth configuration for it")
		}
		cr.Provider = string(name)
	}
	csn, err := f.cfg.Sessions.Start(ctx, c.Key, cr)
	if errors.Is(err, platform.ErrRedirectURI) {
		return nil, invalid("redirect_uri", "is not one of the application's redirect_uris")
	}
	if err != nil {
		return nil, err
	}
	f.cfg.Edge.Audit(ctx, csn.AppID, "connect_session.created", csn.ID, map[string]any{"mode": string(csn.Mode),
		"operation_classes": toAny(csn.OperationClasses), "redirect_uri": csn.RedirectURI})
	return f.sessionProto(r, csn), nil
}

func (f *Flow) sessionProto(r *http.Request, c *platform.ConnectSession) *svcv1.ConnectSession {
	out := &svcv1.ConnectSession{
		Id:               c.ID,
		ApplicationId:    c.AppID,
		Mode:             svcv1.KeyMode(enumNumber(svcv1.KeyMode(0).Descriptor(), string(c.Mode))),
		Url:              f.cfg.Edge.PublicBase(r) + consentPath(c.ID),
		Status:           svcv1.ConnectSessionStatus(enumNumber(svcv1.ConnectSessionStatus(0).Descriptor(), c.StatusAt(f.cfg.Now()))),
		RedirectUri:      c.RedirectURI,
		OperationClasses: opEnums(c.OperationClasses),
		SourceIds:        nonNil(c.SourceIDs),
		CreatedAt:        timestamppb.New(c.CreatedAt),
		ExpiresAt:        timestamppb.New(c.ExpiresAt),
	}
	if c.Provider != "" {
		p := svcv1.Provider(enumNumber(svcv1.Provider(0).Descriptor(), c.Provider))
		out.Provider = &p
	}
	if c.State != "" {
		out.State = proto.String(c.State)
	}
	if c.ConnectionID != "" {
		out.ConnectionId = proto.String(c.ConnectionID)
	}
	return out
}

// ConnectionProto is a connection as the API shows it.
func ConnectionProto(c *platform.Connection) *svcv1.Connection {
	status := svcv1.ConnectionStatus_CONNECTION_STATUS_ACTIVE
	if c.RevokedAt != nil {
		status = svcv1.ConnectionStatus_CONNECTION_STATUS_REVOKED
	}
	out := &svcv1.Connection{
		Id:            c.ID,
		ApplicationId: c.AppID,
		UserId:        c.UserID,
		Mode:          svcv1.KeyMode(enumNumber(svcv1.KeyMode(0).Descriptor(), string(c.Mode))),
		Status:        status,
		Grant:         &svcv1.Grant{Id: c.Grant.ID, OperationClasses: opEnums(c.Grant.OperationClasses), SourceIds: nonNil(c.Grant.SourceIDs)},
		CreatedAt:     timestamppb.New(c.CreatedAt),
	}
	if c.RevokedAt != nil {
		out.RevokedAt = timestamppb.New(*c.RevokedAt)
	}
	return out
}

// sees reports whether the caller may see a connection: the end user's own in the session's
// mode, or the application's own in the key's mode. Anything else is not found.
func (c Caller) sees(conn *platform.Connection) bool {
	switch {
	case c.User != nil:
		return conn.UserID == c.User.ID && conn.Mode == c.Tenant.Mode
	case c.Key != nil:
		return conn.AppID == c.Key.AppID && conn.Mode == c.Key.Mode
	}
	return false
}

// ListConnections returns up to limit of the caller's connections older than the connection
// after (all when ""), newest first; last is the id to continue after, "" at the end.
func (f *Flow) ListConnections(ctx context.Context, c Caller, after string, limit int) (page []*svcv1.Connection, last string, err error) {
	var conns []*platform.Connection
	if c.Key != nil {
		conns, err = f.cfg.Developers.ConnectionsOfApp(ctx, c.Key.AppID)
	} else {
		conns, err = f.cfg.Developers.ConnectionsOfUser(ctx, c.User.ID)
	}
	if err != nil {
		return nil, "", err
	}
	conns = slices.DeleteFunc(conns, func(x *platform.Connection) bool { return !c.sees(x) })
	// Ids are ULIDs: descending id order is newest first, and the cursor is the last id seen.
	slices.SortFunc(conns, func(a, b *platform.Connection) int { return strings.Compare(b.ID, a.ID) })
	page = []*svcv1.Connection{}
	for _, conn := range conns {
		if after != "" && conn.ID >= after {
			continue
		}
		if len(page) == limit {
			return page, page[len(page)-1].Id, nil
		}
		page = append(page, ConnectionProto(conn))
	}
	return page, "", nil
}

// visible returns a connection the caller may see, revoked or not.
func (f *Flow) visible(ctx context.Context, c Caller, connID string) (*platform.Connection, error) {
	conn, err := f.cfg.Developers.LookupConnection(ctx, connID)
	if err != nil {
		return nil, err
	}
	if !c.sees(conn) {
		return nil, platform.ErrNotFound
	}
	return conn, nil
}

// GetConnection returns one of the caller's connections.
func (f *Flow) GetConnection(ctx context.Context, c Caller, connID string) (*svcv1.Connection, error) {
	conn, err := f.visible(ctx, c, connID)
	if err != nil {
		return nil, err
	}
	return ConnectionProto(conn), nil
}

// RevokeConnection revokes a connection for its end user or its application. It takes effect
// with the next request: the edge resolves connection_id on every call and refuses revoked
// connections.
func (f *Flow) RevokeConnection(ctx context.Context, c Caller, connID string) (*svcv1.Connection, error) {
	if _, err := f.visible(ctx, c, connID); err != nil {
		return nil, err
	}
	conn, changed, err := f.cfg.Developers.Revoke(ctx, connID)
	if err != nil {
		return nil, err
	}
	if changed {
		by := "user"
		if c.Key != nil {
			by = "application"
		}
		f.cfg.Edge.Audit(ctx, conn.AppID, "connection.revoked", conn.ID, map[string]any{"revoked_by": by})
		// The application no longer reaches the user's tenant, so the tenant's audience would
		// miss it: name it explicitly.
		f.cfg.Edge.Emit(ctx, conn.Tenant(), event.ConnectionRevoked, "/v1/connections", conn.ID, map[string]any{
			"connection_id": conn.ID, "application_id": conn.AppID, "revoked_by": by}, conn.AppID)
	}
	return ConnectionProto(conn), nil
}

func opClasses(ops []svcv1.OperationClass) []string {
	out := make([]string, 0, len(ops))
	for _, op := range ops {
		out = append(out, enumWire(op))
	}
	return out
}

func opEnums(ops []string) []svcv1.OperationClass {
	out := make([]svcv1.OperationClass, 0, len(ops))
	for _, op := range ops {
		out = append(out, svcv1.OperationClass(enumNumber(svcv1.OperationClass(0).Descriptor(), op)))
	}
	return out
}

func toAny(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

// nonNil is s, or an empty slice for nil: lists are [] on the wire, never null.
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

func enumNumber(ed protoreflect.EnumDescriptor, s string) protoreflect.EnumNumber {
	n, _ := wire.ParseEnum(ed, s)
	return n
}

func enumWire(e protoreflect.Enum) string { return wire.EnumString(e.Descriptor(), e.Number()) }
