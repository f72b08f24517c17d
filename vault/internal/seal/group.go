package seal

import (
	"bytes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
)

// Group seals many small streams under one stream key (version 2, or the
// bound version 4): the key is derived and expanded once for the group, and
// each stream is numbered with its own entry so that no nonce repeats. Every
// stream it seals opens alone (Open, OpenBound, the Readers). A Group is not
// safe for concurrent use.
type Group struct {
	aead    cipher.AEAD
	hdr     [headerSizeGroup]byte // version, salt; the entry is set per stream
	next    uint64
	bind    *Binding // version 4: the tenant (the digest is per entry)
	purpose string
	aad     []byte
}

// ErrGroupFull is returned by Group.Seal after 2^32 streams.
var ErrGroupFull = errors.New("seal: group has sealed its last stream")

// NewGroup starts a group of version 2 streams under key (a data key) and
// purpose, with a fresh random salt.
func NewGroup(key []byte, purpose string) (*Group, error) {
	return newGroup(versionGroup, key, purpose, nil)
}

// NewBoundGroup starts a group of version 4 streams of tenant under key and
// purpose: each stream is bound to the digest SealFor is given.
func NewBoundGroup(key []byte, purpose, tenant string) (*Group, error) {
	return newGroup(versionGroupBound, key, purpose, &Binding{Tenant: tenant})
}

func newGroup(v byte, key []byte, purpose string, b *Binding) (*Group, error) {
	if b != nil {
		if err := validBinding(b, purpose); err != nil {
			return nil, err
		}
	}
	g := &Group{bind: b, purpose: purpose}
	g.hdr[0] = v
	if _, err := rand.Read(g.hdr[1:HeaderSize]); err != nil {
		return nil, err
	}
	a, err := formatAEAD(v, key, g.hdr[1:HeaderSize], purpose)
	if err != nil {
		return nil, err
	}
	g.aead = a
	return g, nil
}

// SealedSize returns the size of the grouped stream of n plaintext bytes.
func (g *Group) SealedSize(n int64) int64 { return SealedSize(n) + entrySize }

// Version returns the format version of the group's streams.
func (g *Group) Version() byte { return g.hdr[0] }

// ad returns the associated data of an entry of the group bound to digest
// (nil in version 2).
func (g *Group) ad(digest [32]byte) []byte {
	if g.bind == nil {
		return nil
	}
	b := Binding{Tenant: g.bind.Tenant, Digest: digest}
	g.aad = b.aad(g.aad[:0], versionGroupBound, 0, g.purpose, true)
	return g.aad
}

// Seal appends the sealed stream of plain to dst, as the next entry of a
// version 2 group.
func (g *Group) Seal(dst, plain []byte) ([]byte, error) {
	if g.bind != nil {
		return nil, errors.New("seal: a bound group seals with SealFor")
	}
	return g.SealFor(dst, plain, [32]byte{})
}

// SealFor appends the sealed stream of plain to dst as the group's next
// entry, bound (version 4) to digest: the SHA-256 of the content plain is, or
// belongs to. A version 2 group ignores digest.
func (g *Group) SealFor(dst, plain []byte, digest [32]byte) ([]byte, error) {
	if g.next > 1<<32-1 {
		return nil, ErrGroupFull
	}
	if uint64(len(plain))/ChunkSize >= maxGroupChunks {
		return nil, errors.New("seal: content too long for a grouped stream")
	}
	entry := uint32(g.next)
	g.next++
	binary.BigEndian.PutUint32(g.hdr[HeaderSize:], entry)
	dst = append(dst, g.hdr[:]...)
	ad := g.ad(digest)
	return sealChunks(dst, plain, g.aead, func(n *[12]byte, counter uint64, last bool) { groupNonce(n, entry, counter, last) }, ad, ad), nil
}

// Open opens a stream of a version 2 group; see OpenFor.
func (g *Group) Open(dst, data []byte) ([]byte, error) { return g.OpenFor(dst, data, [32]byte{}) }

// OpenFor opens a stream this group sealed, bound to digest (version 4; a
// version 2 group ignores it). Its version and salt are checked, so that it
// opens exactly as OpenBound would open it from the data key, appending the
// plaintext to dst, without deriving the key again.
func (g *Group) OpenFor(dst, data []byte, digest [32]byte) ([]byte, error) {
	if len(data) < headerSizeGroup+TagSize {
		return nil, fmt.Errorf("seal: truncated stream: %w", ErrAuth)
	}
	if !bytes.Equal(data[:HeaderSize], g.hdr[:HeaderSize]) {
		return nil, fmt.Errorf("seal: stream not of this group: %w", ErrAuth)
	}
	ad := g.ad(digest)
	return openChunks(dst, data[headerSizeGroup:], g.aead, true, binary.BigEndian.Uint32(data[HeaderSize:]), ad, ad)
}
