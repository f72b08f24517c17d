package local

import (
	"io"
	"os"
	"sync"
	"unsafe"
)

// Large files are written and read back with O_DIRECT where the
// filesystem allows it:
//
//   - The read-back that verifies a write then reads what the device
//     holds, not the copy the page cache kept of the write.
//   - Vaulted content is written once and rarely read; through the page
//     cache it would evict pages that other work uses.
//   - It is faster: on the project's machine (a VM) buffered writes of new
//     files run at about 350 MB/s, spent allocating page cache, and direct
//     writes at 1.3-1.9 GB/s.
//
// O_DIRECT needs block-aligned buffers, offsets and lengths: writes go
// through an aligned buffer, the last block is padded and the file
// truncated to its size at Commit. Durability still comes from fsync.
// Where O_DIRECT is refused (tmpfs) the file is an ordinary one.

const (
	align     = 4096
	directBuf = 2 << 20
	// directMin is the smallest read that goes around the page cache.
	directMin = 1 << 20
)

// blockPool recycles the aligned blocks of direct I/O (each file would
// otherwise allocate, and the runtime zero, four of them).
var blockPool = sync.Pool{New: func() any { b := alignedBuf(directBuf); return &b }}

func getBlock() []byte  { return *(blockPool.Get().(*[]byte)) }
func putBlock(b []byte) { b = b[:cap(b)]; blockPool.Put(&b) }

// alignedBuf returns an n-byte buffer aligned to align.
func alignedBuf(n int) []byte {
	b := make([]byte, n+align)
	off := align - int(uintptr(unsafe.Pointer(&b[0]))&(align-1))
	if off == align {
		off = 0
	}
	return b[off : off+n : off+n]
}

// directWriter buffers writes to an O_DIRECT file in aligned blocks and
// writes them behind: one block is written by a goroutine while the next
// fills, so the device works while the caller encrypts.
type directWriter struct {
	f    *os.File
	buf  []byte // filling
	n    int    // bytes in buf
	off  int64  // bytes handed to the writer goroutine
	full chan []byte
	free chan []byte
	werr chan error
	err  error
	shut bool // the writer goroutine was told to stop
}

func newDirectWriter(f *os.File) *directWriter {
	w := &directWriter{f: f, full: make(chan []byte, 1), free: make(chan []byte, 2), werr: make(chan error, 1)}
	w.buf = getBlock()
	w.free <- getBlock()
	go func() {
		var err error
		for b := range w.full {
			if err == nil {
				_, err = f.Write(b)
			}
			w.free <- b
		}
		w.werr <- err
	}()
	return w
}

func (w *directWriter) Write(p []byte) (int, error) {
	if w.err != nil {
		return 0, w.err
	}
	total := len(p)
	for len(p) > 0 {
		c := copy(w.buf[w.n:], p)
		w.n += c
		p = p[c:]
		if w.n == len(w.buf) {
			w.full <- w.buf
			w.off += int64(w.n)
			w.buf, w.n = <-w.free, 0
		}
	}
	return total, nil
}

// finish waits for the blocks written behind, writes the last partial
// block, padded, and truncates the file to the bytes written.
func (w *directWriter) finish() error {
	w.shut = true
	close(w.full)
	defer w.release()
	if err := <-w.werr; err != nil {
		w.err = err
		return err
	}
	if w.n == 0 {
		return nil
	}
	size := w.off + int64(w.n)
	padded := (w.n + align - 1) / align * align
	clear(w.buf[w.n:padded])
	if _, err := w.f.Write(w.buf[:padded]); err != nil {
		return err
	}
	w.off, w.n = size, 0
	return w.f.Truncate(size)
}

// abort stops the writer goroutine.
func (w *directWriter) abort() {
	if !w.shut {
		w.shut = true
		close(w.full)
		<-w.werr
		w.release()
	}
}

// release gives the blocks back once the writer goroutine has stopped:
// one is being filled, the other is free.
func (w *directWriter) release() {
	if w.buf != nil {
		putBlock(w.buf)
		putBlock(<-w.free)
		w.buf = nil
	}
}

// directReader reads length bytes of an O_DIRECT file from an aligned
// offset, a goroutine reading the next block while the caller uses the
// current one.
type directReader struct {
	f     *os.File
	cur   []byte // unread part of the current block
	block []byte // the current block, to give back
	left  int64
	next  chan readBlock
	free  chan []byte
	stop  chan struct{}
	done  chan struct{}
	err   error
}

type readBlock struct {
	b   []byte
	err error
}

func newDirectReader(f *os.File, offset, length int64) *directReader {
	r := &directReader{f: f, left: length, next: make(chan readBlock, 1), free: make(chan []byte, 2), stop: make(chan struct{}), done: make(chan struct{})}
	r.free <- getBlock()
	r.free <- getBlock()
	go func() {
		defer close(r.done)
		off := offset
		for {
			var b []byte
			select {
			case b = <-r.free:
			case <-r.stop:
				return
			}
			n, err := f.ReadAt(b, off)
			off += int64(n)
			if err == nil && n < len(b) {
				err = io.EOF
			}
			if n == 0 && err == nil {
				err = io.EOF
			}
			select {
			case r.next <- readBlock{b[:n], err}:
			case <-r.stop:
				return
			}
			if err != nil {
				return
			}
		}
	}()
	return r
}

func (r *directReader) Read(p []byte) (int, error) {
	if r.left <= 0 {
		return 0, io.EOF
	}
	for len(r.cur) == 0 {
		if r.err != nil {
			return 0, r.err
		}
		if r.block != nil {
			r.free <- r.block[:cap(r.block)]
			r.block = nil
		}
		rb := <-r.next
		r.cur, r.block = rb.b, rb.b
		if rb.err != nil {
			r.err = rb.err
		}
	}
	n := copy(p, r.cur)
	if int64(n) > r.left {
		n = int(r.left)
	}
	r.cur = r.cur[n:]
	r.left -= int64(n)
	return n, nil
}

func (r *directReader) Close() error {
	select {
	case <-r.stop:
		return nil
	default:
	}
	close(r.stop)
	<-r.done
	if r.block != nil {
		putBlock(r.block)
		r.block, r.cur = nil, nil
	}
	for {
		select {
		case b := <-r.free:
			putBlock(b)
		case rb := <-r.next:
			putBlock(rb.b)
		default:
			return r.f.Close()
		}
	}
}

// openDirect opens a file for a large aligned read of a known length
// around the page cache, or returns nil when it cannot.
func openDirect(path string, offset, length int64) *directReader {
	if oDirect == 0 || offset%align != 0 || length < directMin {
		return nil
	}
	f, err := os.OpenFile(path, os.O_RDONLY|oDirect, 0)
	if err != nil {
		return nil
	}
	return newDirectReader(f, offset, length)
}
