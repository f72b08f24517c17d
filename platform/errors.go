package platform

import (
	"errors"

	"svc.dev/svc/id"
)

var (
	// ErrNotFound is returned when a record does not exist (or belongs to another tenant).
	ErrNotFound = id.ErrNotFound
	// ErrEmailTaken is returned by sign-up when an account already uses the email address.
	ErrEmailTaken = errors.New("email address already registered")
	// ErrInvalidCredentials is returned when an email and password do not match an account.
	ErrInvalidCredentials = errors.New("invalid email or password")
	// ErrUnauthenticated is returned when a session token or API key is missing, unknown,
	// expired or revoked.
	ErrUnauthenticated = errors.New("unauthenticated")
	// ErrInvalidCursor is returned when a pagination cursor was altered, or is used with
	// another principal, endpoint or filter than the one it was issued for.
	ErrInvalidCursor = errors.New("invalid cursor")
	// ErrScope is returned when scopes asked for exceed what the application is allowed.
	ErrScope = errors.New("scope exceeds the application's operation classes")
)
