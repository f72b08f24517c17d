package receipt

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	svcv1 "svc.dev/svc/gen/svc/v1"

	"svc.dev/svc/internal/atomicfile"
)

// Alg is the signature algorithm of receipts (signature.alg).
const Alg = "Ed25519"

// KeyFile is the name of the file, in the directory given to OpenKeyring, that holds the
// signing keys.
const KeyFile = "receipt-keys.json"

var b64 = base64.RawURLEncoding

// KeyID returns the kid of an Ed25519 public key: its RFC 7638 JWK thumbprint, the base64url
// SHA-256 of {"crv":"Ed25519","kty":"OKP","x":"<base64url key>"}. A kid derived from the key
// cannot name two keys.
func KeyID(pub ed25519.PublicKey) string {
	sum := sha256.Sum256([]byte(`{"crv":"Ed25519","kty":"OKP","x":"` + b64.EncodeToString(pub) + `"}`))
	return b64.EncodeToString(sum[:])
}

// KeySigner signs with one Ed25519 private key, whose kid is KeyID of its public key.
type KeySigner struct {
	kid  string
	priv ed25519.PrivateKey
}

// NewKeySigner returns a signer for priv.
func NewKeySigner(priv ed25519.PrivateKey) *KeySigner {
	return &KeySigner{kid: KeyID(priv.Public().(ed25519.PublicKey)), priv: priv}
}

// KeyID returns the signer's kid.
func (s *KeySigner) KeyID() string { return s.kid }

// Public returns the signer's public key.
func (s *KeySigner) Public() ed25519.PublicKey { return s.priv.Public().(ed25519.PublicKey) }

// Sign signs the UTF-8 bytes of hash.
func (s *KeySigner) Sign(hash string) (*svcv1.Signature, error) {
	return &svcv1.Signature{Alg: Alg, Kid: s.kid, Sig: b64.EncodeToString(ed25519.Sign(s.priv, []byte(hash)))}, nil
}

// jwk is a public key as the key set publishes it, members in this order.
type jwk struct {
	Kty string `json:"kty"`
	Crv string `json:"crv"`
	X   string `json:"x"`
	Kid string `json:"kid"`
	Use string `json:"use"`
	Alg string `json:"alg"`
}

// KeySet returns the JWK set (RFC 7517, keys as in RFC 8037) that publishes pubs, in the given
// order: {"keys":[{"kty":"OKP","crv":"Ed25519","x":...,"kid":...,"use":"sig","alg":"EdDSA"}]}.
func KeySet(pubs ...ed25519.PublicKey) []byte {
	set := struct {
		Keys []jwk `json:"keys"`
	}{Keys: make([]jwk, len(pubs))}
	for i, p := range pubs {
		set.Keys[i] = jwk{Kty: "OKP", Crv: "Ed25519", X: b64.EncodeToString(p), Kid: KeyID(p), Use: "sig", Alg: "EdDSA"}
	}
	b, _ := json.Marshal(set)
	return b
}

// Keyring holds the receipt signing keys of a deployment: the current key, which signs, and
// every earlier key, which stays published so that old receipts still verify. They are kept in
// KeyFile inside one directory (the data directory; OpenKeyring) or in a KeyStore shared by
// several processes (OpenStoredKeyring). It is safe for concurrent use; only one process
// should open a directory's keyring (the server holds the data directory).
type Keyring struct {
	path string // the key file, or a description of where the KeyStore keeps it

	store      KeyStore      // nil: the key file at path
	activation time.Duration // how long after a rotation a stored keyring's new key starts signing

	mu      sync.RWMutex
	keys    []storedKey // oldest first
	version int64       // the KeyStore's version of keys
	current *KeySigner  // signs until pendAt
	pending *KeySigner  // the newest key, published and signing from pendAt (nil: none)
	pendAt  time.Time
	keySet  []byte
}

// storedKey is one key in KeyFile: a private JWK (RFC 8037 "d" is the 32-byte seed) with its
// creation and retirement times.
type storedKey struct {
	Kty       string     `json:"kty"`
	Crv       string     `json:"crv"`
	X         string     `json:"x"`
	D         string     `json:"d"`
	Kid       string     `json:"kid"`
	CreatedAt time.Time  `json:"created_at"`
	RetiredAt *time.Time `json:"retired_at,omitempty"`
	// NotBefore is when a key made current by a rotation starts signing (absent: at once).
	// Until then it is published and the key before it signs, so every process sharing a
	// KeyStore publishes a key before any of them signs with it.
	NotBefore *time.Time `json:"not_before,omitempty"`
}

type keyFile struct {
	Version int         `json:"version"`
	Current string      `json:"current"`
	Keys    []storedKey `json:"keys"`
}

// OpenKeyring opens the keyring kept in dir, creating dir (0700) and a first key (KeyFile,
// 0600) when there is none. A key file that others can read or write is refused.
func OpenKeyring(dir string) (*Keyring, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("receipt keys: %w", err)
	}
	k := &Keyring{path: filepath.Join(dir, KeyFile)}
	err := k.load()
	if errors.Is(err, fs.ErrNotExist) {
		key, gerr := newStoredKey()
		if gerr != nil {
			return nil, gerr
		}
		kf := keyFile{Version: 1, Current: key.Kid, Keys: []storedKey{key}}
		// Link, not rename: if another process created the file meanwhile, keep its key.
		if err = writeKeyFile(k.path, kf, false); err != nil && !errors.Is(err, fs.ErrExist) {
			return nil, err
		}
		err = k.load()
	}
	if err != nil {
		return nil, err
	}
	return k, nil
}

// Path returns the key file's path.
func (k *Keyring) Path() string { return k.path }

// Sign signs hash with the current key.
func (k *Keyring) Sign(hash string) (*svcv1.Signature, error) {
	return k.signer().Sign(hash)
}

// signer is the key that signs now: the pending key once its time came, else the current one.
func (k *Keyring) signer() *KeySigner {
	k.mu.RLock()
	defer k.mu.RUnlock()
	if k.pending != nil && !time.Now().Before(k.pendAt) {
		return k.pending
	}
	return k.current
}

// Current returns the kid of the key that signs.
func (k *Keyring) Current() string {
	return k.signer().kid
}

// KeySet returns the JWK set to serve at /.well-known/svc-receipts.json: every key, the current
// one first, then the others newest first.
func (k *Keyring) KeySet() []byte {
	k.mu.RLock()
	defer k.mu.RUnlock()
	return slices.Clone(k.keySet)
}

// Rotate makes a new key current and keeps the earlier ones published. The key file is
// replaced atomically; on error nothing changes. It returns the new kid. In a KeyStore, the new
// key is published at once and signs after the keyring's activation delay (OpenStoredKeyring),
// so that every process sharing the store has loaded it (Reload) before a receipt names it;
// a rotation another process stored first is an error wrapping ErrKeysChanged.
func (k *Keyring) Rotate() (string, error) {
	key, err := newStoredKey()
	if err != nil {
		return "", err
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	keys := slices.Clone(k.keys)
	now := key.CreatedAt
	retire := now
	if k.store != nil && k.activation > 0 {
		at := time.Now().UTC().Add(k.activation)
		key.NotBefore, retire = &at, at
	}
	for i := range keys {
		if keys[i].RetiredAt == nil {
			keys[i].RetiredAt = &retire
		}
	}
	keys = append(keys, key)
	kf := keyFile{Version: 1, Current: key.Kid, Keys: keys}
	if k.store != nil {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		v, err := k.storeKeys(ctx, kf, k.version)
		if err != nil {
			return "", err
		}
		k.version = v
	} else if err := writeKeyFile(k.path, kf, true); err != nil {
		return "", err
	}
	return key.Kid, k.set(keys, key.Kid)
}

func newStoredKey() (storedKey, error) {
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return storedKey{}, fmt.Errorf("receipt keys: generate: %w", err)
	}
	return storedKey{Kty: "OKP", Crv: "Ed25519", X: b64.EncodeToString(pub), D: b64.EncodeToString(priv.Seed()),
		Kid: KeyID(pub), CreatedAt: time.Now().UTC().Truncate(time.Second)}, nil
}

func (k *Keyring) load() error {
	f, err := os.Open(k.path)
	if err != nil {
		return err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return fmt.Errorf("receipt keys: %w", err)
	}
	if perm := info.Mode().Perm(); perm&0o077 != 0 {
		return fmt.Errorf("receipt keys: %s has mode %#o; signing keys must be private to their owner (chmod 600)", k.path, perm)
	}
	kf, err := parseKeyFile(f, k.path)
	if err != nil {
		return err
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.set(kf.Keys, kf.Current)
}

// parseKeyFile decodes a key file (from where, for errors).
func parseKeyFile(r io.Reader, where string) (keyFile, error) {
	var kf keyFile
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&kf); err != nil {
		return kf, fmt.Errorf("receipt keys: %s: %w", where, err)
	}
	if kf.Version != 1 {
		return kf, fmt.Errorf("receipt keys: %s: unsupported version %d", where, kf.Version)
	}
	return kf, nil
}

// set installs keys after checking that each private key matches its public key and kid.
func (k *Keyring) set(keys []storedKey, current string) error {
	var cur *KeySigner
	seen := map[string]bool{}
	signers := map[string]*KeySigner{}
	notBefore := map[string]*time.Time{}
	for _, sk := range keys {
		seed, err := b64.DecodeString(sk.D)
		if err != nil || len(seed) != ed25519.SeedSize || sk.Kty != "OKP" || sk.Crv != "Ed25519" {
			return fmt.Errorf("receipt keys: %s: key %q is not an Ed25519 private key", k.path, sk.Kid)
		}
		s := NewKeySigner(ed25519.NewKeyFromSeed(seed))
		if s.kid != sk.Kid || b64.EncodeToString(s.Public()) != sk.X || seen[sk.Kid] {
			return fmt.Errorf("receipt keys: %s: key %q does not match its public key or kid", k.path, sk.Kid)
		}
		seen[sk.Kid] = true
		signers[sk.Kid], notBefore[sk.Kid] = s, sk.NotBefore
		if sk.Kid == current {
			cur = s
		}
	}
	if cur == nil {
		return fmt.Errorf("receipt keys: %s: current key %q is missing", k.path, current)
	}
	pubs := []ed25519.PublicKey{cur.Public()}
	var before *KeySigner // the newest key before the current one
	for i := len(keys) - 1; i >= 0; i-- {
		if keys[i].Kid != current {
			x, _ := b64.DecodeString(keys[i].X)
			pubs = append(pubs, ed25519.PublicKey(x))
			if before == nil {
				before = signers[keys[i].Kid]
			}
		}
	}
	k.pending, k.pendAt = nil, time.Time{}
	if nb := notBefore[current]; nb != nil && before != nil && time.Now().Before(*nb) {
		// Published now, signing from its time: until then the key before it signs.
		k.pending, k.pendAt, cur = cur, *nb, before
	}
	k.keys, k.current, k.keySet = keys, cur, KeySet(pubs...)
	return nil
}

// writeKeyFile writes kf to path atomically (atomicfile): replacing the file (replace) or
// creating it only (fs.ErrExist when path exists).
func writeKeyFile(path string, kf keyFile, replace bool) error {
	data, err := json.MarshalIndent(kf, "", "  ")
	if err != nil {
		return err
	}
	data = append(data, '\n')
	if replace {
		err = atomicfile.Write(path, data, 0o600)
	} else {
		err = atomicfile.Create(path, data, 0o600)
	}
	if err != nil {
		return fmt.Errorf("receipt keys: %w", err)
	}
	return nil
}
