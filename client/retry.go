package client

import (
	"context"
	crand "crypto/rand"
	"math/rand/v2"
	"net/http"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"

	svcv1 "svc.dev/svc/gen/svc/v1"
)

// RetryPolicy says how often and how long a call is retried.
type RetryPolicy struct {
	// MaxAttempts is the most times a call is sent, the first included (1: never retried).
	MaxAttempts int
	// BaseDelay is the first backoff; each further one doubles, up to MaxDelay, and the wait
	// is drawn uniformly below it (full jitter).
	BaseDelay time.Duration
	// MaxDelay caps a backoff. A Retry-After longer than MaxDelay is not waited for: the call
	// returns the error, whose RetryAfter says when to come back.
	MaxDelay time.Duration
}

// DefaultRetryPolicy is used when Options.Retry is nil.
var DefaultRetryPolicy = RetryPolicy{MaxAttempts: 4, BaseDelay: 250 * time.Millisecond, MaxDelay: 30 * time.Second}

func (p *RetryPolicy) orDefault() RetryPolicy {
	if p == nil {
		p = &DefaultRetryPolicy
	}
	q := *p
	q.MaxAttempts = max(q.MaxAttempts, 1)
	if q.BaseDelay <= 0 {
		q.BaseDelay = DefaultRetryPolicy.BaseDelay
	}
	if q.MaxDelay < q.BaseDelay {
		q.MaxDelay = q.BaseDelay
	}
	return q
}

// wait is how long to wait before attempt+1 after attempt failed; false means do not retry.
func (p RetryPolicy) wait(attempt int, retryAfter time.Duration) (time.Duration, bool) {
	if retryAfter > 0 {
		if retryAfter > p.MaxDelay {
			return 0, false
		}
		// A little jitter after the server's time, so that refused clients do not all return
		// at the same instant.
		return retryAfter + rand.N(p.BaseDelay), true
	}
	d := p.MaxDelay
	if shift := attempt - 1; shift < 30 && p.BaseDelay<<shift < p.MaxDelay {
		d = p.BaseDelay << shift
	}
	return rand.N(d + 1), true
}

type idemKey struct{}

// answer is what the transport saw of an attempt's HTTP response: an error answered by
// something other than the API (a proxy's text 503) carries no Connect error body, and Connect
// then drops its status and headers.
type answer struct {
	status     int
	retryAfter string
}

type answerKey struct{}

// note records a response's status and Retry-After for the attempt that sent it.
func note(r *http.Request, res *http.Response) {
	if a, ok := r.Context().Value(answerKey{}).(*answer); ok {
		a.status, a.retryAfter = res.StatusCode, res.Header.Get("Retry-After")
	}
}

// WithIdempotencyKey returns a context whose idempotent calls send key as their
// Idempotency-Key (at most 255 characters). Without it, the client generates one per call.
// Use your own key to make a call safe to repeat across process restarts.
func WithIdempotencyKey(ctx context.Context, key string) context.Context {
	return context.WithValue(ctx, idemKey{}, key)
}

// interceptor adds the default connection and the Idempotency-Key, retries what is safe to
// retry, and types errors.
type interceptor struct {
	retry        RetryPolicy
	connectionID string
}

func (ic *interceptor) WrapUnary(next connect.UnaryFunc) connect.UnaryFunc {
	return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
		procedure := req.Spec().Procedure
		md, _ := req.Spec().Schema.(protoreflect.MethodDescriptor)
		if ic.connectionID != "" {
			fillConnection(req.Any(), ic.connectionID)
		}
		safe, idem := methodTraits(md)
		if idem && req.Header().Get("Idempotency-Key") == "" {
			key, _ := ctx.Value(idemKey{}).(string)
			if key == "" {
				key = crand.Text()
			}
			req.Header().Set("Idempotency-Key", key)
		}
		for attempt := 1; ; attempt++ {
			tr := &answer{}
			res, err := next(context.WithValue(ctx, answerKey{}, tr), req)
			if err == nil {
				return res, nil
			}
			e := fromConnect(procedure, err, tr)
			if attempt >= ic.retry.MaxAttempts || ctx.Err() != nil || !retryable(e, safe || idem) {
				return nil, e
			}
			d, ok := ic.retry.wait(attempt, e.RetryAfter)
			if !ok {
				return nil, e
			}
			t := time.NewTimer(d)
			select {
			case <-ctx.Done():
				t.Stop()
				return nil, e
			case <-t.C:
			}
		}
	}
}

func (ic *interceptor) WrapStreamingClient(next connect.StreamingClientFunc) connect.StreamingClientFunc {
	return next
}

func (ic *interceptor) WrapStreamingHandler(next connect.StreamingHandlerFunc) connect.StreamingHandlerFunc {
	return next
}

// retryable: 429 was refused before anything ran, so it is always safe to send again; 5xx
// (and no answer at all) only for calls that are safe to repeat; a concurrent request under
// the same Idempotency-Key may finish, so idempotency_key_in_use is retried too.
func retryable(e *Error, repeatable bool) bool {
	switch {
	case e.Status == http.StatusTooManyRequests:
		return true
	case !repeatable:
		return false
	case e.Status == 0:
		return connect.CodeOf(e.err) == connect.CodeUnavailable
	case e.Status >= 500 && e.Status != http.StatusNotImplemented:
		return true
	case e.Status == http.StatusConflict && e.Code == "idempotency_key_in_use":
		return true
	}
	return false
}

// methodTraits reads from the method's descriptor whether it has no side effects and whether
// it honours an Idempotency-Key.
func methodTraits(md protoreflect.MethodDescriptor) (safe, idempotent bool) {
	if md == nil {
		return false, false
	}
	opts, _ := md.Options().(*descriptorpb.MethodOptions)
	safe = opts.GetIdempotencyLevel() == descriptorpb.MethodOptions_NO_SIDE_EFFECTS
	ep, _ := proto.GetExtension(opts, svcv1.E_Endpoint).(*svcv1.Endpoint)
	return safe, ep.GetIdempotent()
}

// fillConnection sets an unset connection_id field of a request to the client's default.
func fillConnection(m any, connectionID string) {
	pm, ok := m.(proto.Message)
	if !ok {
		return
	}
	r := pm.ProtoReflect()
	fd := r.Descriptor().Fields().ByName("connection_id")
	if fd == nil || fd.Kind() != protoreflect.StringKind || fd.IsList() || r.Has(fd) {
		return
	}
	r.Set(fd, protoreflect.ValueOfString(connectionID))
}
