package client

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"connectrpc.com/connect"

	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/wire"
)

// Error is an API error, typed from the problem document (RFC 9457) the server sent. Every
// error a Client's call returns for an answer of the server is an *Error; match it with
// errors.As:
//
//	var e *client.Error
//	if errors.As(err, &e) && e.Code == "plan_stale" { ... }
type Error struct {
	// Status is the HTTP status (409); 0 when the server never answered.
	Status int
	// Code is the machine-readable problem code ("validation_failed", "plan_stale", ...;
	// docs/api.md lists them).
	Code string
	// Type is the problem type URI, Title its short summary, Detail what happened this time.
	Type, Title, Detail string
	// RequestID names the request in the server's logs.
	RequestID string
	// Fields are the invalid fields of a validation_failed problem, by path.
	Fields []FieldError
	// RequiredApprovals is what a step_up_required problem needs.
	RequiredApprovals []string
	// RetryAfter is the server's Retry-After, when it sent one.
	RetryAfter time.Duration
	// Procedure is the call that failed: a Connect procedure or a REST method and path.
	Procedure string

	err error
}

// FieldError is one invalid field of a request: Path is the field's JSON path ("policy.minAgeDays").
type FieldError struct {
	Path, Message string
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("svc: ")
	if e.Procedure != "" {
		b.WriteString(e.Procedure + ": ")
	}
	if e.Status == 0 {
		fmt.Fprintf(&b, "%v", e.err)
		return b.String()
	}
	fmt.Fprintf(&b, "%d %s", e.Status, e.Code)
	if e.Detail != "" {
		b.WriteString(": " + e.Detail)
	}
	for _, f := range e.Fields {
		fmt.Fprintf(&b, "; %s: %s", f.Path, f.Message)
	}
	return b.String()
}

// Unwrap returns the transport's error (a *connect.Error for Connect calls).
func (e *Error) Unwrap() error { return e.err }

// Field returns the message of the invalid field at path, if the problem names it.
func (e *Error) Field(path string) (string, bool) {
	for _, f := range e.Fields {
		if f.Path == path {
			return f.Message, true
		}
	}
	return "", false
}

// fromProblem fills e from a problem document.
func (e *Error) fromProblem(p *svcv1.Problem) {
	e.Status, e.Code, e.Type, e.Title, e.Detail, e.RequestID = int(p.GetStatus()), p.GetCode(), p.GetType(), p.GetTitle(), p.GetDetail(), p.GetRequestId()
	for _, f := range p.GetErrors() {
		e.Fields = append(e.Fields, FieldError{Path: f.GetPath(), Message: f.GetMessage()})
	}
	e.RequiredApprovals = p.GetRequiredApprovals()
}

// connectStatus is the HTTP status of a Connect code, for errors without a problem document
// (a proxy's answer, or a transport failure).
var connectStatus = map[connect.Code]int{
	connect.CodeInvalidArgument:    http.StatusBadRequest,
	connect.CodeUnauthenticated:    http.StatusUnauthorized,
	connect.CodePermissionDenied:   http.StatusForbidden,
	connect.CodeNotFound:           http.StatusNotFound,
	connect.CodeAborted:            http.StatusConflict,
	connect.CodeFailedPrecondition: http.StatusConflict,
	connect.CodeResourceExhausted:  http.StatusTooManyRequests,
	connect.CodeUnimplemented:      http.StatusNotImplemented,
	connect.CodeInternal:           http.StatusInternalServerError,
	connect.CodeDeadlineExceeded:   http.StatusGatewayTimeout,
}

// fromConnect types an error of a Connect call. Errors the server did not send (a cancelled
// context, a refused connection) keep Status 0.
func fromConnect(procedure string, err error, a *answer) *Error {
	e := &Error{Procedure: procedure, err: err}
	var ce *connect.Error
	if !errors.As(err, &ce) {
		return e
	}
	for _, d := range ce.Details() {
		if v, derr := d.Value(); derr == nil {
			if p, ok := v.(*svcv1.Problem); ok {
				e.fromProblem(p)
				break
			}
		}
	}
	if e.Status == 0 && !connect.IsWireError(ce) {
		if a.status < 400 {
			return e // never reached the server, or the server never answered
		}
		// Answered, but not by the API: a proxy or load balancer.
		e.Status, e.Code, e.Detail = a.status, statusCode(a.status), ce.Message()
		e.RetryAfter = retryAfter(a.retryAfter)
		return e
	}
	if e.Status == 0 {
		e.Status = connectStatus[ce.Code()]
		if e.Status == 0 {
			e.Status = http.StatusServiceUnavailable
		}
		e.Code, e.Detail = ce.Code().String(), ce.Message()
	}
	e.RetryAfter = retryAfter(ce.Meta().Get("Retry-After"))
	if e.RetryAfter == 0 {
		e.RetryAfter = retryAfter(a.retryAfter)
	}
	return e
}

// fromResponse types a REST error response: its problem document, or the status alone.
func fromResponse(procedure string, res *http.Response, body []byte) *Error {
	e := &Error{Procedure: procedure, Status: res.StatusCode, err: fmt.Errorf("%s", res.Status)}
	var p svcv1.Problem
	if err := wire.Unmarshal(body, &p); err == nil && p.GetCode() != "" {
		e.fromProblem(&p)
	} else {
		e.Code = statusCode(res.StatusCode)
	}
	e.RetryAfter = retryAfter(res.Header.Get("Retry-After"))
	return e
}

// statusCode names a status that came without a problem document ("service_unavailable").
func statusCode(status int) string {
	return strings.ToLower(strings.ReplaceAll(strings.ReplaceAll(http.StatusText(status), " ", "_"), "-", "_"))
}

// retryAfter reads a Retry-After header: seconds, or an HTTP date.
func retryAfter(v string) time.Duration {
	if v == "" {
		return 0
	}
	if s, err := strconv.Atoi(v); err == nil && s >= 0 {
		return time.Duration(s) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(0, time.Until(t))
	}
	return 0
}
