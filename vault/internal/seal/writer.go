package seal

import (
	"crypto/cipher"
	"crypto/rand"
	"errors"
	"io"
)

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
