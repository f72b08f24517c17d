package manifest

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"slices"
	"sync"

	"google.golang.org/protobuf/proto"

	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/wire"
)

// HashedFields are the manifest members its hash covers, in canonical order: every member of
// the served manifest except hash.
var HashedFields = allBut(&svcv1.Manifest{}, "hash")

// BundleHashedFields are the bundle members bundleHash covers: all but bundleHash.
var BundleHashedFields = allBut(&svcv1.ManifestBundle{}, "bundleHash")

func allBut(m proto.Message, skip string) []string {
	fds := m.ProtoReflect().Descriptor().Fields()
	var names []string
	for i := range fds.Len() {
		if n := wire.JSONName(fds.Get(i)); n != skip {
			names = append(names, n)
		}
	}
	slices.Sort(names) // ASCII names: byte order is RFC 8785's UTF-16 order
	return names
}

// Hash returns a manifest's hash: the lowercase hex SHA-256 of the RFC 8785 canonical JSON of
// the manifest as served, without its hash member.
func Hash(m *svcv1.Manifest) (string, error) {
	bp := canonBuffers.Get().(*[]byte)
	defer canonBuffers.Put(bp)
	b, start, end, err := canonical((*bp)[:0], m)
	if err != nil {
		return "", fmt.Errorf("canonical manifest: %w", err)
	}
	*bp = b[:0]
	return hashWithout(b, start, end), nil
}

func hashWithout(b []byte, start, end int) string {
	h := sha256.New()
	h.Write(b[:start])
	h.Write(b[end:])
	return hex.EncodeToString(h.Sum(nil))
}

// WriteCanonical writes the canonical JSON that Hash hashes.
func WriteCanonical(w io.Writer, m *svcv1.Manifest) error {
	if err := wire.Canonical(w, m, HashedFields...); err != nil {
		return fmt.Errorf("canonical manifest: %w", err)
	}
	return nil
}

// manifestFields are all the manifest's members in canonical order.
var manifestFields = allBut(&svcv1.Manifest{}, "")

var canonBuffers = sync.Pool{New: func() any { b := make([]byte, 0, 16<<10); return &b }}

// canonical appends the canonical JSON of the whole manifest (hash included) to buf and
// returns it with the span [start, end) of the hash member and the comma before it, so that
// buf[:start]+buf[end:] is the canonical JSON Hash hashes. One encoding serves both the
// manifest's hash check and the bundle's hash.
func canonical(buf []byte, m *svcv1.Manifest) (out []byte, start, end int, err error) {
	c := new(wire.Canon) // no writer: everything stays in the buffer
	c.SetBuffer(buf)
	mr := m.ProtoReflect()
	c.Raw('{')
	for i, name := range manifestFields {
		if i > 0 {
			c.Raw(',')
		}
		if name == "hash" {
			start = len(c.Buffer())
			if i > 0 {
				start-- // the comma before
			}
		}
		c.String(name)
		c.Raw(':')
		c.Field(mr, name)
		if name == "hash" {
			end = len(c.Buffer())
			if i == 0 {
				end++ // the comma after (hash is never first: assetId sorts before it)
			}
		}
	}
	c.Raw('}')
	return c.Buffer(), start, end, c.Close()
}

// Seal sets m's hash. New and Apply seal; call it after changing a manifest any other way.
func Seal(m *svcv1.Manifest) error {
	h, err := Hash(m)
	if err != nil {
		return err
	}
	m.Hash = h
	return nil
}
