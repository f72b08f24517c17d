package platform

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
)

// Envelope wraps and unwraps data keys under a key-encryption key that it keeps and never
// hands out: envelope encryption, as a KMS offers it. The local master key is one
// implementation (LocalEnvelope); a KMS client is another, plugged in where the layer takes
// an Envelope. Implementations must be safe for concurrent use.
type Envelope interface {
	// KeyID names the key-encryption key WrapKey wraps under; a wrapped key records it, so a
	// rotation can tell what still needs re-wrapping. It is not secret.
	KeyID() string
	// WrapKey encrypts a data key, bound to aad (where the data it protects is kept).
	WrapKey(ctx context.Context, dataKey, aad []byte) ([]byte, error)
	// UnwrapKey decrypts a key WrapKey wrapped with the same aad; a wrong key-encryption key
	// or aad is an error wrapping ErrUnwrap.
	UnwrapKey(ctx context.Context, wrapped, aad []byte) ([]byte, error)
}

// ErrUnwrap is returned (wrapped) when a wrapped data key does not open: another key-encryption
// key wrapped it, or it was moved from where it was stored, or it was altered.
var ErrUnwrap = errors.New("the wrapped data key does not open")

// LocalEnvelope is the Envelope of the local master key: its key-encryption key is derived
// from the master key (purpose "envelope-kek") and wraps with AES-256-GCM.
type LocalEnvelope struct {
	kek *Sealer
	id  string
}

// NewLocalEnvelope returns the Envelope of master key master (at least 32 bytes).
func NewLocalEnvelope(master []byte) (*LocalEnvelope, error) {
	keys, err := NewKeyring(master)
	if err != nil {
		return nil, err
	}
	kek := keys.Derive("envelope-kek")
	s, err := NewSealer(kek)
	if err != nil {
		return nil, err
	}
	// The id is a hash of a key derived for naming only: it tells keys apart without
	// revealing anything of the key-encryption key.
	sum := sha256.Sum256(keys.Derive("envelope-kek-id"))
	return &LocalEnvelope{kek: s, id: "local:" + hex.EncodeToString(sum[:8])}, nil
}

// KeyID names the master key ("local:" and 16 hex digits).
func (e *LocalEnvelope) KeyID() string { return e.id }

// WrapKey seals dataKey under the key-encryption key.
func (e *LocalEnvelope) WrapKey(_ context.Context, dataKey, aad []byte) ([]byte, error) {
	return e.kek.Seal(dataKey, aad)
}

// UnwrapKey opens a key WrapKey wrapped.
func (e *LocalEnvelope) UnwrapKey(_ context.Context, wrapped, aad []byte) ([]byte, error) {
	k, err := e.kek.Open(wrapped, aad)
	if err != nil {
		return nil, fmt.Errorf("%w (key-encryption key %s): %v", ErrUnwrap, e.id, err)
	}
	return k, nil
}

// sealedEnvelope is what SealWithEnvelope writes: the data, sealed under a fresh data key,
// beside that key wrapped by the Envelope.
type sealedEnvelope struct {
	Version int    `json:"v"`
	KEK     string `json:"kek"`  // the Envelope's KeyID when it wrapped Key
	Key     []byte `json:"key"`  // the wrapped data key
	Data    []byte `json:"data"` // nonce || AES-256-GCM ciphertext under the data key
}

// SealWithEnvelope encrypts plain under a new random data key and wraps that key with env:
// the output holds both (and the wrapping key's id), and opens with OpenWithEnvelope given the
// same aad. Only the wrapped key ever reaches env (a KMS sees 32 bytes, never the data).
func SealWithEnvelope(ctx context.Context, env Envelope, plain, aad []byte) ([]byte, error) {
	dk := make([]byte, 32)
	if _, err := rand.Read(dk); err != nil {
		return nil, fmt.Errorf("envelope: data key: %w", err)
	}
	s, err := NewSealer(dk)
	if err != nil {
		return nil, err
	}
	data, err := s.Seal(plain, aad)
	if err != nil {
		return nil, fmt.Errorf("envelope: seal: %w", err)
	}
	wrapped, err := env.WrapKey(ctx, dk, aad)
	if err != nil {
		return nil, fmt.Errorf("envelope: wrap the data key: %w", err)
	}
	return json.Marshal(sealedEnvelope{Version: 1, KEK: env.KeyID(), Key: wrapped, Data: data})
}

// EnvelopeKeyID returns the id of the key-encryption key that wrapped sealed's data key.
func EnvelopeKeyID(sealed []byte) (string, error) {
	var se sealedEnvelope
	if err := json.Unmarshal(sealed, &se); err != nil || se.Version != 1 {
		return "", errors.New("envelope: not a sealed envelope")
	}
	return se.KEK, nil
}

// OpenWithEnvelope decrypts what SealWithEnvelope sealed with the same aad, unwrapping its
// data key with env.
func OpenWithEnvelope(ctx context.Context, env Envelope, sealed, aad []byte) ([]byte, error) {
	var se sealedEnvelope
	if err := json.Unmarshal(sealed, &se); err != nil || se.Version != 1 {
		return nil, errors.New("envelope: not a sealed envelope")
	}
	dk, err := env.UnwrapKey(ctx, se.Key, aad)
	if err != nil {
		return nil, fmt.Errorf("envelope: unwrap the data key (wrapped under %s, this key is %s): %w", se.KEK, env.KeyID(), err)
	}
	s, err := NewSealer(dk)
	if err != nil {
		return nil, err
	}
	plain, err := s.Open(se.Data, aad)
	if err != nil {
		return nil, fmt.Errorf("envelope: open: %w", err)
	}
	return plain, nil
}
