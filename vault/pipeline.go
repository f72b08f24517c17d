package vault

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"hash"
	"io"
	"sync"

	"svc.dev/svc/vault/backend"
	"svc.dev/svc/vault/internal/seal"
)

// Streams are processed in segments of segSize bytes, at most segCount of
// them in flight per stream: memory is constant in the content's size,
// and hashing runs on one core while encryption and I/O (or decryption)
// run on another.
const (
	segSize  = 1 << 20
	segCount = 4
)

var segPool = sync.Pool{New: func() any { b := make([]byte, segSize); return &b }}

func getSeg() []byte  { return *(segPool.Get().(*[]byte)) }
func putSeg(b []byte) { b = b[:cap(b)]; segPool.Put(&b) }

// sealedLen returns the size of a stream of n plaintext bytes sealed in
// format (a Placement's Format: 0 for version 1).
func sealedLen(format uint8, n int64) int64 {
	if format == seal.VersionBound {
		return seal.SealedSizeBound(n)
	}
	return seal.SealedSize(n)
}

// writeSealed seals r into f as a stream of tenant t and returns the
// SHA-256 and size of what it read, and the format it wrote (a Placement's
// Format): the caller's goroutine reads and hashes, a second one encrypts
// and writes. The stream is bound to known, when it is not zero (a content
// whose digest the caller knows: every chunk is bound to it, and content
// that does not match it must be refused by the caller), or else to the
// digest computed, which binds its last chunk.
func (v *Vault) writeSealed(f backend.File, t *tenant, purpose string, known Digest, r io.Reader) (Digest, int64, uint8, error) {
	var sw *seal.Writer
	var err error
	var format uint8
	if v.legacy {
		sw, err = seal.NewWriter(f, t.dataKey, purpose)
	} else {
		format = seal.VersionBound
		sw, err = seal.NewBoundWriter(f, t.dataKey, purpose, seal.Binding{Tenant: t.name, Digest: known}, !known.IsZero())
	}
	if err != nil {
		return Digest{}, 0, 0, err
	}
	digest := make(chan Digest, 1) // the digest computed, for the last chunk
	full := make(chan []byte, segCount-1)
	free := make(chan []byte, segCount)
	for range segCount {
		free <- getSeg()
	}
	werr := make(chan error, 1)
	go func() {
		var err error
		for seg := range full {
			if err == nil {
				_, err = sw.Write(seg)
			}
			free <- seg[:cap(seg)]
		}
		d := <-digest
		if err == nil {
			err = sw.CloseDigest(d)
		}
		werr <- err
	}()
	h := sha256.New()
	var n int64
	var rerr error
	for {
		seg := <-free
		m, err := io.ReadFull(r, seg)
		if m > 0 {
			h.Write(seg[:m])
			n += int64(m)
			full <- seg[:m]
		} else {
			free <- seg
		}
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			break
		}
		if err != nil {
			rerr = fmt.Errorf("read content: %w", err)
			break
		}
	}
	var d Digest
	h.Sum(d[:0])
	digest <- d
	close(full)
	err = <-werr
	for range segCount {
		putSeg(<-free)
	}
	if rerr != nil {
		return Digest{}, n, 0, rerr
	}
	if err != nil {
		return Digest{}, n, 0, err
	}
	return d, n, format, nil
}

// verifiedReader decrypts a sealed copy and checks its size and SHA-256: a
// mismatch is reported, wrapping ErrInvalidData, instead of io.EOF. A
// goroutine reads and decrypts ahead (up to segCount segments) while the
// reader hashes. Every byte it returns was authenticated (chunk by chunk)
// under the tenant's key (and, in the bound formats, together with the
// content's digest); the digest check at the end proves the whole.
//
// With holdBack, the final segment (the one that reaches the expected size,
// up to segSize bytes) is returned only once the stream has ended and its size
// and SHA-256 matched: a consumer never receives the last bytes of content
// that fails verification, so one that stops after the expected size (a
// limit reader, an HTTP body of that Content-Length) has still been given
// nothing unverified in full, and one that reads to the end gets the error
// before the last bytes.
type verifiedReader struct {
	holdBack bool
	rc       io.ReadCloser
	h        hash.Hash
	segs     chan segment
	free     chan []byte
	stop     chan struct{}
	once     sync.Once
	wg       sync.WaitGroup
	cur      []byte // unread part of the current segment
	buf      []byte // the current segment, to give back
	n        int64
	want     Digest
	size     int64
	what     string
	err      error
	// onInvalid, if set, is called once when the content turns out not
	// to match (an error wrapping ErrInvalidData).
	onInvalid func(error)
}

type segment struct {
	b   []byte
	err error
}

func newVerifiedReader(rc io.ReadCloser, sr *seal.Reader, want Digest, size int64, what string, holdBack bool) *verifiedReader {
	r := &verifiedReader{
		rc: rc, h: sha256.New(), want: want, size: size, what: what, holdBack: holdBack,
		segs: make(chan segment, segCount), free: make(chan []byte, segCount), stop: make(chan struct{}),
	}
	// Small content needs no read-ahead of a whole segment count.
	count := segCount
	if size < segSize {
		count = 1
		if holdBack {
			count = 2 // the end is read into a second while the first is held
		}
	}
	for range count {
		r.free <- getSeg()
	}
	r.wg.Add(1)
	go r.decrypt(sr)
	return r
}

func (r *verifiedReader) decrypt(sr *seal.Reader) {
	defer r.wg.Done()
	for {
		var buf []byte
		select {
		case buf = <-r.free:
		case <-r.stop:
			return
		}
		n, err := sr.ReadChunks(buf)
		if n > 0 {
			select {
			case r.segs <- segment{b: buf[:n]}:
			case <-r.stop:
				putSeg(buf)
				return
			}
		} else {
			putSeg(buf)
		}
		if err != nil {
			select {
			case r.segs <- segment{err: err}:
			case <-r.stop:
			}
			return
		}
	}
}

// next makes the next segment current; false at the end or on error
// (r.err set).
func (r *verifiedReader) next() bool {
	if r.buf != nil {
		r.free <- r.buf[:cap(r.buf)]
		r.buf = nil
	}
	seg := <-r.segs
	if seg.err != nil {
		r.finish(seg.err)
		return false
	}
	r.cur, r.buf = seg.b, seg.b
	r.n += int64(len(seg.b))
	if r.n > r.size {
		r.fail(fmt.Errorf("%s: more than %d bytes: %w", r.what, r.size, ErrInvalidData))
		return false
	}
	r.h.Write(seg.b)
	if r.holdBack && r.n == r.size {
		// The final segment: hold it until the end of the stream is
		// read and the whole verified.
		end := <-r.segs
		switch {
		case end.err != nil:
			r.finish(end.err)
		default:
			r.free <- end.b[:cap(end.b)]
			r.fail(fmt.Errorf("%s: more than %d bytes: %w", r.what, r.size, ErrInvalidData))
		}
		if r.err != io.EOF {
			r.cur = nil
			return false
		}
	}
	return true
}

// finish turns the end of the stream into io.EOF or a verification error.
func (r *verifiedReader) finish(err error) {
	switch {
	case err == io.EOF:
		var got Digest
		r.h.Sum(got[:0])
		switch {
		case r.n != r.size:
			err = fmt.Errorf("%s: %d bytes, want %d: %w", r.what, r.n, r.size, ErrInvalidData)
		case got != r.want:
			err = fmt.Errorf("%s: reads as sha256 %s, want %s: %w", r.what, got, r.want, ErrInvalidData)
		}
	case errors.Is(err, seal.ErrAuth):
		err = fmt.Errorf("%s: %w: %w", r.what, ErrInvalidData, err)
	default:
		err = fmt.Errorf("%s: %w", r.what, err)
	}
	r.fail(err)
}

// fail sets the reader's error, reporting a mismatch to onInvalid.
func (r *verifiedReader) fail(err error) {
	r.err = err
	if errors.Is(err, ErrInvalidData) && r.onInvalid != nil {
		f := r.onInvalid
		r.onInvalid = nil
		f(err)
	}
}

func (r *verifiedReader) Read(p []byte) (int, error) {
	for len(r.cur) == 0 {
		if r.err != nil || !r.next() {
			return 0, r.err
		}
	}
	n := copy(p, r.cur)
	r.cur = r.cur[n:]
	return n, nil
}

// WriteTo implements io.WriterTo without copying through a caller's
// buffer.
func (r *verifiedReader) WriteTo(w io.Writer) (int64, error) {
	var total int64
	for {
		if len(r.cur) > 0 {
			m, err := w.Write(r.cur)
			total += int64(m)
			r.cur = r.cur[m:]
			if err != nil {
				return total, err
			}
			continue
		}
		if r.err != nil || !r.next() {
			if r.err == io.EOF {
				return total, nil
			}
			return total, r.err
		}
	}
}

// Close stops the read-ahead and closes the stored copy.
func (r *verifiedReader) Close() error {
	var err error
	r.once.Do(func() {
		close(r.stop)
		err = r.rc.Close()
		r.wg.Wait()
		if r.buf != nil {
			putSeg(r.buf)
		}
		for {
			select {
			case b := <-r.free:
				putSeg(b)
			case s := <-r.segs:
				if s.b != nil {
					putSeg(s.b)
				}
			default:
				return
			}
		}
	})
	return err
}
