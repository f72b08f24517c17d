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
// Readers open both versions.
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
)

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

func streamAEAD(key []byte, salt []byte, purpose string) (cipher.AEAD, error) {
	if len(key) != KeySize {
		return nil, fmt.Errorf("seal: key of %d bytes, want %d", len(key), KeySize)
	}
	k, err := hkdf.Key(sha256.New, key, salt, "svc vault stream v1 "+purpose, KeySize)
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
	s.out = s.aead.Seal(s.out[:0], n[:], s.buf, nil)
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
			s.out = s.aead.Seal(s.out[:0], n[:], p[:ChunkSize], nil)
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

// Close seals the last chunk. It does not close the underlying writer.
func (s *Writer) Close() error {
	if s.err != nil {
		return s.err
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
	grouped bool   // a version 2 stream
	entry   uint32 // its entry
	done    bool
	err     error
}

// nonce sets n to the nonce of the current chunk.
func (s *Reader) nonce(n *[12]byte, last bool) {
	if s.grouped {
		groupNonce(n, s.entry, s.counter, last)
	} else {
		nonce(n, s.counter, last)
	}
}

// NewReader opens a sealed stream from r under key and purpose. The header
// is read on the first Read.
func NewReader(r io.Reader, key []byte, purpose string) *Reader {
	return &Reader{r: r, key: key, purpose: purpose}
}

func (s *Reader) start() error {
	var hdr [HeaderSize]byte
	if _, err := io.ReadFull(s.r, hdr[:]); err != nil {
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			return fmt.Errorf("seal: truncated header: %w", ErrAuth)
		}
		return err
	}
	switch hdr[0] {
	case version:
	case versionGroup:
		var e [entrySize]byte
		if _, err := io.ReadFull(s.r, e[:]); err != nil {
			if err == io.EOF || err == io.ErrUnexpectedEOF {
				return fmt.Errorf("seal: truncated header: %w", ErrAuth)
			}
			return err
		}
		s.grouped, s.entry = true, binary.BigEndian.Uint32(e[:])
	default:
		return fmt.Errorf("seal: unknown version %d: %w", hdr[0], ErrAuth)
	}
	a, err := streamAEAD(s.key, hdr[1:], s.purpose)
	if err != nil {
		return err
	}
	s.aead = a
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
	plain, err := s.aead.Open(dst, n[:], chunk, nil)
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

// Seal returns the sealed stream of plain, appended to dst: the in-memory
// form used for small content.
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
	return sealChunks(dst, plain, a, nonce), nil
}

// sealChunks appends plain sealed chunk by chunk with a, each chunk's nonce made by nonceOf.
func sealChunks(dst, plain []byte, a cipher.AEAD, nonceOf func(n *[12]byte, counter uint64, last bool)) []byte {
	var n [12]byte
	for counter := uint64(0); ; counter++ {
		last := len(plain) <= ChunkSize
		c := plain
		if !last {
			c = plain[:ChunkSize]
		}
		nonceOf(&n, counter, last)
		dst = a.Seal(dst, n[:], c, nil)
		if last {
			return dst
		}
		plain = plain[ChunkSize:]
	}
}

// Open opens a sealed stream held in memory (either version), appending the
// plaintext to dst.
func Open(dst, data, key []byte, purpose string) ([]byte, error) {
	if len(data) < HeaderSize+TagSize {
		return nil, fmt.Errorf("seal: truncated stream: %w", ErrAuth)
	}
	a, err := streamAEAD(key, data[1:HeaderSize], purpose)
	if err != nil {
		return nil, err
	}
	switch data[0] {
	case version:
		return openChunks(dst, data[HeaderSize:], a, false, 0)
	case versionGroup:
		if len(data) < headerSizeGroup+TagSize {
			return nil, fmt.Errorf("seal: truncated stream: %w", ErrAuth)
		}
		return openChunks(dst, data[headerSizeGroup:], a, true, binary.BigEndian.Uint32(data[HeaderSize:]))
	}
	return nil, fmt.Errorf("seal: unknown version %d: %w", data[0], ErrAuth)
}

// openChunks opens the chunks of a stream (after its header) under a.
func openChunks(dst, data []byte, a cipher.AEAD, grouped bool, entry uint32) ([]byte, error) {
	var n [12]byte
	var counter uint64
	var err error
	for {
		last := len(data) <= sealed
		c := data
		if !last {
			c = data[:sealed]
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
		dst, err = a.Open(dst, n[:], c, nil)
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

// Group seals many small streams under one stream key (version 2): the key is
// derived and expanded once for the group, and each stream is numbered with
// its own entry so that no nonce repeats. Every stream it seals opens alone
// (Open, Reader). A Group is not safe for concurrent use.
type Group struct {
	aead cipher.AEAD
	hdr  [headerSizeGroup]byte // version, salt; the entry is set per stream
	next uint64
}

// ErrGroupFull is returned by Group.Seal after 2^32 streams.
var ErrGroupFull = errors.New("seal: group has sealed its last stream")

// NewGroup starts a group of streams under key (a data key) and purpose,
// with a fresh random salt.
func NewGroup(key []byte, purpose string) (*Group, error) {
	g := &Group{}
	g.hdr[0] = versionGroup
	if _, err := rand.Read(g.hdr[1:HeaderSize]); err != nil {
		return nil, err
	}
	a, err := streamAEAD(key, g.hdr[1:HeaderSize], purpose)
	if err != nil {
		return nil, err
	}
	g.aead = a
	return g, nil
}

// SealedSize returns the size of the grouped stream of n plaintext bytes.
func (g *Group) SealedSize(n int64) int64 { return SealedSize(n) + entrySize }

// Seal appends the sealed stream of plain to dst, as the group's next entry.
func (g *Group) Seal(dst, plain []byte) ([]byte, error) {
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
	return sealChunks(dst, plain, g.aead, func(n *[12]byte, counter uint64, last bool) { groupNonce(n, entry, counter, last) }), nil
}

// Open opens a stream this group sealed (its version and salt are checked,
// so that it opens exactly as Open would open it from the data key),
// appending the plaintext to dst, without deriving the key again.
func (g *Group) Open(dst, data []byte) ([]byte, error) {
	if len(data) < headerSizeGroup+TagSize {
		return nil, fmt.Errorf("seal: truncated stream: %w", ErrAuth)
	}
	if !bytes.Equal(data[:HeaderSize], g.hdr[:HeaderSize]) {
		return nil, fmt.Errorf("seal: stream not of this group: %w", ErrAuth)
	}
	return openChunks(dst, data[headerSizeGroup:], g.aead, true, binary.BigEndian.Uint32(data[HeaderSize:]))
}
