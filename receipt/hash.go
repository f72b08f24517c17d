package receipt

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"slices"
	"sync"

	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/wire"
)

// HashedFields are the receipt members its hash covers, in canonical (sorted) order: every
// member of the served receipt except hash and signature.
var HashedFields = hashedFields()

func hashedFields() []string {
	fds := (&svcv1.Receipt{}).ProtoReflect().Descriptor().Fields()
	var names []string
	for i := range fds.Len() {
		if n := wire.JSONName(fds.Get(i)); n != "hash" && n != "signature" {
			names = append(names, n)
		}
	}
	slices.Sort(names) // ASCII names: byte order is RFC 8785's UTF-16 order
	return names
}

// Hash returns a receipt's hash: the lowercase hex SHA-256 of the RFC 8785 canonical JSON of
// the receipt as the API serves it, without its hash and signature members.
func Hash(r *svcv1.Receipt) (string, error) {
	h := sha256.New()
	if err := WriteCanonical(h, r); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// WriteCanonical writes the canonical JSON that Hash hashes, in chunks of about 32 KiB (a
// receipt of many objects is not held twice in memory).
func WriteCanonical(w io.Writer, r *svcv1.Receipt) error {
	bp := buffers.Get().(*[]byte)
	c := new(wire.Canon) // no writer: flushed here, so that the buffer can be recycled
	c.SetBuffer((*bp)[:0])
	var werr error
	flush := func(force bool) {
		if b := c.Buffer(); werr == nil && (force || len(b) >= 32<<10) {
			_, werr = w.Write(b)
			c.SetBuffer(b[:0])
		}
	}
	m := r.ProtoReflect()
	c.Raw('{')
	for i, name := range HashedFields {
		if i > 0 {
			c.Raw(',')
		}
		c.String(name)
		c.Raw(':')
		if name != "objects" {
			c.Field(m, name)
			continue
		}
		c.Raw('[')
		for j, o := range r.Objects {
			if j > 0 {
				c.Raw(',')
			}
			c.Message(o.ProtoReflect(), nil)
			flush(false)
		}
		c.Raw(']')
	}
	c.Raw('}')
	err := c.Close()
	flush(true)
	if b := c.Buffer(); cap(b) <= 1<<20 { // do not keep huge buffers
		*bp = b[:0]
		buffers.Put(bp)
	}
	if err != nil {
		return fmt.Errorf("canonical receipt: %w", err)
	}
	return werr
}

var buffers = sync.Pool{New: func() any { b := make([]byte, 0, 8<<10); return &b }}

// Signer signs receipt hashes. A *Keyring signs with its current key; a *KeySigner with one
// fixed key.
type Signer interface {
	// Sign returns the signature over the UTF-8 bytes of hash: alg "Ed25519", the key's kid,
	// and sig, the base64url (unpadded) Ed25519 signature.
	Sign(hash string) (*svcv1.Signature, error)
}

// Sign sets r's hash and signature and returns the receipt's served bytes: its wire JSON,
// which the server stores and serves verbatim.
func Sign(r *svcv1.Receipt, s Signer) ([]byte, error) {
	h, err := Hash(r)
	if err != nil {
		return nil, err
	}
	sig, err := s.Sign(h)
	if err != nil {
		return nil, fmt.Errorf("sign receipt: %w", err)
	}
	r.Hash, r.Signature = h, sig
	b, err := wire.Marshal(r)
	if err != nil {
		return nil, fmt.Errorf("encode receipt: %w", err)
	}
	return b, nil
}

// Issue builds the receipt of an execution (Build), hashes and signs it (Sign), and returns it
// with its served bytes.
func Issue(in *Input, s Signer) (*svcv1.Receipt, []byte, error) {
	r, err := Build(in)
	if err != nil {
		return nil, nil, err
	}
	b, err := Sign(r, s)
	if err != nil {
		return nil, nil, err
	}
	return r, b, nil
}
