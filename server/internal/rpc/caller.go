// Package rpc is what the server's edge hands to the handlers it runs: the Caller of a
// request, problem documents (RFC 9457), cursor paging, and the adapter from a typed handler
// to the edge's method table. Handler families in other packages speak to the edge through
// it alone.
package rpc

import (
	"context"
	"io"
	"net/http"

	"google.golang.org/protobuf/proto"

	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/platform"
)

// Caller is who a request acts as, and on which tenant. Handlers read it from the context.
type Caller struct {
	RequestID string
	// User is the signed-in user of a session; nil for API keys and public endpoints.
	User *platform.User
	// SessionToken is the session's token when a session cookie authenticated the request.
	SessionToken string
	// Key is the developer key; nil for sessions and public endpoints.
	Key *platform.APIKey
	// Connection is the connection named by connection_id under a key, or nil.
	Connection *platform.Connection
	// Tenant is the tenant the request acts on (zero for public endpoints).
	Tenant platform.Tenant
	// Header collects response headers a handler sets (cookies, Location).
	Header http.Header
	// RawJSON, when a handler sets it, is served as the REST body instead of encoding the
	// response: a receipt's exact signed bytes.
	RawJSON []byte
	// Stream, when a handler sets it, is the REST body (streamed) of an HttpBody response,
	// or of any response when REST is true.
	Stream io.ReadCloser
	// REST is true when the request came over the spec's REST, whose responses a handler may
	// stream (Stream) instead of building them in memory.
	REST bool
	// ByID is true when the edge resolved the tenant from the resource id the request names.
	ByID bool
}

// PrincipalID names the caller for idempotency and rate limiting: the user, or the key's
// application in its mode (so rotated keys share one key space).
func (c *Caller) PrincipalID() string {
	switch {
	case c.User != nil:
		return c.User.ID
	case c.Key != nil:
		return c.Key.AppID + ":" + string(c.Key.Mode)
	}
	return ""
}

// Actor describes the caller in the spec's Actor terms.
func (c *Caller) Actor() *svcv1.Actor {
	switch {
	case c.Key != nil:
		a := &svcv1.Actor{Type: svcv1.ActorType_ACTOR_TYPE_DEVELOPER_APPLICATION, PrincipalId: c.Key.ID, ApplicationId: proto.String(c.Key.AppID)}
		if c.Connection != nil {
			a.DelegatingUserId = proto.String(c.Connection.UserID)
			a.GrantId = proto.String(c.Connection.Grant.ID)
		}
		return a
	case c.User != nil:
		return &svcv1.Actor{Type: svcv1.ActorType_ACTOR_TYPE_USER, PrincipalId: c.User.ID}
	}
	return nil
}

type (
	callerKey      struct{}
	requestIDKey   struct{}
	httpRequestKey struct{}
)

// WithCaller returns ctx carrying c, for the handler the edge runs next.
func WithCaller(ctx context.Context, c *Caller) context.Context {
	return context.WithValue(ctx, callerKey{}, c)
}

// From returns the caller of a request; handlers run only after the edge set it.
func From(ctx context.Context) *Caller {
	c, _ := ctx.Value(callerKey{}).(*Caller)
	return c
}

// WithRequest returns ctx carrying the request's id and the HTTP request itself.
func WithRequest(ctx context.Context, requestID string, r *http.Request) context.Context {
	ctx = context.WithValue(ctx, requestIDKey{}, requestID)
	return context.WithValue(ctx, httpRequestKey{}, r)
}

// RequestID returns the id the edge gave the request ("" outside one).
func RequestID(ctx context.Context) string {
	id, _ := ctx.Value(requestIDKey{}).(string)
	return id
}

// HTTPRequest returns the HTTP request being served, or nil outside one.
func HTTPRequest(ctx context.Context) *http.Request {
	r, _ := ctx.Value(httpRequestKey{}).(*http.Request)
	return r
}
