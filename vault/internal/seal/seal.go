// Package seal encrypts the vault's content at rest: a chunked AES-256-GCM
// stream (the STREAM construction of Hoang, Reyhanitabar, Rogaway and Vizár,
// as in age and Tink), so that memory stays constant in the content's size,
// and the wrapping of per-tenant data keys under a key-encryption key.
//
// A sealed stream is
//
//	version (1 byte, 1) | salt (32 bytes) | chunk 0 | chunk 1 | ... | last chunk
//
// Every chunk holds ChunkSize bytes of plaintext (the last one 0 to ChunkSize)
// and its 16-byte GCM tag. The stream key is HKDF-SHA256(data key, salt,
// "svc vault stream v1 "+purpose), fresh for every stream because the salt is
// random, so nonces never repeat under a key: the nonce of chunk i is i as an
// 11-byte big-endian counter followed by 1 on the last chunk and 0 on the
// others. Reordering, dropping or truncating chunks therefore fails
// authentication, and every chunk is authenticated before its plaintext is
// returned.
//
// Small content sealed in groups (the vault's pack entries) uses version 2,
// which shares one stream key among the streams of a group, so that the key is
// derived and expanded once per group instead of once per stream:
//
//	version (1 byte, 2) | salt (32 bytes) | entry (4 bytes) | chunk 0 | ... | last chunk
//
// The key is derived from the salt exactly as in version 1; the streams of a
// group share the salt and number themselves with distinct entries, and the
// nonce of chunk i is the entry (4 bytes), i (7 bytes, big-endian) and the
// last-chunk flag. Nonces therefore never repeat under a key either. A version 2
// stream is self-contained: it opens alone, with nothing but the data key.
// Readers open every version.
//
// Versions 1 and 2 seal chunks with no associated data, so a stream of one
// content, moved under the name of another content of the same tenant, opens;
// only a digest check after the last chunk tells them apart. And both derive
// their key under the same label, with the version byte outside what is
// authenticated. Versions 3 and 4 (what the vault writes now) bind every chunk
// to what it belongs to: the associated data of each chunk is
//
//	"svc vault chunk v3\x00" | version | flags | tenant (2-byte length, bytes) |
//	purpose (1-byte length, bytes) | 0, or 1 and the content's SHA-256 (32)
//
// and each format derives its key under its own label ("svc vault stream v3 "
// and "svc vault group v4 " before the purpose). Version 3 is a single stream:
//
//	version (1 byte, 3) | flags (1 byte) | salt (32 bytes) | chunk 0 | ... | last chunk
//
// With flags 0 every chunk is bound to the digest (it was known before
// sealing); with FlagDigestAtEnd (content streamed and hashed while it is
// sealed) only the last chunk is, sealed once the digest is known. Version 4
// is version 2's grouped layout with every chunk bound to its entry's digest
// (pack entries are hashed before they are sealed). A reader given the binding
// (NewBoundReader, OpenBound, Group.OpenFor) therefore refuses, at the first
// bound chunk, a stream that belongs to another content, tenant or purpose, or
// whose version or flags were changed.
package seal

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
)

const (
	// ChunkSize is the plaintext size of every chunk but the last.
	ChunkSize = 64 << 10
	// TagSize is the GCM tag added to every chunk.
	TagSize = 16
	// HeaderSize is the size of the version byte and the salt.
	HeaderSize = 1 + saltSize
	// KeySize is the size of data keys and key-encryption keys.
	KeySize = 32

	version  = 1
	saltSize = 32
	sealed   = ChunkSize + TagSize

	// version 2: grouped streams (Group).
	versionGroup    = 2
	entrySize       = 4
	headerSizeGroup = HeaderSize + entrySize
	maxGroupChunks  = 1 << 56 // the chunk counter has 7 bytes in version 2

	// version 3: a stream bound to tenant, purpose and digest.
	versionBound    = 3
	headerSizeBound = 2 + saltSize
	// version 4: grouped streams bound like version 3.
	versionGroupBound = 4
)

// Versions of the sealed formats, as a Placement records the one it was
// written in (readers may require it).
const (
	Version1      = version
	Version2      = versionGroup
	VersionBound  = versionBound
	VersionGroup4 = versionGroupBound
)

// FlagDigestAtEnd marks a version 3 stream whose digest binds only its last
// chunk (the content was hashed while it was sealed).
const FlagDigestAtEnd = 1

// Binding is what a stream belongs to, authenticated with every chunk of
// versions 3 and 4.
type Binding struct {
	// Tenant owns the stream (its data key is the tenant's already; the
	// name binds it explicitly).
	Tenant string
	// Digest is the SHA-256 of the content the stream is, or (for an
	// extracted text) was taken from.
	Digest [32]byte
}

// aad returns the associated data of a version 3 or 4 chunk; withDigest
// binds b.Digest too.
func (b *Binding) aad(dst []byte, version, flags byte, purpose string, withDigest bool) []byte {
	dst = append(dst, "svc vault chunk v3\x00"...)
	dst = append(dst, version, flags)
	dst = binary.BigEndian.AppendUint16(dst, uint16(len(b.Tenant)))
	dst = append(dst, b.Tenant...)
	dst = append(dst, byte(len(purpose)))
	dst = append(dst, purpose...)
	if !withDigest {
		return append(dst, 0)
	}
	dst = append(dst, 1)
	return append(dst, b.Digest[:]...)
}

func validBinding(b *Binding, purpose string) error {
	if len(b.Tenant) > 0xffff || len(purpose) > 0xff {
		return errors.New("seal: tenant or purpose too long to bind")
	}
	return nil
}

// ErrAuth is returned when sealed data fails authentication: it was
// changed, truncated, reordered, or sealed under another key.
var ErrAuth = errors.New("sealed data failed authentication")

// SealedSize returns the size of the sealed stream of n plaintext bytes.
func SealedSize(n int64) int64 {
	chunks := n/ChunkSize + 1
	if n > 0 && n%ChunkSize == 0 {
		chunks = n / ChunkSize
	}
	return HeaderSize + n + chunks*TagSize
}

// SealedSizeBound returns the size of the version 3 stream of n plaintext
// bytes (one byte more than version 1: the flags).
func SealedSizeBound(n int64) int64 { return SealedSize(n) + 1 }

// label is the HKDF label of a format's stream keys: versions 1 and 2 share
// one (as they were written), every later format has its own.
func label(v byte, purpose string) string {
	switch v {
	case versionBound:
		return "svc vault stream v3 " + purpose
	case versionGroupBound:
		return "svc vault group v4 " + purpose
	}
	return "svc vault stream v1 " + purpose
}

func streamAEAD(key []byte, salt []byte, purpose string) (cipher.AEAD, error) {
	return formatAEAD(version, key, salt, purpose)
}

func formatAEAD(v byte, key []byte, salt []byte, purpose string) (cipher.AEAD, error) {
	if len(key) != KeySize {
		return nil, fmt.Errorf("seal: key of %d bytes, want %d", len(key), KeySize)
	}
	k, err := hkdf.Key(sha256.New, key, salt, label(v, purpose), KeySize)
	if err != nil {
		return nil, err
	}
	b, err := aes.NewCipher(k)
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(b)
}

func nonce(n *[12]byte, counter uint64, last bool) {
	*n = [12]byte{}
	binary.BigEndian.PutUint64(n[3:11], counter)
	if last {
		n[11] = 1
	}
}

// groupNonce is the nonce of chunk counter of a version 2 stream: the entry,
// then the counter in 7 bytes, then the last-chunk flag.
func groupNonce(n *[12]byte, entry uint32, counter uint64, last bool) {
	var c [8]byte
	binary.BigEndian.PutUint64(c[:], counter)
	binary.BigEndian.PutUint32(n[0:4], entry)
	copy(n[4:11], c[1:])
	n[11] = 0
	if last {
		n[11] = 1
	}
}
