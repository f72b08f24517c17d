package server

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"buf.build/go/protovalidate"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/platform"
	"svc.dev/svc/server/internal/rpc"
	"svc.dev/svc/wire"
)

// method is one RPC as the edge serves it, over Connect and over REST alike.
type method struct {
	desc      protoreflect.MethodDescriptor
	procedure string // "/svc.v1.PlanService/ListPlans"
	endpoint  *svcv1.Endpoint
	// call runs the implementation; nil answers 501 not_implemented.
	call rpc.Handler
	// connectionField is the request's connection_id field, if it has one.
	connectionField protoreflect.FieldDescriptor
}

func (m *method) accepts(c svcv1.Credential) bool {
	if len(m.endpoint.GetCredentials()) == 0 {
		return c == svcv1.Credential_CREDENTIAL_SESSION || c == svcv1.Credential_CREDENTIAL_API_KEY
	}
	return slices.Contains(m.endpoint.GetCredentials(), c)
}

func (m *method) public() bool { return m.accepts(svcv1.Credential_CREDENTIAL_NONE) }

func (m *method) successStatus() int {
	if s := m.endpoint.GetSuccessStatus(); s != 0 {
		return int(s)
	}
	return http.StatusOK
}

// Caller is who a request acts as, and on which tenant (rpc.Caller).
type Caller = rpc.Caller

// incoming is what the edge knows of a request before it is decoded, whatever the protocol.
type incoming struct {
	header http.Header
	req    *http.Request
	rest   bool // the spec's REST, which can stream a response
}

// outcome is the edge's answer, rendered by the protocol that asked.
type outcome struct {
	raw      []byte
	stream   io.ReadCloser
	status   int
	msg      proto.Message
	problem  *rpc.Problem
	header   http.Header
	replayed bool
}

// decodeFunc decodes the request message, after authentication.
type decodeFunc func() (proto.Message, error)

// invoke runs one request through the pipeline every endpoint shares: authenticate, rate
// limit, CSRF, decode, validate, resolve the tenant and grant, idempotency, then the
// implementation.
func (s *Server) invoke(ctx context.Context, m *method, in incoming, decode decodeFunc) *outcome {
	header := http.Header{}
	caller := &Caller{RequestID: rpc.RequestID(ctx), Header: http.Header{}, REST: in.rest}
	var req proto.Message
	out := s.run(ctx, m, in, func() (proto.Message, error) {
		var err error
		req, err = decode()
		return req, err
	}, caller, header)
	out.header = mergeHeaders(header, caller.Header, out.header)
	if caller.Key != nil {
		s.auditCall(m, in, req, out, caller)
		s.meterCall(caller, out)
	}
	return out
}

func mergeHeaders(hs ...http.Header) http.Header {
	h := http.Header{}
	for _, x := range hs {
		for k, v := range x {
			h[k] = append(h[k], v...)
		}
	}
	return h
}

func fail(p *rpc.Problem) *outcome { return &outcome{status: p.Status, problem: p, header: p.Header} }

func (s *Server) run(ctx context.Context, m *method, in incoming, decode decodeFunc, caller *Caller, header http.Header) *outcome {
	authErr := s.authenticate(ctx, m, in, caller)

	rateKey := caller.PrincipalID()
	if rateKey == "" {
		rateKey = "ip:" + clientIP(in.req)
	}
	d := s.limiter.Take(rateKey)
	header.Set("RateLimit-Limit", strconv.Itoa(d.Limit))
	header.Set("RateLimit-Remaining", strconv.Itoa(d.Remaining))
	header.Set("RateLimit-Reset", strconv.Itoa(d.Reset))
	if !d.Allowed {
		header.Set("Retry-After", strconv.Itoa(d.RetryAfter))
		return fail(rpc.NewProblem(http.StatusTooManyRequests, rpc.CodeRateLimited, "Too many requests; retry after "+strconv.Itoa(d.RetryAfter)+" s."))
	}
	if authErr != nil {
		return fail(authErr)
	}
	if caller.SessionToken != "" && in.req != nil && !safeMethod(in.req.Method) {
		if err := s.csrf.Check(in.req); err != nil {
			return fail(rpc.NewProblem(http.StatusForbidden, rpc.CodeForbidden, "Cross-origin requests may not use the session cookie."))
		}
	}

	req, err := decode()
	if err != nil {
		return fail(rpc.FromError(err))
	}
	if p := s.validate(req); p != nil {
		return fail(p)
	}
	if p := s.resolveTenant(ctx, m, in.header, req, caller); p != nil {
		return fail(p)
	}
	ctx = rpc.WithCaller(ctx, caller)

	if m.endpoint.GetIdempotent() && in.header.Get("Idempotency-Key") != "" {
		return s.idempotent(ctx, m, in.header.Get("Idempotency-Key"), req, caller)
	}
	return s.call(ctx, m, req)
}

func safeMethod(method string) bool {
	return method == http.MethodGet || method == http.MethodHead || method == http.MethodOptions
}

func (s *Server) call(ctx context.Context, m *method, req proto.Message) *outcome {
	if m.call == nil {
		return fail(errNotImplemented)
	}
	res, err := m.call(ctx, req)
	if c := rpc.From(ctx); err == nil && c != nil && c.RawJSON != nil {
		return &outcome{status: m.successStatus(), msg: res, raw: c.RawJSON}
	}
	if c := rpc.From(ctx); err == nil && c != nil && c.Stream != nil {
		return &outcome{status: m.successStatus(), msg: res, stream: c.Stream}
	}
	if err != nil {
		p := hideForbidden(rpc.From(ctx), rpc.FromError(err))
		if p.Status >= 500 {
			s.log.ErrorContext(ctx, "request failed", "procedure", m.procedure, "request_id", rpc.RequestID(ctx), "err", err)
		}
		return fail(p)
	}
	return &outcome{status: m.successStatus(), msg: res}
}

// validate checks a request against its protovalidate rules; violations become a 400 whose
// errors name each field by its wire path.
func (s *Server) validate(req proto.Message) *rpc.Problem {
	err := s.validator.Validate(req)
	if err == nil {
		return checkText(req)
	}
	var ve *protovalidate.ValidationError
	if !errors.As(err, &ve) {
		return rpc.NewProblem(http.StatusInternalServerError, rpc.CodeInternal, "The request could not be validated.")
	}
	p := &rpc.Problem{Status: http.StatusBadRequest, Code: rpc.CodeValidation, Detail: "The request is not valid."}
	for _, v := range ve.Violations {
		p.Errors = append(p.Errors, &svcv1.FieldViolation{Path: violationPath(v), Message: v.Proto.GetMessage()})
	}
	return p
}

// violationPath writes a protovalidate field path with wire names: "policy.minAgeDays",
// "source_ids[2]".
func violationPath(v *protovalidate.Violation) string {
	var b strings.Builder
	for _, el := range v.Proto.GetField().GetElements() {
		name := el.GetFieldName()
		if v.FieldDescriptor != nil && v.FieldDescriptor.Name() == protoreflect.Name(name) {
			name = wire.JSONName(v.FieldDescriptor)
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(name)
		switch sub := el.GetSubscript().(type) {
		case interface{ GetIndex() uint64 }:
			b.WriteString("[" + strconv.FormatUint(sub.GetIndex(), 10) + "]")
		case interface{ GetStringKey() string }:
			b.WriteString("[" + strconv.Quote(sub.GetStringKey()) + "]")
		}
	}
	return b.String()
}

// requestHash is the canonical hash of a request for idempotency: the deterministic protobuf
// encoding, so the same request over REST or Connect, with any JSON spacing or key order,
// hashes the same.
func requestHash(req proto.Message) string {
	b, _ := proto.MarshalOptions{Deterministic: true}.Marshal(req)
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// idempotent runs an IDEM request under its Idempotency-Key.
func (s *Server) idempotent(ctx context.Context, m *method, headerKey string, req proto.Message, caller *Caller) *outcome {
	if len(headerKey) > 255 {
		return fail(rpc.Invalid("Idempotency-Key", "must be at most 255 characters"))
	}
	// Keyed by tenant too: a session's test-mode and live requests, or a key's requests for two
	// end users, never replay each other.
	key := s.idem.Key(caller.PrincipalID()+"|"+caller.Tenant.String(), headerKey)
	verdict, rec, err := s.idem.Begin(ctx, key, m.procedure, requestHash(req))
	if err != nil {
		return fail(rpc.FromError(err))
	}
	switch verdict {
	case platform.IdempotencyReused:
		return fail(rpc.NewProblem(http.StatusConflict, rpc.CodeKeyReused, "This Idempotency-Key was used with a different request."))
	case platform.IdempotencyInUse:
		return fail(rpc.NewProblem(http.StatusConflict, rpc.CodeKeyInUse, "A request with this Idempotency-Key is still being processed."))
	case platform.IdempotencyReplay:
		return s.replay(m, rec)
	}
	out := s.call(ctx, m, req)
	if out.status >= 500 || out.status == http.StatusTooManyRequests {
		if err := s.idem.Release(context.WithoutCancel(ctx), key); err != nil {
			s.log.ErrorContext(ctx, "release idempotency key", "err", err)
		}
		return out
	}
	var body []byte
	if out.problem != nil {
		body, err = proto.Marshal(out.problem.Proto(""))
	} else {
		body, err = proto.MarshalOptions{Deterministic: true}.Marshal(out.msg)
	}
	if err == nil {
		err = s.idem.Finish(context.WithoutCancel(ctx), key, rec, out.status, caller.Header, body)
	}
	if err != nil {
		s.log.ErrorContext(ctx, "store idempotent response", "err", err)
	}
	return out
}

func (s *Server) replay(m *method, rec *platform.IdempotencyRecord) *outcome {
	out := &outcome{status: rec.Status, header: rec.Header.Clone(), replayed: true}
	if out.header == nil {
		out.header = http.Header{}
	}
	out.header.Set("Idempotent-Replayed", "true")
	if rec.Status >= 400 {
		var p svcv1.Problem
		if err := proto.Unmarshal(rec.Body, &p); err != nil {
			return fail(rpc.FromError(err))
		}
		prob := &rpc.Problem{Status: int(p.GetStatus()), Code: p.GetCode(), Detail: p.GetDetail(), Errors: p.GetErrors(), Header: out.header,
			Approvals: p.GetRequiredApprovals()}
		return &outcome{status: rec.Status, problem: prob, header: out.header, replayed: true}
	}
	msg := newMessage(m.desc.Output())
	if err := proto.Unmarshal(rec.Body, msg); err != nil {
		return fail(rpc.FromError(err))
	}
	out.msg = msg
	return out
}

// clientIP is the peer address of a request, for rate limiting anonymous callers.
func clientIP(r *http.Request) string {
	if r == nil {
		return "unknown"
	}
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// rateHeaders applies the anonymous (per client address) allowance to plain HTTP routes that
// bypass the RPC pipeline, so that every response carries the RateLimit headers.
func (s *Server) rateHeaders(w http.ResponseWriter, r *http.Request) bool {
	d := s.limiter.Take("ip:" + clientIP(r))
	h := w.Header()
	h.Set("RateLimit-Limit", fmt.Sprint(d.Limit))
	h.Set("RateLimit-Remaining", fmt.Sprint(d.Remaining))
	h.Set("RateLimit-Reset", fmt.Sprint(d.Reset))
	if !d.Allowed {
		h.Set("Retry-After", fmt.Sprint(d.RetryAfter))
		rpc.Write(w, rpc.RequestID(r.Context()), rpc.NewProblem(http.StatusTooManyRequests, rpc.CodeRateLimited, "Too many requests."))
		return false
	}
	return true
}
