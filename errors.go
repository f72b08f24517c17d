package svc

import (
	"errors"

	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/storage"
)

// ErrNotFound is returned (wrapped) when a record is not in the tenant: another tenant's id is
// not found either.
var ErrNotFound = storage.ErrNotFound

// Code names what kind of refusal an Error is; the hosted API uses it as the problem's code.
type Code string

// The codes of Error.
const (
	// CodeInvalidArgument: a request field is not valid (Error.Field names it).
	CodeInvalidArgument Code = "validation_failed"
	// CodeInvalidState: the resource is not in a state that allows the operation.
	CodeInvalidState Code = "invalid_state"
	// CodePlanStale: the plan's hash is not the one reviewed, or a source moved since it was built.
	CodePlanStale Code = "plan_stale"
	// CodeActionDenied: the policy decision denies the plan (it is now rejected).
	CodeActionDenied Code = "action_denied"
	// CodeStepUpRequired: the plan needs approvals the caller did not give (Error.Approvals).
	CodeStepUpRequired Code = "step_up_required"
	// CodeForbidden: the scope's access (a connection's grant, a key's scopes) does not
	// include a resource or operation the call names.
	CodeForbidden Code = "forbidden"
)

// Error is a domain operation refused: Code says why, Detail says it to a person.
type Error struct {
	Code   Code
	Detail string
	// Field is the request field at fault (CodeInvalidArgument).
	Field string
	// Approvals are the approvals a step-up needs (CodeStepUpRequired).
	Approvals []svcv1.Approval
}

// Error is the code, the field if any, and the detail.
func (e *Error) Error() string {
	if e.Field != "" {
		return string(e.Code) + ": " + e.Field + " " + e.Detail
	}
	return string(e.Code) + ": " + e.Detail
}

// Is matches the sentinel of the same code (errors.Is(err, svc.ErrPlanStale)).
func (e *Error) Is(target error) bool {
	var t *Error
	return errors.As(target, &t) && t.Field == "" && t.Detail == "" && t.Code == e.Code
}

// Sentinels to match an Error's code with errors.Is.
var (
	ErrInvalidArgument = &Error{Code: CodeInvalidArgument}
	ErrInvalidState    = &Error{Code: CodeInvalidState}
	ErrPlanStale       = &Error{Code: CodePlanStale}
	ErrActionDenied    = &Error{Code: CodeActionDenied}
	ErrStepUpRequired  = &Error{Code: CodeStepUpRequired}
	ErrForbidden       = &Error{Code: CodeForbidden}
)

func invalid(field, msg string) error {
	return &Error{Code: CodeInvalidArgument, Field: field, Detail: msg}
}

func refused(code Code, detail string) error { return &Error{Code: code, Detail: detail} }
