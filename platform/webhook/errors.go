package webhook

import "errors"

// Errors of the engine. Missing webhooks and deliveries are platform.ErrNotFound.
var (
	// ErrInvalid is returned (through a *FieldError) when a webhook's URL, event types, mode
	// or status is not acceptable.
	ErrInvalid = errors.New("invalid webhook")
	// ErrInvalidURL is returned (wrapped) when a URL is malformed, not http(s), carries
	// credentials or a fragment, or its host does not resolve.
	ErrInvalidURL = errors.New("invalid webhook URL")
	// ErrTooManyWebhooks is returned when an application already has MaxWebhooksPerApp
	// webhooks.
	ErrTooManyWebhooks = errors.New("too many webhooks for the application")
	// ErrNotActive is returned when sending a test event to a webhook that is paused or
	// disabled.
	ErrNotActive = errors.New("webhook is not active")
	// ErrModeMismatch is returned by Publish when an event's svcsimulated flag does not match
	// the mode it is published in (test-mode events must carry svcsimulated: true, live ones
	// must not).
	ErrModeMismatch = errors.New("event svcsimulated does not match the mode")
	// ErrInvalidEvent is returned by Publish for an envelope that is not a CloudEvents 1.0
	// event with an evt_ id and a type.
	ErrInvalidEvent = errors.New("invalid event envelope")
)

// FieldError is a validation failure of one request field ("url", "event_types", "mode",
// "status"). It matches ErrInvalid with errors.Is and unwraps to the cause (ErrInvalidURL,
// ErrBlockedAddress, event.ErrUnknownType, ...).
type FieldError struct {
	Field string
	Err   error
}

func (e *FieldError) Error() string { return "invalid webhook " + e.Field + ": " + e.Err.Error() }

// Unwrap returns the cause.
func (e *FieldError) Unwrap() error { return e.Err }

// Is makes every FieldError match ErrInvalid.
func (e *FieldError) Is(target error) bool { return target == ErrInvalid }
