package id

import (
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/oklog/ulid/v2"
)

var (
	mu      sync.Mutex
	entropy = ulid.Monotonic(rand.Reader, 0)
)

// New returns a fresh id with the given prefix (without the underscore): New("pln").
// Ids made by one process are strictly increasing, even within a millisecond.
func New(prefix string) string {
	return NewAt(prefix, time.Now())
}

// NewAt is New with the time part taken from t.
func NewAt(prefix string, t time.Time) string {
	mu.Lock()
	u := ulid.MustNew(ulid.Timestamp(t), entropy)
	mu.Unlock()
	return prefix + "_" + u.String()
}

// Valid reports whether s is a well-formed id with the given prefix.
func Valid(prefix, s string) bool {
	rest, ok := strings.CutPrefix(s, prefix+"_")
	if !ok || len(rest) != ulid.EncodedSize {
		return false
	}
	for i := range len(rest) {
		if !strings.ContainsRune(alphabet, rune(rest[i])) {
			return false
		}
	}
	return true
}

// Prefix returns the prefix of an id ("pln" for "pln_01..."), or "" if it has none.
func Prefix(s string) string {
	p, _, ok := strings.Cut(s, "_")
	if !ok {
		return ""
	}
	return p
}

const alphabet = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"

// Time returns the creation time an id carries (its ULID's timestamp, to the millisecond).
func Time(s string) (time.Time, error) {
	_, rest, _ := strings.Cut(s, "_")
	u, err := ulid.ParseStrict(rest)
	if err != nil {
		return time.Time{}, err
	}
	return ulid.Time(u.Time()), nil
}

// ErrNotFound is returned (wrapped) when no record has the id asked for: a plan, a job, a
// user, a vault object, a customer. It is the one "no such record" of svc's records, shared
// by the storage seam, the platform, billing, the vault and the embedding package, so that a
// caller matches one error whatever layer found the absence. (A provider's "no such object at
// the source", providers.ErrNotFound, and a vault backend's missing file are other facts and
// keep errors of their own.)
var ErrNotFound = errors.New("not found")

// Derive returns the id with the given prefix whose time part is at and whose random part comes
// from key (its SHA-256): the same thing named again gets the same id, as reconciliation needs
// when it recomputes a revenue item or an anomaly from the same evidence.
func Derive(prefix string, at time.Time, key string) string {
	sum := sha256.Sum256([]byte("svc/id/v1\x00" + prefix + "\x00" + key))
	var u ulid.ULID
	if at.Before(time.UnixMilli(0)) || u.SetTime(ulid.Timestamp(at)) != nil {
		copy(u[:6], sum[10:16])
	}
	copy(u[6:], sum[:10])
	return prefix + "_" + u.String()
}
