package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"connectrpc.com/connect"

	"svc.dev/svc"
	"svc.dev/svc/execute"
	"svc.dev/svc/plan"
	"svc.dev/svc/platform"
	"svc.dev/svc/platform/export"
	"svc.dev/svc/platform/job"
	"svc.dev/svc/platform/webhook"
	"svc.dev/svc/providers"
	"svc.dev/svc/server/internal/rpc"
	"svc.dev/svc/storage"
	"svc.dev/svc/vault"
	"svc.dev/svc/vault/search"
	"svc.dev/svc/wire"
)

// errNotImplemented is what methods without an implementation yet return.
var errNotImplemented = rpc.NewProblem(http.StatusNotImplemented, rpc.CodeNotImplemented,
	"This endpoint is defined but its capability is not implemented yet.")

// domainProblem is the problem of a refusal of the embedding package.
func domainProblem(e *svc.Error) *rpc.Problem {
	switch e.Code {
	case svc.CodeInvalidArgument:
		return rpc.Invalid(e.Field, e.Detail)
	case svc.CodeInvalidState:
		return rpc.NewProblem(http.StatusConflict, rpc.CodeInvalidState, e.Detail)
	case svc.CodePlanStale:
		return rpc.NewProblem(http.StatusConflict, rpc.CodePlanStale, e.Detail)
	case svc.CodeActionDenied:
		return rpc.NewProblem(http.StatusForbidden, rpc.CodeActionDenied, e.Detail)
	case svc.CodeForbidden:
		return rpc.NewProblem(http.StatusForbidden, rpc.CodeForbidden, e.Detail)
	case svc.CodeStepUpRequired:
		p := rpc.NewProblem(http.StatusForbidden, rpc.CodeStepUpRequired, e.Detail)
		for _, a := range e.Approvals {
			p.Approvals = append(p.Approvals, rpc.EnumWire(a))
		}
		return p
	}
	return rpc.NewProblem(http.StatusInternalServerError, rpc.CodeInternal, "The server failed to process the request.")
}

// toProblem maps any error from a handler or the domain to what the client sees.
func toProblem(err error) *rpc.Problem {
	var p *rpc.Problem
	var we *wire.Error
	var de *svc.Error
	switch {
	case errors.As(err, &p):
		return p
	case errors.As(err, &we):
		return rpc.Invalid(we.Path, we.Msg)
	case errors.As(err, &de):
		return domainProblem(de)
	case errors.Is(err, vault.ErrInvalidData):
		return rpc.NewProblem(http.StatusConflict, rpc.CodeInvalidState, "The vault object failed verification; it is marked corrupt.")
	case errors.Is(err, vault.ErrInvalidState):
		return rpc.NewProblem(http.StatusConflict, rpc.CodeInvalidState, "The vault object's state does not allow this.")
	case errors.Is(err, platform.ErrNotFound), errors.Is(err, storage.ErrNotFound), errors.Is(err, vault.ErrNotFound):
		return rpc.NewProblem(http.StatusNotFound, rpc.CodeNotFound, "The resource does not exist.")
	case errors.Is(err, platform.ErrUnauthenticated):
		return rpc.NewProblem(http.StatusUnauthorized, rpc.CodeUnauthenticated, "A valid credential is required.")
	case errors.Is(err, platform.ErrInvalidCredentials):
		return rpc.NewProblem(http.StatusUnauthorized, rpc.CodeUnauthenticated, "The email or password is not correct.")
	case errors.Is(err, platform.ErrEmailTaken):
		return rpc.NewProblem(http.StatusConflict, rpc.CodeConflict, "An account with this email address already exists.")
	case errors.Is(err, platform.ErrInvalidCursor):
		return rpc.Invalid("cursor", "is not a cursor issued for this request")
	case errors.As(err, new(*plan.BudgetError)):
		// A source too large for one plan: not a fault of the server's, and not worth a retry.
		var be *plan.BudgetError
		errors.As(err, &be)
		return rpc.NewProblem(http.StatusConflict, rpc.CodeLimitReached, "The plan is over its "+be.Budget+" budget: "+
			strings.TrimPrefix(be.Error(), plan.ErrBudgetExceeded.Error()+" ("+be.Budget+"): ")+
			". Plan over fewer sources, or with a narrower policy.")
	case errors.Is(err, search.ErrBusy):
		return rpc.NewProblem(http.StatusServiceUnavailable, rpc.CodeUnavailable, "Search is busy with other queries; retry in a few seconds.")
	case errors.Is(err, execute.ErrFenced), errors.Is(err, job.ErrFenced):
		return rpc.NewProblem(http.StatusConflict, rpc.CodeInvalidState, "The account is being deleted; cancel the deletion job to use it again.")
	case errors.As(err, new(*export.QuotaError)):
		return rpc.NewProblem(http.StatusConflict, rpc.CodeLimitReached, "Export refused: "+err.Error()+".")
	case errors.Is(err, providers.ErrTooLarge):
		return rpc.NewProblem(http.StatusBadGateway, rpc.CodeProviderError, "A provider answered with more data than the plan authorized.")
	case errors.Is(err, plan.ErrInvalidState):
		return rpc.NewProblem(http.StatusConflict, rpc.CodeInvalidState, err.Error()+".")
	case errors.Is(err, plan.ErrInvalid):
		return rpc.Invalid("", err.Error())
	case errors.Is(err, providers.ErrTransient), errors.Is(err, providers.ErrPluginCrashed),
		errors.Is(err, providers.ErrPluginTimeout), errors.Is(err, providers.ErrPluginUnavailable):
		return rpc.NewProblem(http.StatusServiceUnavailable, rpc.CodeProviderDown, "A provider is unavailable; retry later.")
	case errors.Is(err, providers.ErrPermission):
		return rpc.NewProblem(http.StatusBadGateway, rpc.CodeProviderError, "The provider refused access; the source may need to be reconnected.")
	case errors.Is(err, providers.ErrInvalidResponse), errors.Is(err, providers.ErrInvalidData):
		return rpc.NewProblem(http.StatusBadGateway, rpc.CodeProviderError, "A provider answered with invalid data.")
	case errors.Is(err, webhook.ErrTooManyWebhooks):
		return rpc.NewProblem(http.StatusConflict, rpc.CodeLimitReached, fmt.Sprintf("An application has at most %d webhooks; delete one first.", webhook.MaxWebhooksPerApp))
	case errors.Is(err, webhook.ErrNotActive):
		return rpc.NewProblem(http.StatusConflict, rpc.CodeInvalidState, "The webhook is not active; set its status to active first.")
	case errors.Is(err, platform.ErrScope):
		return rpc.NewProblem(http.StatusForbidden, rpc.CodeForbidden, err.Error())
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return rpc.NewProblem(http.StatusServiceUnavailable, rpc.CodeInternal, "The request was cancelled.")
	}
	return rpc.NewProblem(http.StatusInternalServerError, rpc.CodeInternal, "The server failed to process the request.")
}

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
