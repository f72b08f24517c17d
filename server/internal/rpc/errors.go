package rpc

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"svc.dev/svc"
	"svc.dev/svc/execute"
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

// domainProblem is the problem of a refusal of the embedding package.
func domainProblem(e *svc.Error) *Problem {
	switch e.Code {
	case svc.CodeInvalidArgument:
		return Invalid(e.Field, e.Detail)
	case svc.CodeInvalidState:
		return NewProblem(http.StatusConflict, CodeInvalidState, e.Detail)
	case svc.CodePlanStale:
		return NewProblem(http.StatusConflict, CodePlanStale, e.Detail)
	case svc.CodeActionDenied:
		return NewProblem(http.StatusForbidden, CodeActionDenied, e.Detail)
	case svc.CodeForbidden:
		return NewProblem(http.StatusForbidden, CodeForbidden, e.Detail)
	case svc.CodeStepUpRequired:
		p := NewProblem(http.StatusForbidden, CodeStepUpRequired, e.Detail)
		for _, a := range e.Approvals {
			p.Approvals = append(p.Approvals, EnumWire(a))
		}
		return p
	}
	return NewProblem(http.StatusInternalServerError, CodeInternal, "The server failed to process the request.")
}

// FromError maps any error from a handler or the domain to what the client sees.
func FromError(err error) *Problem {
	var p *Problem
	var we *wire.Error
	var de *svc.Error
	switch {
	case errors.As(err, &p):
		return p
	case errors.As(err, &we):
		return Invalid(we.Path, we.Msg)
	case errors.As(err, &de):
		return domainProblem(de)
	case errors.Is(err, vault.ErrInvalidData):
		return NewProblem(http.StatusConflict, CodeInvalidState, "The vault object failed verification; it is marked corrupt.")
	case errors.Is(err, vault.ErrInvalidState):
		return NewProblem(http.StatusConflict, CodeInvalidState, "The vault object's state does not allow this.")
	case errors.Is(err, platform.ErrNotFound), errors.Is(err, storage.ErrNotFound), errors.Is(err, vault.ErrNotFound):
		return NewProblem(http.StatusNotFound, CodeNotFound, "The resource does not exist.")
	case errors.Is(err, platform.ErrUnauthenticated):
		return NewProblem(http.StatusUnauthorized, CodeUnauthenticated, "A valid credential is required.")
	case errors.Is(err, platform.ErrInvalidCredentials):
		return NewProblem(http.StatusUnauthorized, CodeUnauthenticated, "The email or password is not correct.")
	case errors.Is(err, platform.ErrEmailTaken):
		return NewProblem(http.StatusConflict, CodeConflict, "An account with this email address already exists.")
	case errors.Is(err, platform.ErrInvalidCursor):
		return Invalid("cursor", "is not a cursor issued for this request")
	case errors.As(err, new(*plan.BudgetError)):
		// A source too large for one plan: not a fault of the server's, and not worth a retry.
		var be *plan.BudgetError
		errors.As(err, &be)
		return NewProblem(http.StatusConflict, CodeLimitReached, "The plan is over its "+be.Budget+" budget: "+
			strings.TrimPrefix(be.Error(), plan.ErrBudgetExceeded.Error()+" ("+be.Budget+"): ")+
			". Plan over fewer sources, or with a narrower policy.")
	case errors.Is(err, search.ErrBusy):
		return NewProblem(http.StatusServiceUnavailable, CodeUnavailable, "Search is busy with other queries; retry in a few seconds.")
	case errors.Is(err, execute.ErrFenced), errors.Is(err, job.ErrFenced):
		return NewProblem(http.StatusConflict, CodeInvalidState, "The account is being deleted; cancel the deletion job to use it again.")
	case errors.As(err, new(*export.QuotaError)):
		return NewProblem(http.StatusConflict, CodeLimitReached, "Export refused: "+err.Error()+".")
	case errors.Is(err, providers.ErrTooLarge):
		return NewProblem(http.StatusBadGateway, CodeProviderError, "A provider answered with more data than the plan authorized.")
	case errors.Is(err, plan.ErrInvalidState):
		return NewProblem(http.StatusConflict, CodeInvalidState, err.Error()+".")
	case errors.Is(err, plan.ErrInvalid):
		return Invalid("", err.Error())
	case errors.Is(err, providers.ErrTransient), errors.Is(err, providers.ErrPluginCrashed),
		errors.Is(err, providers.ErrPluginTimeout), errors.Is(err, providers.ErrPluginUnavailable):
		return NewProblem(http.StatusServiceUnavailable, CodeProviderDown, "A provider is unavailable; retry later.")
	case errors.Is(err, providers.ErrPermission):
		return NewProblem(http.StatusBadGateway, CodeProviderError, "The provider refused access; the source may need to be reconnected.")
	case errors.Is(err, providers.ErrInvalidResponse), errors.Is(err, providers.ErrInvalidData):
		return NewProblem(http.StatusBadGateway, CodeProviderError, "A provider answered with invalid data.")
	case errors.Is(err, webhook.ErrTooManyWebhooks):
		return NewProblem(http.StatusConflict, CodeLimitReached, fmt.Sprintf("An application has at most %d webhooks; delete one first.", webhook.MaxWebhooksPerApp))
	case errors.Is(err, webhook.ErrNotActive):
		return NewProblem(http.StatusConflict, CodeInvalidState, "The webhook is not active; set its status to active first.")
	case errors.Is(err, platform.ErrScope):
		return NewProblem(http.StatusForbidden, CodeForbidden, err.Error())
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return NewProblem(http.StatusServiceUnavailable, CodeInternal, "The request was cancelled.")
	}
	return NewProblem(http.StatusInternalServerError, CodeInternal, "The server failed to process the request.")
}
