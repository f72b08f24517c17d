package vault

import (
	"errors"
	"fmt"

	"svc.dev/svc/id"
)

// Sentinel errors. Errors from the vault wrap them with context; match them
// with errors.Is.
var (
	// ErrInvalidData is returned when stored or supplied content does not
	// match what it must be: its digest, its size, the expected SHA-256 or
	// size of a Put, or it fails authentication on decryption. Reading
	// content that is lost (its file is gone) is also ErrInvalidData.
	ErrInvalidData = errors.New("invalid data")
	// ErrNotFound is returned when a vault object (or a blob) does not
	// exist in the tenant; an id of another tenant is not found.
	ErrNotFound = id.ErrNotFound
	// ErrInvalidState is returned when an object's state does not allow an
	// operation (reading a deleted object, putting into a committed id
	// different content). The concrete error is often a *TransitionError.
	ErrInvalidState = errors.New("invalid vault object state")
	// ErrInvalidArgument is returned for a malformed request: an empty
	// tenant, an id that is not a vlt_ id, a malformed digest.
	ErrInvalidArgument = errors.New("invalid argument")
	// ErrKeyUnavailable is returned when a tenant's data key cannot be
	// unwrapped: it was wrapped under a key-encryption key that was not
	// supplied, or it was tampered with.
	ErrKeyUnavailable = errors.New("tenant data key unavailable")
	// ErrClosed is returned by a vault after Close.
	ErrClosed = errors.New("vault closed")
)

// TransitionError is returned when a vault object cannot move from one
// state to another. It matches ErrInvalidState.
type TransitionError struct {
	ID       string
	From, To State
}

// Error implements error.
func (e *TransitionError) Error() string {
	return fmt.Sprintf("vault object %s: a %s object cannot become %s", e.ID, e.From, e.To)
}

// Is makes a TransitionError match ErrInvalidState.
func (e *TransitionError) Is(target error) bool { return target == ErrInvalidState }
