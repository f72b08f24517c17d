package platform

import (
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
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
