package rpc

import (
	"net/http"

	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/wire"
)

// Problem codes (docs/errors.md lists them with their statuses).
const (
	CodeValidation       = "validation_failed"
	CodeUnauthenticated  = "unauthenticated"
	CodeForbidden        = "forbidden"
	CodeNotFound         = "not_found"
	CodeMethodNotAllowed = "method_not_allowed"
	CodeInvalidState     = "invalid_state"
	CodeKeyReused        = "idempotency_key_reused"
	CodeKeyInUse         = "idempotency_key_in_use"
	CodeConflict         = "conflict"
	CodeLimitReached     = "limit_reached"
	CodeTooLarge         = "payload_too_large"
	CodeMediaType        = "unsupported_media_type"
	CodeRateLimited      = "rate_limited"
	CodeInternal         = "internal"
	CodeNotImplemented   = "not_implemented"
	CodeProviderError    = "provider_error"
	CodeProviderDown     = "provider_unavailable"
	CodeUnavailable      = "unavailable"
	CodePlanStale        = "plan_stale"
	CodeActionDenied     = "action_denied"
	CodeStepUpRequired   = "step_up_required"
)

// Titles are the problem documents' titles by code.
var Titles = map[string]string{
	CodeValidation:       "Validation failed",
	CodeUnauthenticated:  "Unauthenticated",
	CodeForbidden:        "Forbidden",
	CodeNotFound:         "Not found",
	CodeMethodNotAllowed: "Method not allowed",
	CodeInvalidState:     "Invalid state",
	CodeKeyReused:        "Idempotency key reused",
	CodeKeyInUse:         "Idempotency key in use",
	CodeConflict:         "Conflict",
	CodeLimitReached:     "Limit reached",
	CodeTooLarge:         "Payload too large",
	CodeMediaType:        "Unsupported media type",
	CodeRateLimited:      "Rate limited",
	CodeInternal:         "Internal error",
	CodeNotImplemented:   "Not implemented",
	CodeProviderError:    "Provider error",
	CodeProviderDown:     "Provider unavailable",
	CodeUnavailable:      "Service unavailable",
	CodePlanStale:        "Plan stale",
	CodeActionDenied:     "Action denied",
	CodeStepUpRequired:   "Step-up required",
}

// TypeBase prefixes every problem type URI; the code completes it.
const TypeBase = "https://svc.dev/problems/"

// Problem is an error as the API shows it (RFC 9457). Only the edge and its handlers make
// problems: domain errors are mapped by the edge, and internal causes never reach the detail.
type Problem struct {
	Status int
	Code   string
	Detail string
	Errors []*svcv1.FieldViolation
	Header http.Header
	// Approvals are what a step_up_required problem needs.
	Approvals []string
}

func (p *Problem) Error() string { return p.Code + ": " + p.Detail }

// NewProblem returns a problem of status and code with a detail for the client.
func NewProblem(status int, code, detail string) *Problem {
	return &Problem{Status: status, Code: code, Detail: detail}
}

// Invalid returns the validation problem of one field, named by its wire path.
func Invalid(path, msg string) *Problem {
	return &Problem{Status: http.StatusBadRequest, Code: CodeValidation, Detail: "The request is not valid.",
		Errors: []*svcv1.FieldViolation{{Path: path, Message: msg}}}
}

// NotFound is the 404 of a resource the caller may not see or that does not exist: the two
// are indistinguishable.
func NotFound(detail string) *Problem {
	return NewProblem(http.StatusNotFound, CodeNotFound, detail)
}

// Forbidden is the 403 of a refused action, with the reason for the client.
func Forbidden(detail string) *Problem {
	return NewProblem(http.StatusForbidden, CodeForbidden, detail)
}

// Proto returns the problem document for a request.
func (p *Problem) Proto(requestID string) *svcv1.Problem {
	errs := p.Errors
	if errs == nil {
		errs = []*svcv1.FieldViolation{}
	}
	return &svcv1.Problem{Type: TypeBase + p.Code, Title: Titles[p.Code], Status: int32(p.Status),
		Detail: p.Detail, Code: p.Code, RequestId: requestID, Errors: errs, RequiredApprovals: p.Approvals}
}

// Write serves p as an application/problem+json response.
func Write(w http.ResponseWriter, requestID string, p *Problem) {
	for k, v := range p.Header {
		w.Header()[k] = v
	}
	body, err := wire.Marshal(p.Proto(requestID))
	if err != nil {
		body = []byte(`{"type":"` + TypeBase + CodeInternal + `","title":"Internal error","status":500,"code":"internal","request_id":"` + requestID + `","errors":[]}`)
	}
	w.Header().Set("Content-Type", "application/problem+json")
	w.Header().Del("Content-Length")
	w.WriteHeader(p.Status)
	w.Write(body)
}
