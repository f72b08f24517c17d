package archive

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// An archive kept at rest is sealed: AES-256-GCM over chunks of 64 KiB of the archive, under a
// key derived (HKDF-SHA256) from a secret and the archive's name, so it reads as nothing
// without the secret, and any range of it can be served (a resumed download) by opening only
// the chunks the range covers. Each chunk's nonce is its index; its associated data is the
// name, the index and whether it is the last, so chunks cannot be reordered, moved between
// archives, or cut off at the end.
//
//	file  = magic (8 bytes) || chunk*
//	chunk = AES-256-GCM(key, nonce = index (12 bytes, big endian), plaintext <= 64 KiB,
//	                    ad = name || index (8 bytes) || last (1 byte))

// sealedMagic starts a sealed archive.
var sealedMagic = []byte("SVCXA\x00\x01\n")

const (
	sealedChunk    = 64 << 10
	sealedOverhead = 16 // the GCM tag of a chunk
)

// ErrSealedInvalid is returned (wrapped) when a sealed archive does not open: another key or
// name, or bytes changed, moved or cut off.
var ErrSealedInvalid = errors.New("sealed archive does not open")

// IsSealed reports whether data starts like a sealed archive.
func IsSealed(head []byte) bool { return bytes.HasPrefix(head, sealedMagic) }

func sealedAEAD(secret []byte, name string) (cipher.AEAD, error) {
	key, err := hkdf.Key(sha256.New, secret, nil, "svc export archive/"+name, 32)
	if err != nil {
		return nil, err
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(block)
}

func chunkNonce(i uint64) []byte {
	n := make([]byte, 12)
	binary.BigEndian.PutUint64(n[4:], i)
	return n
}

func chunkAD(name string, i uint64, last bool) []byte {
	ad := append([]byte(name), make([]byte, 9)...)
	binary.BigEndian.PutUint64(ad[len(name):], i)
	if last {
		ad[len(ad)-1] = 1
	}
	return ad
}

// SealedWriter seals what is written to it into w. Close writes the last chunk; without it
// the archive does not open.
type SealedWriter struct {
	w     io.Writer
	aead  cipher.AEAD
	name  string
	buf   []byte
	index uint64
	err   error
}

// NewSealedWriter starts a sealed archive named name (the key depends on it) in w.
func NewSealedWriter(w io.Writer, secret []byte, name string) (*SealedWriter, error) {
	aead, err := sealedAEAD(secret, name)
	if err != nil {
		return nil, fmt.Errorf("seal archive: %w", err)
	}
	if _, err := w.Write(sealedMagic); err != nil {
		return nil, fmt.Errorf("seal archive: %w", err)
	}
	return &SealedWriter{w: w, aead: aead, name: name, buf: make([]byte, 0, sealedChunk)}, nil
}

// Write seals p, a chunk at a time.
func (s *SealedWriter) Write(p []byte) (int, error) {
	n := 0
	for len(p) > 0 && s.err == nil {
		if len(s.buf) == sealedChunk { // more follows: this chunk is not the last
			s.flush(false)
			continue
		}
		k := min(len(p), sealedChunk-len(s.buf))
		s.buf = append(s.buf, p[:k]...)
		p, n = p[k:], n+k
	}
	return n, s.err
}

func (s *SealedWriter) flush(last bool) {
	out := s.aead.Seal(nil, chunkNonce(s.index), s.buf, chunkAD(s.name, s.index, last))
	if _, err := s.w.Write(out); err != nil {
		s.err = fmt.Errorf("seal archive: %w", err)
	}
	s.index++
	s.buf = s.buf[:0]
}

// Close seals the last chunk (full or not, empty for an empty archive).
func (s *SealedWriter) Close() error {
	if s.err == nil {
		s.flush(true)
	}
	return s.err
}

// SealedReader reads the plaintext of a sealed archive, at any offset: an io.ReadSeeker and
// io.ReaderAt of Size bytes.
type SealedReader struct {
	r      io.ReaderAt
	aead   cipher.AEAD
	name   string
	chunks uint64
	size   int64
	off    int64
}

// OpenSealed opens a sealed archive of fileSize bytes in r.
func OpenSealed(r io.ReaderAt, fileSize int64, secret []byte, name string) (*SealedReader, error) {
	head := make([]byte, len(sealedMagic))
	if _, err := r.ReadAt(head, 0); err != nil || !IsSealed(head) {
		return nil, fmt.Errorf("%w: not a sealed archive", ErrSealedInvalid)
	}
	body := fileSize - int64(len(sealedMagic))
	full := int64(sealedChunk + sealedOverhead)
	chunks := (body + full - 1) / full
	if body < sealedOverhead || chunks == 0 || body-(chunks-1)*full < sealedOverhead {
		return nil, fmt.Errorf("%w: cut off", ErrSealedInvalid)
	}
	aead, err := sealedAEAD(secret, name)
	if err != nil {
		return nil, err
	}
	sr := &SealedReader{r: r, aead: aead, name: name, chunks: uint64(chunks), size: body - chunks*sealedOverhead}
	// The last chunk says it is the last: an archive cut at a chunk boundary does not open.
	if _, err := sr.chunk(sr.chunks - 1); err != nil {
		return nil, err
	}
	return sr, nil
}

// Size is the plaintext's length.
func (s *SealedReader) Size() int64 { return s.size }

func (s *SealedReader) chunk(i uint64) ([]byte, error) {
	full := int64(sealedChunk + sealedOverhead)
	start := int64(len(sealedMagic)) + int64(i)*full
	n := full
	if i == s.chunks-1 {
		n = int64(len(sealedMagic)) + s.size + int64(s.chunks)*sealedOverhead - start
	}
	ct := make([]byte, n)
	if _, err := s.r.ReadAt(ct, start); err != nil && !(errors.Is(err, io.EOF)) {
		return nil, fmt.Errorf("read sealed archive: %w", err)
	}
	pt, err := s.aead.Open(ct[:0], chunkNonce(i), ct, chunkAD(s.name, i, i == s.chunks-1))
	if err != nil {
		return nil, fmt.Errorf("%w: chunk %d", ErrSealedInvalid, i)
	}
	return pt, nil
}

// ReadAt reads plaintext at off.
func (s *SealedReader) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, errors.New("sealed archive: negative offset")
	}
	n := 0
	for n < len(p) {
		if off >= s.size {
			return n, io.EOF
		}
		i := uint64(off / sealedChunk)
		pt, err := s.chunk(i)
		if err != nil {
			return n, err
		}
		k := copy(p[n:], pt[off%sealedChunk:])
		n += k
		off += int64(k)
	}
	return n, nil
}

// Read reads plaintext from the current offset.
func (s *SealedReader) Read(p []byte) (int, error) {
	n, err := s.ReadAt(p, s.off)
	s.off += int64(n)
	if err == io.EOF && n > 0 {
		err = nil
	}
	return n, err
}

// Seek sets the offset of the next Read.
func (s *SealedReader) Seek(offset int64, whence int) (int64, error) {
	switch whence {
	case io.SeekStart:
	case io.SeekCurrent:
		offset += s.off
	case io.SeekEnd:
		offset += s.size
	default:
		return 0, errors.New("sealed archive: bad whence")
	}
	if offset < 0 {
		return 0, errors.New("sealed archive: negative offset")
	}
	s.off = offset
	return offset, nil
}
