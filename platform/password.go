package platform

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"fmt"
	"strings"

	"golang.org/x/crypto/argon2"
)

// PasswordParams are argon2id cost parameters. The zero value is not usable; see
// DefaultPasswordParams.
type PasswordParams struct {
	Memory  uint32 // KiB
	Time    uint32
	Threads uint8
}

// DefaultPasswordParams follow the OWASP password storage guidance for argon2id
// (19 MiB, 2 passes, 1 lane).
var DefaultPasswordParams = PasswordParams{Memory: 19 * 1024, Time: 2, Threads: 1}

// HashPassword returns an argon2id hash of password in the PHC string format
// ($argon2id$v=19$m=...,t=...,p=...$salt$hash), with a fresh random salt.
func HashPassword(password string, p PasswordParams) (string, error) {
	salt := make([]byte, 16)
	if _, err := rand.Read(salt); err != nil {
		return "", fmt.Errorf("password salt: %w", err)
	}
	sum := argon2.IDKey([]byte(password), salt, p.Time, p.Memory, p.Threads, 32)
	enc := base64.RawStdEncoding
	return fmt.Sprintf("$argon2id$v=%d$m=%d,t=%d,p=%d$%s$%s",
		argon2.Version, p.Memory, p.Time, p.Threads, enc.EncodeToString(salt), enc.EncodeToString(sum)), nil
}

// CheckPassword reports whether password matches a hash made by HashPassword, in constant
// time with respect to the hash.
func CheckPassword(hash, password string) bool {
	parts := strings.Split(hash, "$")
	if len(parts) != 6 || parts[1] != "argon2id" {
		return false
	}
	var version int
	var p PasswordParams
	if _, err := fmt.Sscanf(parts[2], "v=%d", &version); err != nil || version != argon2.Version {
		return false
	}
	if _, err := fmt.Sscanf(parts[3], "m=%d,t=%d,p=%d", &p.Memory, &p.Time, &p.Threads); err != nil {
		return false
	}
	enc := base64.RawStdEncoding
	salt, err1 := enc.DecodeString(parts[4])
	want, err2 := enc.DecodeString(parts[5])
	if err1 != nil || err2 != nil || len(want) == 0 {
		return false
	}
	got := argon2.IDKey([]byte(password), salt, p.Time, p.Memory, p.Threads, uint32(len(want)))
	return subtle.ConstantTimeCompare(got, want) == 1
}
