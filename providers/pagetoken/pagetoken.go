// Package pagetoken encodes the stateless page tokens of the providers that
// derive a snapshot_hash revision marker from their listing (local folders,
// object stores, the vault): the position to resume after and the running
// SHA-256 state over the (id, version) pairs listed so far, so the last page
// can carry the hash of the whole listing without any server-side state.
package pagetoken

import (
	"crypto/sha256"
	"encoding"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"

	"svc.dev/svc/providers"
)

// Snapshot accumulates a snapshot hash over a listing.
type Snapshot struct {
	h hash.Hash
}

// NewSnapshot starts a snapshot.
func NewSnapshot() *Snapshot { return &Snapshot{h: sha256.New()} }

// Add adds one listed object.
func (s *Snapshot) Add(id, version string) {
	// Length-prefixed so that ("ab","c") and ("a","bc") differ.
	fmt.Fprintf(s.h, "%d:%s%d:%s\n", len(id), id, len(version), version)
}

// Marker returns the snapshot_hash marker of what was added.
func (s *Snapshot) Marker() providers.Marker {
	return providers.Marker{Kind: providers.MarkerSnapshotHash, Value: hex.EncodeToString(s.h.Sum(nil))}
}

type token struct {
	V     int      `json:"v"`
	After []string `json:"a"`
	Hash  []byte   `json:"h"`
}

// Encode returns the token to resume after position after with the
// snapshot's state.
func Encode(after []string, s *Snapshot) (string, error) {
	state, err := s.h.(encoding.BinaryMarshaler).MarshalBinary()
	if err != nil {
		return "", err
	}
	b, err := json.Marshal(token{V: 1, After: after, Hash: state})
	if err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

// Decode parses a token. An empty token starts a listing.
func Decode(t string) (after []string, s *Snapshot, err error) {
	s = NewSnapshot()
	if t == "" {
		return nil, s, nil
	}
	bad := func(why error) ([]string, *Snapshot, error) {
		return nil, nil, fmt.Errorf("page token: %v: %w", why, providers.ErrInvalidArgument)
	}
	b, err := base64.RawURLEncoding.DecodeString(t)
	if err != nil {
		return bad(err)
	}
	var tok token
	if err := json.Unmarshal(b, &tok); err != nil {
		return bad(err)
	}
	if tok.V != 1 || len(tok.After) == 0 {
		return bad(errors.New("unknown token version"))
	}
	if err := s.h.(encoding.BinaryUnmarshaler).UnmarshalBinary(tok.Hash); err != nil {
		return bad(err)
	}
	return tok.After, s, nil
}
