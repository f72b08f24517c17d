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
	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/plan"
	"svc.dev/svc/platform"
	"svc.dev/svc/platform/export"
	"svc.dev/svc/platform/job"
	"svc.dev/svc/platform/webhook"
	"svc.dev/svc/providers"
	"svc.dev/svc/storage"
	"svc.dev/svc/vault"
	"svc.dev/svc/vault/search"
	"svc.dev/svc/wire"
)

// Problem codes (docs/errors.md lists them with their statuses).
const (
	codeValidation       = "validation_failed"
	codeUnauthenticated  = "unauthenticated"
	codeForbidden        = "forbidden"
	codeNotFound         = "not_found"
	codeMethodNotAllowed = "method_not_allowed"
	codeInvalidState     = "invalid_state"
	codeKeyReused        = "idempotency_key_reused"
	codeKeyInUse         = "idempotency_key_in_use"
	codeConflict         = "conflict"
	codeLimitReached     = "limit_reached"
	codeTooLarge         = "payload_too_large"
	codeMediaType        = "unsupported_media_type"
	codeRateLimited      = "rate_limited"
	codeInternal         = "internal"
	codeNotImplemented   = "not_implemented"
	codeProviderError    = "provider_error"
	codeProviderDown     = "provider_unavailable"
	codeUnavailable      = "unavailable"
)

var titles = map[string]string{
	codeValidation:       "Validation failed",
	codeUnauthenticated:  "Unauthenticated",
	codeForbidden:        "Forbidden",
	codeNotFound:         "Not found",
	codeMethodNotAllowed: "Method not allowed",
	codeInvalidState:     "Invalid state",
	codeKeyReused:        "Idempotency key reused",
	codeKeyInUse:         "Idempotency key in use",
	codeConflict:         "Conflict",
	codeLimitReached:     "Limit reached",
	codeTooLarge:         "Payload too large",
	codeMediaType:        "Unsupported media type",
	codeRateLimited:      "Rate limited",
	codeInternal:         "Internal error",
	codeNotImplemented:   "Not implemented",
	codeProviderError:    "Provider error",
	codeProviderDown:     "Provider unavailable",
	codeUnavailable:      "Service unavailable",
	codePlanStale:        "Plan stale",
	codeActionDenied:     "Action denied",
	codeStepUpRequired:   "Step-up required",
}

// problemTypeBase prefixes every problem type URI; the code completes it.
const problemTypeBase = "https://svc.dev/problems/"

// problem is an error as the API shows it (RFC 9457). Only the edge makes problems: domain
// errors are mapped in toProblem, and internal causes never reach the detail.
type problem struct {
	status int
	code   string
	detail string
	errors []*svcv1.FieldViolation
	header http.Header
	// approvals are what a step_up_required problem needs.
	approvals []string
}

func (p *problem) Error() string { return p.code + ": " + p.detail }

func newProblem(status int, code, detail string) *problem {
	return &problem{status: status, code: code, detail: detail}
}

func invalid(path, msg string) *problem {
	return &problem{status: http.StatusBadRequest, code: codeValidation, detail: "The request is not valid.",
		errors: []*svcv1.FieldViolation{{Path: path, Message: msg}}}
}

// proto returns the problem document for a request.
func (p *problem) proto(requestID string) *svcv1.Problem {
	errs := p.errors
	if errs == nil {
		errs = []*svcv1.FieldViolation{}
	}
	return &svcv1.Problem{Type: problemTypeBase + p.code, Title: titles[p.code], Status: int32(p.status),
		Detail: p.detail, Code: p.code, RequestId: requestID, Errors: errs, RequiredApprovals: p.approvals}
}

// errNotImplemented is what methods without an implementation yet return.
var errNotImplemented = newProblem(http.StatusNotImplemented, codeNotImplemented,
	"This endpoint is defined but its capability is not implemented yet.")

// domainProblem is the problem of a refusal of the embedding package.
func domainProblem(e *svc.Error) *problem {
	switch e.Code {
	case svc.CodeInvalidArgument:
		return invalid(e.Field, e.Detail)
	case svc.CodeInvalidState:
		return newProblem(http.StatusConflict, codeInvalidState, e.Detail)
	case svc.CodePlanStale:
		return newProblem(http.StatusConflict, codePlanStale, e.Detail)
	case svc.CodeActionDenied:
		return newProblem(http.StatusForbidden, codeActionDenied, e.Detail)
	case svc.CodeForbidden:
		return newProblem(http.StatusForbidden, codeForbidden, e.Detail)
	case svc.CodeStepUpRequired:
		p := newProblem(http.StatusForbidden, codeStepUpRequired, e.Detail)
		for _, a := range e.Approvals {
			p.approvals = append(p.approvals, enumWire(a))
		}
		return p
	}
	return newProblem(http.StatusInternalServerError, codeInternal, "The server failed to process the request.")
}

// toProblem maps any error from a handler or the domain to what the client sees.
func toProblem(err error) *problem {
	var p *problem
	var we *wire.Error
	var de *svc.Error
	switch {
	case errors.As(err, &p):
		return p
	case errors.As(err, &we):
		return invalid(we.Path, we.Msg)
	case errors.As(err, &de):
		return domainProblem(de)
	case errors.Is(err, vault.ErrInvalidData):
		return newProblem(http.StatusConflict, codeInvalidState, "The vault object failed verification; it is marked corrupt.")
	case errors.Is(err, vault.ErrInvalidState):
		return newProblem(http.StatusConflict, codeInvalidState, "The vault object's state does not allow this.")
	case errors.Is(err, platform.ErrNotFound), errors.Is(err, storage.ErrNotFound), errors.Is(err, vault.ErrNotFound):
		return newProblem(http.StatusNotFound, codeNotFound, "The resource does not exist.")
	case errors.Is(err, platform.ErrUnauthenticated):
		return newProblem(http.StatusUnauthorized, codeUnauthenticated, "A valid credential is required.")
	case errors.Is(err, platform.ErrInvalidCredentials):
		return newProblem(http.StatusUnauthorized, codeUnauthenticated, "The email or password is not correct.")
	case errors.Is(err, platform.ErrEmailTaken):
		return newProblem(http.StatusConflict, codeConflict, "An account with this email address already exists.")
	case errors.Is(err, platform.ErrInvalidCursor):
		return invalid("cursor", "is not a cursor issued for this request")
	case errors.As(err, new(*plan.BudgetError)):
		// A source too large for one plan: not a fault of the server's, and not worth a retry.
		var be *plan.BudgetError
		errors.As(err, &be)
		return newProblem(http.StatusConflict, codeLimitReached, "The plan is over its "+be.Budget+" budget: "+
			strings.TrimPrefix(be.Error(), plan.ErrBudgetExceeded.Error()+" ("+be.Budget+"): ")+
			". Plan over fewer sources, or with a narrower policy.")
	case errors.Is(err, search.ErrBusy):
		return newProblem(http.StatusServiceUnavailable, codeUnavailable, "Search is busy with other queries; retry in a few seconds.")
	case errors.Is(err, execute.ErrFenced), errors.Is(err, job.ErrFenced):
		return newProblem(http.StatusConflict, codeInvalidState, "The account is being deleted; cancel the deletion job to use it again.")
	case errors.As(err, new(*export.QuotaError)):
		return newProblem(http.StatusConflict, codeLimitReached, "Export refused: "+err.Error()+".")
	case errors.Is(err, providers.ErrTooLarge):
		return newProblem(http.StatusBadGateway, codeProviderError, "A provider answered with more data than the plan authorized.")
	case errors.Is(err, plan.ErrInvalidState):
		return newProblem(http.StatusConflict, codeInvalidState, err.Error()+".")
	case errors.Is(err, plan.ErrInvalid):
		return invalid("", err.Error())
	case errors.Is(err, providers.ErrTransient), errors.Is(err, providers.ErrPluginCrashed),
		errors.Is(err, providers.ErrPluginTimeout), errors.Is(err, providers.ErrPluginUnavailable):
		return newProblem(http.StatusServiceUnavailable, codeProviderDown, "A provider is unavailable; retry later.")
	case errors.Is(err, providers.ErrPermission):
		return newProblem(http.StatusBadGateway, codeProviderError, "The provider refused access; the source may need to be reconnected.")
	case errors.Is(err, providers.ErrInvalidResponse), errors.Is(err, providers.ErrInvalidData):
		return newProblem(http.StatusBadGateway, codeProviderError, "A provider answered with invalid data.")
	case errors.Is(err, webhook.ErrTooManyWebhooks):
		return newProblem(http.StatusConflict, codeLimitReached, fmt.Sprintf("An application has at most %d webhooks; delete one first.", webhook.MaxWebhooksPerApp))
	case errors.Is(err, webhook.ErrNotActive):
		return newProblem(http.StatusConflict, codeInvalidState, "The webhook is not active; set its status to active first.")
	case errors.Is(err, platform.ErrScope):
		return newProblem(http.StatusForbidden, codeForbidden, err.Error())
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return newProblem(http.StatusServiceUnavailable, codeInternal, "The request was cancelled.")
	}
	return newProblem(http.StatusInternalServerError, codeInternal, "The server failed to process the request.")
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
func (p *problem) connectError(requestID string) *connect.Error {
	code, ok := connectCodes[p.status]
	if !ok {
		code = connect.CodeInternal
	}
	if p.code == codeInvalidState || p.code == codePlanStale {
		code = connect.CodeFailedPrecondition
	}
	e := connect.NewError(code, fmt.Errorf("%s", p.detail))
	if d, err := connect.NewErrorDetail(p.proto(requestID)); err == nil {
		e.AddDetail(d)
	}
	return e
}

func writeProblem(w http.ResponseWriter, requestID string, p *problem) {
	for k, v := range p.header {
		w.Header()[k] = v
	}
	body, err := wire.Marshal(p.proto(requestID))
	if err != nil {
		body = []byte(`{"type":"` + problemTypeBase + codeInternal + `","title":"Internal error","status":500,"code":"internal","request_id":"` + requestID + `","errors":[]}`)
	}
	w.Header().Set("Content-Type", "application/problem+json")
	w.Header().Del("Content-Length")
	w.WriteHeader(p.status)
	w.Write(body)
}
