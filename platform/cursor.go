package platform

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"strings"
)

// Cursors seals pagination positions into opaque tokens. A token is authenticated with an
// HMAC over its position and its binding (principal, endpoint and filters), so it cannot be
// altered or used in another context.
type Cursors struct{ key []byte }

// NewCursors returns a cursor sealer with the given 32-byte key.
func NewCursors(key []byte) *Cursors { return &Cursors{key: append([]byte(nil), key...)} }

const cursorVersion = "c1"

// Seal returns the token for position after, bound to binding.
func (c *Cursors) Seal(binding, after string) string {
	payload := cursorVersion + "." + after
	return base64.RawURLEncoding.EncodeToString([]byte(payload)) + "." +
		base64.RawURLEncoding.EncodeToString(c.mac(binding, payload))
}

// Open returns the position in token, or ErrInvalidCursor when the token is malformed,
// altered, or was sealed with another binding.
func (c *Cursors) Open(binding, token string) (string, error) {
	p64, m64, ok := strings.Cut(token, ".")
	if !ok {
		return "", ErrInvalidCursor
	}
	payload, err1 := base64.RawURLEncoding.DecodeString(p64)
	mac, err2 := base64.RawURLEncoding.DecodeString(m64)
	if err1 != nil || err2 != nil || !hmac.Equal(mac, c.mac(binding, string(payload))) {
		return "", ErrInvalidCursor
	}
	after, ok := strings.CutPrefix(string(payload), cursorVersion+".")
	if !ok {
		return "", ErrInvalidCursor
	}
	return after, nil
}

func (c *Cursors) mac(binding, payload string) []byte {
	h := hmac.New(sha256.New, c.key)
	h.Write([]byte(binding))
	h.Write([]byte{0})
	h.Write([]byte(payload))
	return h.Sum(nil)[:16]
}
