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
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
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

// Writer seals what is written to it into an underlying writer. Close
// writes the last chunk; a stream that was not closed does not open.
type Writer struct {
	w       io.Writer
	aead    cipher.AEAD
	buf     []byte // plaintext of the current chunk
	out     []byte
	counter uint64
	closed  bool
	err     error
	// Version 3: the associated data of every chunk but the last, and of
	// the last (made by CloseDigest when the digest binds it only).
	aad, aadLast []byte
	atEnd        bool
	bind         Binding
	purpose      string
}

// NewBoundWriter starts a version 3 stream bound to b and purpose. With
// digestKnown, b.Digest binds every chunk and Close ends the stream;
// otherwise (the content is hashed while it is sealed) only the last chunk
// is bound to the digest, which CloseDigest gives.
func NewBoundWriter(w io.Writer, key []byte, purpose string, b Binding, digestKnown bool) (*Writer, error) {
	if err := validBinding(&b, purpose); err != nil {
		return nil, err
	}
	var hdr [headerSizeBound]byte
	hdr[0] = versionBound
	if !digestKnown {
		hdr[1] = FlagDigestAtEnd
	}
	if _, err := rand.Read(hdr[2:]); err != nil {
		return nil, err
	}
	a, err := formatAEAD(versionBound, key, hdr[2:], purpose)
	if err != nil {
		return nil, err
	}
	if _, err := w.Write(hdr[:]); err != nil {
		return nil, err
	}
	s := &Writer{w: w, aead: a, buf: make([]byte, 0, ChunkSize), out: make([]byte, 0, sealed), bind: b, purpose: purpose}
	s.aad = b.aad(nil, versionBound, hdr[1], purpose, digestKnown)
	if digestKnown {
		s.aadLast = s.aad
	} else {
		s.atEnd = true
	}
	return s, nil
}

// NewWriter starts a sealed stream under key (a data key of KeySize
// bytes); purpose separates the keys of different kinds of streams.
func NewWriter(w io.Writer, key []byte, purpose string) (*Writer, error) {
	var hdr [HeaderSize]byte
	hdr[0] = version
	if _, err := rand.Read(hdr[1:]); err != nil {
		return nil, err
	}
	a, err := streamAEAD(key, hdr[1:], purpose)
	if err != nil {
		return nil, err
	}
	if _, err := w.Write(hdr[:]); err != nil {
		return nil, err
	}
	return &Writer{w: w, aead: a, buf: make([]byte, 0, ChunkSize), out: make([]byte, 0, sealed)}, nil
}

func (s *Writer) flush(last bool) error {
	var n [12]byte
	nonce(&n, s.counter, last)
	s.counter++
	aad := s.aad
	if last {
		aad = s.aadLast
	}
	s.out = s.aead.Seal(s.out[:0], n[:], s.buf, aad)
	s.buf = s.buf[:0]
	_, err := s.w.Write(s.out)
	return err
}

// Write seals p. A chunk is only sealed once the next byte arrives (or at
// Close), so that the last chunk can be marked.
func (s *Writer) Write(p []byte) (int, error) {
	if s.err != nil {
		return 0, s.err
	}
	if s.closed {
		return 0, errors.New("seal: write after close")
	}
	total := len(p)
	for len(p) > 0 {
		if len(s.buf) == ChunkSize {
			if s.err = s.flush(false); s.err != nil {
				return total - len(p), s.err
			}
		}
		if len(s.buf) == 0 && len(p) > ChunkSize {
			// A whole chunk with bytes after it (so not the last): seal
			// it from p, without copying it first.
			var n [12]byte
			nonce(&n, s.counter, false)
			s.counter++
			s.out = s.aead.Seal(s.out[:0], n[:], p[:ChunkSize], s.aad)
			if _, s.err = s.w.Write(s.out); s.err != nil {
				return total - len(p), s.err
			}
			p = p[ChunkSize:]
			continue
		}
		n := copy(s.buf[len(s.buf):ChunkSize], p)
		s.buf = s.buf[:len(s.buf)+n]
		p = p[n:]
	}
	return total, nil
}

// CloseDigest seals the last chunk of a stream whose digest was not known
// when it started, bound to d (the SHA-256 of everything written). On other
// streams it is Close.
func (s *Writer) CloseDigest(d [32]byte) error {
	if s.atEnd && !s.closed {
		b := s.bind
		b.Digest = d
		s.aadLast = b.aad(nil, versionBound, FlagDigestAtEnd, s.purpose, true)
		s.atEnd = false
	}
	return s.Close()
}

// Close seals the last chunk. It does not close the underlying writer. A
// stream started without its digest must end with CloseDigest.
func (s *Writer) Close() error {
	if s.err != nil {
		return s.err
	}
	if s.atEnd && !s.closed {
		return errors.New("seal: the stream's digest binds its last chunk: close it with CloseDigest")
	}
	if s.closed {
		return nil
	}
	s.closed = true
	s.err = s.flush(true)
	return s.err
}

// Reader opens a sealed stream. Read returns only authenticated plaintext;
// any failure to authenticate is an error wrapping ErrAuth.
type Reader struct {
	r       io.Reader
	key     []byte
	purpose string
	aead    cipher.AEAD
	in      []byte // sealed bytes read ahead; holds up to one chunk plus one byte
	own     []byte // the plaintext buffer of Read
	plain   []byte // the current chunk's plaintext
	pos     int
	counter uint64
	grouped bool   // a version 2 or 4 stream
	entry   uint32 // its entry
	done    bool
	err     error
	// bind, when set, is what a version 3 or 4 stream must be bound to;
	// require, when not 0, the only version accepted.
	bind    *Binding
	require byte
	aad     []byte // associated data of every chunk but the last
	aadLast []byte // of the last chunk
	bound   bool   // every chunk is bound to bind.Digest
}

// nonce sets n to the nonce of the current chunk.
func (s *Reader) nonce(n *[12]byte, last bool) {
	if s.grouped {
		groupNonce(n, s.entry, s.counter, last)
	} else {
		nonce(n, s.counter, last)
	}
}

// NewReader opens a sealed stream of version 1 or 2 from r under key and
// purpose (a bound stream, version 3 or 4, needs NewBoundReader). The header
// is read on the first Read.
func NewReader(r io.Reader, key []byte, purpose string) *Reader {
	return &Reader{r: r, key: key, purpose: purpose}
}

// NewBoundReader opens a sealed stream from r under key and purpose: a
// version 3 or 4 stream must be bound to b (or fails authentication at its
// first bound chunk); versions 1 and 2 open as with NewReader. require, when
// not 0, is the only version accepted (a copy recorded as written in version
// 3 cannot be replaced by an older, unbound stream).
func NewBoundReader(r io.Reader, key []byte, purpose string, b Binding, require byte) *Reader {
	return &Reader{r: r, key: key, purpose: purpose, bind: &b, require: require}
}

// Bound reports whether every chunk of the stream is authenticated together
// with the binding's digest (version 3 without FlagDigestAtEnd, version 4):
// then what was read so far is known to belong to that content, before the
// end. It is false before the first Read.
func (s *Reader) Bound() bool { return s.bound }

// header is a parsed stream header.
type header struct {
	version, flags byte
	salt           []byte
	entry          uint32
	size           int
}

// parseHeader parses the header at the start of data, or reports how many
// bytes it needs (need > len(data)).
func parseHeader(data []byte) (h header, need int, err error) {
	if len(data) < 1 {
		return h, 1, nil
	}
	h.version = data[0]
	switch h.version {
	case version:
		h.size = HeaderSize
	case versionGroup, versionGroupBound:
		h.size = headerSizeGroup
	case versionBound:
		h.size = headerSizeBound
	default:
		return h, 0, fmt.Errorf("seal: unknown version %d: %w", h.version, ErrAuth)
	}
	if len(data) < h.size {
		return h, h.size, nil
	}
	switch h.version {
	case versionBound:
		h.flags, h.salt = data[1], data[2:h.size]
		if h.flags&^FlagDigestAtEnd != 0 {
			return h, 0, fmt.Errorf("seal: unknown flags %#x: %w", h.flags, ErrAuth)
		}
	default:
		h.salt = data[1:HeaderSize]
	}
	if h.version == versionGroup || h.version == versionGroupBound {
		h.entry = binary.BigEndian.Uint32(data[HeaderSize:])
	}
	return h, h.size, nil
}

// keys derives a stream's key and, for bound versions, its associated data
// (nil for versions 1 and 2). bound reports whether the digest binds every
// chunk.
func (h *header) keys(key []byte, purpose string, b *Binding, require byte) (a cipher.AEAD, aad, aadLast []byte, bound bool, err error) {
	if require != 0 && h.version != require {
		return nil, nil, nil, false, fmt.Errorf("seal: stream of version %d where version %d was written: %w", h.version, require, ErrAuth)
	}
	if h.version == versionBound || h.version == versionGroupBound {
		if b == nil {
			return nil, nil, nil, false, fmt.Errorf("seal: version %d stream opened without its binding: %w", h.version, ErrAuth)
		}
		if err := validBinding(b, purpose); err != nil {
			return nil, nil, nil, false, err
		}
		atEnd := h.flags&FlagDigestAtEnd != 0
		aadLast = b.aad(nil, h.version, h.flags, purpose, true)
		aad = aadLast
		if atEnd {
			aad = b.aad(nil, h.version, h.flags, purpose, false)
		}
		bound = !atEnd
	}
	a, err = formatAEAD(h.version, key, h.salt, purpose)
	return a, aad, aadLast, bound, err
}

func (s *Reader) start() error {
	var buf [headerSizeBound + entrySize]byte
	have := 0
	for {
		h, need, err := parseHeader(buf[:have])
		if err != nil {
			return err
		}
		if need <= have {
			s.grouped = h.version == versionGroup || h.version == versionGroupBound
			s.entry = h.entry
			a, aad, aadLast, bound, err := h.keys(s.key, s.purpose, s.bind, s.require)
			if err != nil {
				return err
			}
			s.aead, s.aad, s.aadLast, s.bound = a, aad, aadLast, bound
			break
		}
		if _, err := io.ReadFull(s.r, buf[have:need]); err != nil {
			if err == io.EOF || err == io.ErrUnexpectedEOF {
				return fmt.Errorf("seal: truncated header: %w", ErrAuth)
			}
			return err
		}
		have = need
	}
	s.in = make([]byte, 0, sealed+1)
	s.own = make([]byte, 0, ChunkSize)
	return nil
}

// next reads and opens the next chunk into s.plain.
func (s *Reader) next() error { return s.nextInto(s.own[:0]) }

// nextInto reads and opens the next chunk, appending its plaintext to dst
// (which must have room for a chunk, so that it is not reallocated), and
// makes that the current plaintext.
func (s *Reader) nextInto(dst []byte) error {
	// Fill s.in to one sealed chunk plus one byte: the extra byte tells
	// whether this chunk is the last.
	for len(s.in) < sealed+1 {
		n, err := s.r.Read(s.in[len(s.in) : sealed+1])
		s.in = s.in[:len(s.in)+n]
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
	}
	last := len(s.in) <= sealed
	chunk := s.in
	if !last {
		chunk = s.in[:sealed]
	}
	if len(chunk) < TagSize {
		return fmt.Errorf("seal: truncated stream: %w", ErrAuth)
	}
	if s.grouped && s.counter >= maxGroupChunks {
		return fmt.Errorf("seal: stream too long: %w", ErrAuth)
	}
	var n [12]byte
	s.nonce(&n, last)
	aad := s.aad
	if last {
		aad = s.aadLast
	}
	plain, err := s.aead.Open(dst, n[:], chunk, aad)
	if err != nil {
		return fmt.Errorf("seal: chunk %d: %w", s.counter, ErrAuth)
	}
	if !last && len(plain) != ChunkSize {
		return fmt.Errorf("seal: short chunk %d: %w", s.counter, ErrAuth)
	}
	s.counter++
	s.plain, s.pos = plain, 0
	if last {
		s.done = true
		s.in = s.in[:0]
	} else {
		s.in[0] = s.in[sealed]
		s.in = s.in[:1]
	}
	return nil
}

// Read implements io.Reader.
func (s *Reader) Read(p []byte) (int, error) {
	if s.err != nil {
		return 0, s.err
	}
	if s.aead == nil {
		if s.err = s.start(); s.err != nil {
			return 0, s.err
		}
	}
	for s.pos == len(s.plain) {
		if s.done {
			return 0, io.EOF
		}
		if s.err = s.next(); s.err != nil {
			return 0, s.err
		}
	}
	n := copy(p, s.plain[s.pos:])
	s.pos += n
	return n, nil
}

// ReadChunks fills p with plaintext, decrypting whole chunks directly
// into it: the copy-free form of Read for a caller with large buffers. It
// returns 0 and io.EOF at the end of the stream.
func (s *Reader) ReadChunks(p []byte) (int, error) {
	if s.err != nil {
		return 0, s.err
	}
	if s.aead == nil {
		if s.err = s.start(); s.err != nil {
			return 0, s.err
		}
	}
	n := 0
	if s.pos < len(s.plain) { // left by Read
		n = copy(p, s.plain[s.pos:])
		s.pos += n
	}
	for !s.done && len(p)-n >= ChunkSize {
		if s.err = s.nextInto(p[n:n]); s.err != nil {
			return n, s.err
		}
		n += len(s.plain)
		s.plain, s.pos = nil, 0
	}
	if n == 0 {
		if s.done && s.pos == len(s.plain) {
			return 0, io.EOF
		}
		return s.Read(p) // p is smaller than a chunk
	}
	return n, nil
}

// WriteTo implements io.WriterTo, avoiding a copy through a caller's buffer.
func (s *Reader) WriteTo(w io.Writer) (int64, error) {
	var total int64
	for {
		if s.err != nil {
			if s.err == io.EOF {
				return total, nil
			}
			return total, s.err
		}
		if s.aead == nil {
			if s.err = s.start(); s.err != nil {
				continue
			}
		}
		if s.pos < len(s.plain) {
			n, err := w.Write(s.plain[s.pos:])
			total += int64(n)
			s.pos += n
			if err != nil {
				return total, err
			}
			continue
		}
		if s.done {
			s.err = io.EOF
			continue
		}
		s.err = s.next()
	}
}

// Seal returns the sealed version 1 stream of plain, appended to dst: the
// in-memory form used for small content before version 3.
func Seal(dst, plain, key []byte, purpose string) ([]byte, error) {
	var hdr [HeaderSize]byte
	hdr[0] = version
	if _, err := rand.Read(hdr[1:]); err != nil {
		return nil, err
	}
	a, err := streamAEAD(key, hdr[1:], purpose)
	if err != nil {
		return nil, err
	}
	dst = append(dst, hdr[:]...)
	return sealChunks(dst, plain, a, nonce, nil, nil), nil
}

// SealBound returns the sealed version 3 stream of plain, every chunk bound
// to b (whose Digest must be plain's SHA-256, or what plain belongs to),
// appended to dst.
func SealBound(dst, plain, key []byte, purpose string, b Binding) ([]byte, error) {
	if err := validBinding(&b, purpose); err != nil {
		return nil, err
	}
	var hdr [headerSizeBound]byte
	hdr[0] = versionBound
	if _, err := rand.Read(hdr[2:]); err != nil {
		return nil, err
	}
	a, err := formatAEAD(versionBound, key, hdr[2:], purpose)
	if err != nil {
		return nil, err
	}
	aad := b.aad(nil, versionBound, 0, purpose, true)
	dst = append(dst, hdr[:]...)
	return sealChunks(dst, plain, a, nonce, aad, aad), nil
}

// sealChunks appends plain sealed chunk by chunk with a, each chunk's nonce
// made by nonceOf, with associated data aad (aadLast for the last chunk).
func sealChunks(dst, plain []byte, a cipher.AEAD, nonceOf func(n *[12]byte, counter uint64, last bool), aad, aadLast []byte) []byte {
	var n [12]byte
	for counter := uint64(0); ; counter++ {
		last := len(plain) <= ChunkSize
		c := plain
		ad := aad
		if !last {
			c = plain[:ChunkSize]
		} else {
			ad = aadLast
		}
		nonceOf(&n, counter, last)
		dst = a.Seal(dst, n[:], c, ad)
		if last {
			return dst
		}
		plain = plain[ChunkSize:]
	}
}

// Open opens a sealed stream of version 1 or 2 held in memory, appending the
// plaintext to dst (bound streams need OpenBound).
func Open(dst, data, key []byte, purpose string) ([]byte, error) {
	return open(dst, data, key, purpose, nil, 0)
}

// OpenBound opens a sealed stream of any version held in memory, as
// NewBoundReader would read it, appending the plaintext to dst.
func OpenBound(dst, data, key []byte, purpose string, b Binding, require byte) ([]byte, error) {
	return open(dst, data, key, purpose, &b, require)
}

func open(dst, data, key []byte, purpose string, b *Binding, require byte) ([]byte, error) {
	h, need, err := parseHeader(data)
	if err != nil {
		return nil, err
	}
	if need > len(data) || len(data) < h.size+TagSize {
		return nil, fmt.Errorf("seal: truncated stream: %w", ErrAuth)
	}
	a, aad, aadLast, _, err := h.keys(key, purpose, b, require)
	if err != nil {
		return nil, err
	}
	grouped := h.version == versionGroup || h.version == versionGroupBound
	return openChunks(dst, data[h.size:], a, grouped, h.entry, aad, aadLast)
}

// openChunks opens the chunks of a stream (after its header) under a.
func openChunks(dst, data []byte, a cipher.AEAD, grouped bool, entry uint32, aad, aadLast []byte) ([]byte, error) {
	var n [12]byte
	var counter uint64
	var err error
	for {
		last := len(data) <= sealed
		c := data
		ad := aad
		if !last {
			c = data[:sealed]
		} else {
			ad = aadLast
		}
		if len(c) < TagSize {
			return nil, fmt.Errorf("seal: truncated stream: %w", ErrAuth)
		}
		if grouped {
			if counter >= maxGroupChunks {
				return nil, fmt.Errorf("seal: stream too long: %w", ErrAuth)
			}
			groupNonce(&n, entry, counter, last)
		} else {
			nonce(&n, counter, last)
		}
		before := len(dst)
		dst, err = a.Open(dst, n[:], c, ad)
		if err != nil {
			return nil, fmt.Errorf("seal: chunk %d: %w", counter, ErrAuth)
		}
		if !last && len(dst)-before != ChunkSize {
			return nil, fmt.Errorf("seal: short chunk %d: %w", counter, ErrAuth)
		}
		if last {
			return dst, nil
		}
		data = data[sealed:]
		counter++
	}
}

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
