package seal

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
)

// ErrUnknownKEK is returned when a wrapped key names a key-encryption key
// that was not supplied.
var ErrUnknownKEK = errors.New("wrapped key needs a key-encryption key that was not supplied")

const wrapVersion = 1

// KEKID returns the 8-byte identifier recorded with keys wrapped under kek,
// so that an unwrap can pick the right key among current and previous ones.
func KEKID(kek []byte) [8]byte {
	h := sha256.Sum256(append([]byte("svc vault kek id v1\x00"), kek...))
	var id [8]byte
	copy(id[:], h[:8])
	return id
}

func kekAEAD(kek []byte) (cipher.AEAD, error) {
	if len(kek) != KeySize {
		return nil, fmt.Errorf("seal: key-encryption key of %d bytes, want %d", len(kek), KeySize)
	}
	b, err := aes.NewCipher(kek)
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(b)
}

// NewKey returns a fresh random data key.
func NewKey() ([]byte, error) {
	k := make([]byte, KeySize)
	_, err := rand.Read(k)
	return k, err
}

// Wrap encrypts a data key under kek, bound to owner (the tenant): a
// wrapped key moved to another owner does not unwrap.
//
//	version (1) | KEK id (8) | nonce (12) | AES-256-GCM(key) with the tag (48)
func Wrap(kek, key []byte, owner string) ([]byte, error) {
	a, err := kekAEAD(kek)
	if err != nil {
		return nil, err
	}
	id := KEKID(kek)
	out := make([]byte, 1+8+12, 1+8+12+len(key)+TagSize)
	out[0] = wrapVersion
	copy(out[1:9], id[:])
	if _, err := rand.Read(out[9:21]); err != nil {
		return nil, err
	}
	return a.Seal(out, out[9:21], key, wrapAAD(out[:9], owner)), nil
}

func wrapAAD(prefix []byte, owner string) []byte {
	return append(append([]byte("svc vault data key v1\x00"), prefix...), owner...)
}

// Unwrap decrypts a key wrapped by Wrap for owner with whichever of keks
// it was wrapped under.
func Unwrap(keks [][]byte, wrapped []byte, owner string) ([]byte, error) {
	if len(wrapped) != 1+8+12+KeySize+TagSize || wrapped[0] != wrapVersion {
		return nil, fmt.Errorf("seal: malformed wrapped key: %w", ErrAuth)
	}
	for _, kek := range keks {
		id := KEKID(kek)
		if string(id[:]) != string(wrapped[1:9]) {
			continue
		}
		a, err := kekAEAD(kek)
		if err != nil {
			return nil, err
		}
		key, err := a.Open(nil, wrapped[9:21], wrapped[21:], wrapAAD(wrapped[:9], owner))
		if err != nil {
			return nil, fmt.Errorf("seal: unwrap data key: %w", ErrAuth)
		}
		return key, nil
	}
	return nil, ErrUnknownKEK
}

// WrappedKEKID returns the id of the key-encryption key a wrapped key names,
// and whether wrapped has the form Wrap gives.
func WrappedKEKID(wrapped []byte) ([8]byte, bool) {
	var id [8]byte
	if len(wrapped) != 1+8+12+KeySize+TagSize || wrapped[0] != wrapVersion {
		return id, false
	}
	copy(id[:], wrapped[1:9])
	return id, true
}
