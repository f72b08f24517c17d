package platform

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math/big"
)

// NewToken returns a random secret of n base62 characters after prefix. Base62 keeps tokens
// copy-paste and URL safe; 32 characters carry about 190 bits.
func NewToken(prefix string, n int) (string, error) {
	const alphabet = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
	b := make([]byte, n)
	max := big.NewInt(int64(len(alphabet)))
	for i := range b {
		k, err := rand.Int(rand.Reader, max)
		if err != nil {
			return "", fmt.Errorf("random token: %w", err)
		}
		b[i] = alphabet[k.Int64()]
	}
	return prefix + string(b), nil
}

// HashToken is how high-entropy secrets (session tokens, API keys) are stored and looked up:
// the hex SHA-256 of the secret. A slow hash adds nothing for 190-bit random values.
func HashToken(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:])
}

// Keyring derives purpose-bound keys from one master secret, so that the cursor key, the
// encryption key and others never coincide.
type Keyring struct{ master []byte }

// NewKeyring returns a keyring over master, which must be at least 32 random bytes.
func NewKeyring(master []byte) (*Keyring, error) {
	if len(master) < 32 {
		return nil, fmt.Errorf("master key has %d bytes, want at least 32", len(master))
	}
	return &Keyring{master: append([]byte(nil), master...)}, nil
}

// Derive returns a 32-byte key for purpose.
func (k *Keyring) Derive(purpose string) []byte {
	key, err := hkdf.Key(sha256.New, k.master, nil, "svc/"+purpose, 32)
	if err != nil {
		panic("hkdf: " + err.Error()) // only for lengths far beyond 32
	}
	return key
}

// Sealer encrypts small secrets at rest (provider credentials, webhook secrets) with
// AES-256-GCM under a key from the keyring. The associated data binds a sealed value to where
// it is stored, so it cannot be moved to another record.
type Sealer struct{ aead cipher.AEAD }

// NewSealer returns a sealer with a 32-byte key.
func NewSealer(key []byte) (*Sealer, error) {
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("sealer: %w", err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, fmt.Errorf("sealer: %w", err)
	}
	return &Sealer{aead: aead}, nil
}

// Seal encrypts plaintext; the output is nonce || ciphertext.
func (s *Sealer) Seal(plaintext, aad []byte) ([]byte, error) {
	nonce := make([]byte, s.aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return nil, fmt.Errorf("seal: %w", err)
	}
	return s.aead.Seal(nonce, nonce, plaintext, aad), nil
}

// Open decrypts what Seal produced with the same associated data.
func (s *Sealer) Open(sealed, aad []byte) ([]byte, error) {
	n := s.aead.NonceSize()
	if len(sealed) < n {
		return nil, errors.New("open sealed value: too short")
	}
	out, err := s.aead.Open(nil, sealed[:n], sealed[n:], aad)
	if err != nil {
		return nil, fmt.Errorf("open sealed value: %w", err)
	}
	return out, nil
}
