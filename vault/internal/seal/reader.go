package seal

import (
	"crypto/cipher"
	"encoding/binary"
	"fmt"
	"io"
)

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
