package providers

import (
	"errors"
	"fmt"
)

// Sentinel errors. Providers return them (wrapped with context) and callers
// match them with errors.Is. They survive the plugin boundary.
var (
	// ErrNotFound is returned when the object or source does not exist.
	ErrNotFound = errors.New("not found")
	// ErrVersionMismatch is returned when an object's current version is not
	// the expected one. The concrete error is a *VersionMismatchError.
	ErrVersionMismatch = errors.New("version mismatch")
	// ErrUnsupported is returned when the provider lacks a capability or an
	// object does not support the operation (trashing a message in an mbox).
	ErrUnsupported = errors.New("unsupported")
	// ErrMarkerExpired is returned by Changes when no delta can be computed
	// from the given marker; the caller must list the source again.
	ErrMarkerExpired = errors.New("revision marker expired")
	// ErrInvalidArgument is returned when a request is malformed (a bad page
	// token, an unknown source ref format, a missing config key).
	ErrInvalidArgument = errors.New("invalid argument")
	// ErrAlreadyExists is returned when a write or untrash would replace an
	// existing object.
	ErrAlreadyExists = errors.New("already exists")
	// ErrPermission is returned when the provider refuses access.
	ErrPermission = errors.New("permission denied")
	// ErrReauthRequired is returned when the provider no longer accepts the
	// source's credentials and they cannot be refreshed (a revoked or expired
	// OAuth grant: invalid_grant, or 401 after a refresh): the user must
	// connect the source again. It wraps ErrPermission, so errors.Is(err,
	// ErrPermission) holds for it too.
	ErrReauthRequired = fmt.Errorf("reauth required: %w", ErrPermission)
	// ErrTransient is returned for a failure that may succeed on retry
	// (throttling, a brief outage).
	ErrTransient = errors.New("transient provider failure")
	// ErrInvalidData is returned when content does not match its expected
	// size or SHA-256.
	ErrInvalidData = errors.New("invalid data")
	// ErrTooLarge is returned when an object's content is larger than the
	// caller accepts (FetchRequest.MaxBytes): more than a plan authorized.
	ErrTooLarge = errors.New("content larger than allowed")

	// ErrUnknownProvider is returned by a Registry for a name it does not hold.
	ErrUnknownProvider = errors.New("unknown provider")
	// ErrPluginCrashed is returned for calls that were in flight when a
	// plugin process exited; the host restarts the plugin on the next call.
	ErrPluginCrashed = errors.New("provider plugin crashed")
	// ErrPluginTimeout is returned when a plugin call exceeded its deadline.
	ErrPluginTimeout = errors.New("provider plugin call timed out")
	// ErrInvalidResponse is returned when a plugin's response breaks the
	// protocol's rules (a bad id, a negative size); the response is dropped.
	ErrInvalidResponse = errors.New("invalid provider response")
	// ErrPluginUnavailable is returned when a plugin cannot be started or
	// reached.
	ErrPluginUnavailable = errors.New("provider plugin unavailable")
)

// Error records a failed provider operation.
type Error struct {
	Op       string // "list", "fetch", "trash", ...
	Provider Name
	ObjectID string // when the operation concerned one object
	Err      error
}

func (e *Error) Error() string {
	s := string(e.Provider) + " " + e.Op
	if e.ObjectID != "" {
		s += " " + e.ObjectID
	}
	return s + ": " + e.Err.Error()
}

// Unwrap returns the underlying error.
func (e *Error) Unwrap() error { return e.Err }

// VersionMismatchError is returned when an object's version moved. It
// matches ErrVersionMismatch with errors.Is.
type VersionMismatchError struct {
	ObjectID string
	Expected string
	Actual   string // empty when the provider cannot tell
}

func (e *VersionMismatchError) Error() string {
	return fmt.Sprintf("object %q: version mismatch: expected %q, found %q", e.ObjectID, e.Expected, e.Actual)
}

// Is reports whether target is ErrVersionMismatch.
func (e *VersionMismatchError) Is(target error) bool { return target == ErrVersionMismatch }

// IsRetryable reports whether an operation that failed with err may succeed
// if retried as it is: transient provider failures, plugin crashes (the host
// restarts the plugin) and timeouts.
func IsRetryable(err error) bool {
	return errors.Is(err, ErrTransient) || errors.Is(err, ErrPluginCrashed) || errors.Is(err, ErrPluginTimeout)
}
