package server

import (
	"fmt"
	"net/http"

	"connectrpc.com/connect"

	"svc.dev/svc/server/internal/rpc"
)

// errNotImplemented is what methods without an implementation yet return.
var errNotImplemented = rpc.NewProblem(http.StatusNotImplemented, rpc.CodeNotImplemented,
	"This endpoint is defined but its capability is not implemented yet.")

// connectCodes maps problem statuses onto Connect codes.
var connectCodes = map[int]connect.Code{
	http.StatusBadRequest:            connect.CodeInvalidArgument,
	http.StatusUnauthorized:          connect.CodeUnauthenticated,
	http.StatusForbidden:             connect.CodePermissionDenied,
	http.StatusNotFound:              connect.CodeNotFound,
	http.StatusMethodNotAllowed:      connect.CodeUnimplemented,
	http.StatusConflict:              connect.CodeAborted,
	http.StatusRequestEntityTooLarge: connect.CodeResourceExhausted,
	http.StatusUnsupportedMediaType:  connect.CodeInvalidArgument,
	http.StatusTooManyRequests:       connect.CodeResourceExhausted,
	http.StatusNotImplemented:        connect.CodeUnimplemented,
	http.StatusServiceUnavailable:    connect.CodeUnavailable,
	http.StatusBadGateway:            connect.CodeUnavailable,
}

// connectError renders a problem for Connect and gRPC clients: the code from the status, the
// detail as message, and the whole problem document as an error detail.
func connectError(p *rpc.Problem, requestID string) *connect.Error {
	code, ok := connectCodes[p.Status]
	if !ok {
		code = connect.CodeInternal
	}
	if p.Code == rpc.CodeInvalidState || p.Code == rpc.CodePlanStale {
		code = connect.CodeFailedPrecondition
	}
	e := connect.NewError(code, fmt.Errorf("%s", p.Detail))
	if d, err := connect.NewErrorDetail(p.Proto(requestID)); err == nil {
		e.AddDetail(d)
	}
	return e
}
