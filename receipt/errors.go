package receipt

import "errors"

// Errors of Build and Issue.
var (
	// ErrInvalidInput is returned when an Input cannot make a valid receipt (a missing id, an
	// unknown status, a preserved object without a vault copy...). The error names the field.
	ErrInvalidInput = errors.New("invalid receipt input")
)

// Errors of Verify. Every error Verify returns is a *VerifyError that wraps one of these, so
// callers match with errors.Is and show Error() to people.
var (
	// ErrMalformedReceipt is returned when the receipt is not a JSON object (or has duplicate
	// members), or its hash or signature members are missing or have the wrong shape.
	ErrMalformedReceipt = errors.New("malformed receipt")
	// ErrUnsupportedVersion is returned when receiptVersion is not one this package knows.
	ErrUnsupportedVersion = errors.New("unsupported receipt version")
	// ErrUnsupportedAlgorithm is returned when signature.alg is not "Ed25519", or the key the
	// kid names is not an Ed25519 key (kty OKP, crv Ed25519).
	ErrUnsupportedAlgorithm = errors.New("unsupported signature algorithm")
	// ErrHashMismatch is returned when the receipt's content does not hash to its hash member:
	// the receipt was changed after it was signed.
	ErrHashMismatch = errors.New("hash mismatch")
	// ErrMalformedKeySet is returned when the key set is not a JWK set.
	ErrMalformedKeySet = errors.New("malformed key set")
	// ErrUnknownKey is returned when the key set has no key with the signature's kid.
	ErrUnknownKey = errors.New("unknown key id")
	// ErrBadSignature is returned when the signature does not verify over the hash with the
	// kid's key: the hash was changed, or the receipt was not signed by that key.
	ErrBadSignature = errors.New("bad signature")
)

// VerifyError is the error Verify returns: which check failed (Err, one of the sentinels
// above) and a detail for people.
type VerifyError struct {
	Err    error
	Detail string
}

func (e *VerifyError) Error() string {
	if e.Detail == "" {
		return e.Err.Error()
	}
	return e.Err.Error() + ": " + e.Detail
}

// Unwrap returns the sentinel.
func (e *VerifyError) Unwrap() error { return e.Err }

func verifyErr(err error, detail string) error { return &VerifyError{Err: err, Detail: detail} }
