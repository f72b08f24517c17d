package local

import (
	"bytes"
	"context"
	"io"
	"math/rand/v2"
	"testing"
	"time"
)

// TestDirectIOAtBlockBoundaries writes and reads back files around the
// block size of direct I/O, whole and in aligned sections, with several
// blocks in flight each way, and closes readers part way.
func TestDirectIOAtBlockBoundaries(t *testing.T) {
	b, err := New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if f, err := b.create(true); err != nil || f.dw == nil {
		t.Skipf("no direct I/O in the test directory (%v)", err)
	} else {
		_ = f.Abort()
	}
	for _, size := range []int{1 << 20, directBuf - 1, directBuf, directBuf + 1, depth*directBuf + align + 7, 13 << 20} {
		data := make([]byte, size)
		rng := rand.NewChaCha8([32]byte{byte(size), byte(size >> 8), byte(size >> 16)})
		_, _ = rng.Read(data)
		f, err := b.Create(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for p := data; len(p) > 0; {
			n := min(len(p), 1+int(rng.Uint64()%(3<<20)))
			if _, err := f.Write(p[:n]); err != nil {
				t.Fatal(err)
			}
			p = p[n:]
		}
		if err := f.Commit(ctx, "blob"); err != nil {
			t.Fatal(err)
		}
		for _, sec := range [][2]int64{{0, int64(size)}, {align, int64(size) - align}, {2 * align, min(1<<20, int64(size)-2*align)}} {
			rc, err := b.Open(ctx, "blob", sec[0], sec[1])
			if err != nil {
				t.Fatal(err)
			}
			if _, ok := rc.(*directReader); !ok && sec[1] >= directMin {
				t.Fatalf("size %d section %v: not read with direct I/O", size, sec)
			}
			got, err := io.ReadAll(rc)
			if err != nil {
				t.Fatalf("size %d section %v: %v", size, sec, err)
			}
			if err := rc.Close(); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, data[sec[0]:sec[0]+sec[1]]) {
				t.Fatalf("size %d section %v: read %d bytes that differ", size, sec, len(got))
			}
		}
		rc, err := b.Open(ctx, "blob", 0, int64(size))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadFull(rc, make([]byte, size/2)); err != nil {
			t.Fatal(err)
		}
		if err := rc.Close(); err != nil {
			t.Fatal(err)
		}
		if err := b.Remove(ctx, "blob"); err != nil {
			t.Fatal(err)
		}
	}
}

// A Close from another goroutine ends a Read that waits for the next block (as a verified
// reader's read-ahead is closed when its caller stops reading early), instead of leaving it
// waiting forever.
func TestDirectReaderClosedWhileReading(t *testing.T) {
	b, err := New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if f, err := b.create(true); err != nil || f.dw == nil {
		t.Skipf("no direct I/O in the test directory (%v)", err)
	} else {
		_ = f.Abort()
	}
	size := 4*depth*directBuf + 5
	f, err := b.Create(ctx)
	if err != nil {
		t.Fatal(err)
	}
	f.Write(make([]byte, size))
	if err := f.Commit(ctx, "blob"); err != nil {
		t.Fatal(err)
	}
	for range 20 {
		rc, err := b.Open(ctx, "blob", 0, int64(size))
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 2)
		go func() {
			_, err := io.Copy(io.Discard, rc)
			done <- err
		}()
		go func() { done <- rc.Close() }()
		for range 2 {
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				t.Fatal("a Read or the Close still waits 10 s after Close")
			}
		}
	}
}
