package vault

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
)

// Digest is the SHA-256 of a vault object's content: the address the vault
// stores it under (within a tenant) and the hash every read is verified
// against.
type Digest [sha256.Size]byte

// Sum returns the digest of data.
func Sum(data []byte) Digest { return sha256.Sum256(data) }

// ParseDigest parses 64 hexadecimal digits (either case).
func ParseDigest(s string) (Digest, error) {
	var d Digest
	if len(s) != 2*len(d) {
		return Digest{}, fmt.Errorf("parse digest %q: %d characters, want 64: %w", s, len(s), ErrInvalidArgument)
	}
	if _, err := hex.Decode(d[:], []byte(s)); err != nil {
		return Digest{}, fmt.Errorf("parse digest %q: %w", s, ErrInvalidArgument)
	}
	return d, nil
}

// String returns the digest as 64 lowercase hexadecimal digits.
func (d Digest) String() string { return hex.EncodeToString(d[:]) }

// IsZero reports whether d is the zero value (no digest yet).
func (d Digest) IsZero() bool { return d == Digest{} }

// MarshalText implements encoding.TextMarshaler: lowercase hex, or empty
// for the zero digest.
func (d Digest) MarshalText() ([]byte, error) {
	if d.IsZero() {
		return []byte{}, nil
	}
	return hex.AppendEncode(make([]byte, 0, 2*len(d)), d[:]), nil
}

// UnmarshalText implements encoding.TextUnmarshaler; empty text is the zero
// digest.
func (d *Digest) UnmarshalText(text []byte) error {
	if len(text) == 0 {
		*d = Digest{}
		return nil
	}
	var p Digest
	if len(text) != 2*len(p) {
		return fmt.Errorf("parse digest %q: %d characters, want 64: %w", text, len(text), ErrInvalidArgument)
	}
	if _, err := hex.Decode(p[:], text); err != nil {
		return fmt.Errorf("parse digest %q: %w", text, ErrInvalidArgument)
	}
	*d = p
	return nil
}
