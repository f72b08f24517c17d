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
	"google.golang.org/protobuf/types/known/timestamppb"

	"svc.dev/svc"
	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/gen/svc/v1/svcv1connect"
	"svc.dev/svc/platform"
	"svc.dev/svc/platform/event"
	"svc.dev/svc/providers"
	"svc.dev/svc/server/internal/rpc"
)

// Edge is what the flow needs of the API edge that mounts it.
type Edge interface {
	// Emit publishes an event in tenant, also to the applications named in apps.
	Emit(ctx context.Context, tenant platform.Tenant, typ, source, subject string, data map[string]any, apps ...string)
	// RateLimit applies the anonymous allowance to a page request and sets its headers; when
	// it refuses, it writes the answer and returns false.
	RateLimit(w http.ResponseWriter, r *http.Request) bool
	// CheckOrigin refuses a form POST the browser marks cross-origin.
	CheckOrigin(r *http.Request) error
	// SecureCookies reports whether cookies set for r must be Secure.
	SecureCookies(r *http.Request) bool
	// PublicBase is the origin users and providers reach the server at.
	PublicBase(r *http.Request) string
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
	// Audit records changes to applications; Pager pages the connections.
	Audit rpc.Audit
	Pager rpc.Pager
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

func consentPath(csnID string) string { return "/connect/" + csnID }

// Handlers are the flow's RPCs by procedure, for the edge to install.
func (f *Flow) Handlers() map[string]rpc.Handler {
	return map[string]rpc.Handler{
		svcv1connect.ConnectionServiceCreateConnectSessionProcedure:    rpc.Handle(f.createSession),
		svcv1connect.ConnectionServiceListConnectionsProcedure:         rpc.Handle(f.listConnections),
		svcv1connect.ConnectionServiceGetConnectionProcedure:           rpc.Handle(f.getConnection),
		svcv1connect.ConnectionServiceRevokeConnectionProcedure:        rpc.Handle(f.revokeConnection),
		svcv1connect.ConnectServiceProviderCallbackProcedure:           rpc.Handle(f.providerCallback),
		svcv1connect.SourceServiceCreateSourceProcedure:                rpc.Handle(f.createSource),
		svcv1connect.SourceServiceCreateProviderAuthorizationProcedure: rpc.Handle(f.createProviderAuthorization),
		svcv1connect.SourceServiceGetProviderAuthorizationProcedure:    rpc.Handle(f.getProviderAuthorization),
	}
}

// createSession starts a connect session for the key's application (POST /v1/connect/sessions).
func (f *Flow) createSession(ctx context.Context, req *svcv1.CreateConnectSessionRequest) (*svcv1.ConnectSession, error) {
	c := rpc.From(ctx)
	cr := platform.ConnectRequest{RedirectURI: req.GetRedirectUri(), OperationClasses: rpc.OpClasses(req.GetOperationClasses()),
		SourceIDs: req.GetSourceIds(), State: req.GetState()}
	if req.Provider != nil {
		// Test mode is simulated and unbilled: a real account connected there could be
		// cleaned up for free, and the spec promises test mode works on simulated data.
		if c.Key.Mode == platform.ModeTest {
			return nil, rpc.Invalid("provider", "cannot be connected in test mode, which works on simulated sources; start the session with a live key to connect a provider account")
		}
		name := providers.Name(rpc.EnumWire(req.GetProvider()))
		if _, ok := f.oauthProvider(name); !ok {
			return nil, rpc.Invalid("provider", "cannot be connected through the consent page: this server has no OAuth configuration for it")
		}
		cr.Provider = string(name)
	}
	csn, err := f.cfg.Sessions.Start(ctx, c.Key, cr)
	if errors.Is(err, platform.ErrRedirectURI) {
		return nil, rpc.Invalid("redirect_uri", "is not one of the application's redirect_uris")
	}
	if err != nil {
		return nil, err
	}
	f.cfg.Audit.Change(ctx, csn.AppID, "connect_session.created", csn.ID, map[string]any{"mode": string(csn.Mode),
		"operation_classes": rpc.Strings(csn.OperationClasses), "redirect_uri": csn.RedirectURI})
	return f.sessionProto(rpc.HTTPRequest(ctx), csn), nil
}

func (f *Flow) sessionProto(r *http.Request, c *platform.ConnectSession) *svcv1.ConnectSession {
	out := &svcv1.ConnectSession{
		Id:               c.ID,
		ApplicationId:    c.AppID,
		Mode:             svcv1.KeyMode(rpc.EnumNumber(svcv1.KeyMode(0).Descriptor(), string(c.Mode))),
		Url:              f.cfg.Edge.PublicBase(r) + consentPath(c.ID),
		Status:           svcv1.ConnectSessionStatus(rpc.EnumNumber(svcv1.ConnectSessionStatus(0).Descriptor(), c.StatusAt(f.cfg.Now()))),
		RedirectUri:      c.RedirectURI,
		OperationClasses: rpc.OpEnums(c.OperationClasses),
		SourceIds:        rpc.NonNil(c.SourceIDs),
		CreatedAt:        timestamppb.New(c.CreatedAt),
		ExpiresAt:        timestamppb.New(c.ExpiresAt),
	}
	if c.Provider != "" {
		p := svcv1.Provider(rpc.EnumNumber(svcv1.Provider(0).Descriptor(), c.Provider))
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
		Mode:          svcv1.KeyMode(rpc.EnumNumber(svcv1.KeyMode(0).Descriptor(), string(c.Mode))),
		Status:        status,
		Grant:         &svcv1.Grant{Id: c.Grant.ID, OperationClasses: rpc.OpEnums(c.Grant.OperationClasses), SourceIds: rpc.NonNil(c.Grant.SourceIDs)},
		CreatedAt:     timestamppb.New(c.CreatedAt),
	}
	if c.RevokedAt != nil {
		out.RevokedAt = timestamppb.New(*c.RevokedAt)
	}
	return out
}

// sees reports whether the caller may see a connection: the end user's own in the session's
// mode, or the application's own in the key's mode. Anything else is not found.
func sees(c *rpc.Caller, conn *platform.Connection) bool {
	switch {
	case c.User != nil:
		return conn.UserID == c.User.ID && conn.Mode == c.Tenant.Mode
	case c.Key != nil:
		return conn.AppID == c.Key.AppID && conn.Mode == c.Key.Mode
	}
	return false
}

// listConnections lists the caller's connections, newest first: an application's in its
// key's mode, or the signed-in user's in the session's mode.
func (f *Flow) listConnections(ctx context.Context, req *svcv1.ListConnectionsRequest) (*svcv1.ListConnectionsResponse, error) {
	after, limit, binding, err := f.cfg.Pager.Start(ctx, svcv1connect.ConnectionServiceListConnectionsProcedure, req)
	if err != nil {
		return nil, err
	}
	c := rpc.From(ctx)
	var conns []*platform.Connection
	if c.Key != nil {
		conns, err = f.cfg.Developers.ConnectionsOfApp(ctx, c.Key.AppID)
	} else {
		conns, err = f.cfg.Developers.ConnectionsOfUser(ctx, c.User.ID)
	}
	if err != nil {
		return nil, err
	}
	conns = slices.DeleteFunc(conns, func(x *platform.Connection) bool { return !sees(c, x) })
	// Ids are ULIDs: descending id order is newest first, and the cursor is the last id seen.
	slices.SortFunc(conns, func(a, b *platform.Connection) int { return strings.Compare(b.ID, a.ID) })
	out := &svcv1.ListConnectionsResponse{Data: []*svcv1.Connection{}}
	for _, conn := range conns {
		if after != "" && conn.ID >= after {
			continue
		}
		if len(out.Data) == limit {
			out.NextCursor = f.cfg.Pager.Next(binding, out.Data[len(out.Data)-1].Id)
			break
		}
		out.Data = append(out.Data, ConnectionProto(conn))
	}
	return out, nil
}

// visible returns a connection the caller may see, revoked or not.
func (f *Flow) visible(ctx context.Context, c *rpc.Caller, connID string) (*platform.Connection, error) {
	conn, err := f.cfg.Developers.LookupConnection(ctx, connID)
	if err != nil {
		return nil, err
	}
	if !sees(c, conn) {
		return nil, platform.ErrNotFound
	}
	return conn, nil
}

// getConnection returns one of the caller's connections.
func (f *Flow) getConnection(ctx context.Context, req *svcv1.ConnectionRequest) (*svcv1.Connection, error) {
	conn, err := f.visible(ctx, rpc.From(ctx), req.GetId())
	if err != nil {
		return nil, err
	}
	return ConnectionProto(conn), nil
}

// revokeConnection revokes a connection for its end user or its application. It takes effect
// with the next request: the edge resolves connection_id on every call and refuses revoked
// connections.
func (f *Flow) revokeConnection(ctx context.Context, req *svcv1.ConnectionRequest) (*svcv1.Connection, error) {
	c := rpc.From(ctx)
	if _, err := f.visible(ctx, c, req.GetId()); err != nil {
		return nil, err
	}
	conn, changed, err := f.cfg.Developers.Revoke(ctx, req.GetId())
	if err != nil {
		return nil, err
	}
	if changed {
		by := "user"
		if c.Key != nil {
			by = "application"
		}
		f.cfg.Audit.Change(ctx, conn.AppID, "connection.revoked", conn.ID, map[string]any{"revoked_by": by})
		// The application no longer reaches the user's tenant, so the tenant's audience would
		// miss it: name it explicitly.
		f.cfg.Edge.Emit(ctx, conn.Tenant(), event.ConnectionRevoked, "/v1/connections", conn.ID, map[string]any{
			"connection_id": conn.ID, "application_id": conn.AppID, "revoked_by": by}, conn.AppID)
	}
	return ConnectionProto(conn), nil
}
