// Package backendtest is the conformance suite every vault backend must
// pass (the contract in package backend). Run it from a backend's tests:
//
//	backendtest.Run(t, func(t testing.TB) backend.Backend { return newBackend(t) })
package backendtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"sort"
	"sync"
	"testing"

	"svc.dev/svc/vault/backend"
)

// Run runs the suite. open must return an empty backend each time.
func Run(t *testing.T, open func(t testing.TB) backend.Backend) {
	ctx := context.Background()
	t.Run("CommitOpenStatRemove", func(t *testing.T) {
		b := open(t)
		data := payload(1, 3<<20+17)
		write(t, b, "a/b/c1", data)
		got := read(t, b, "a/b/c1", 0, -1)
		if !bytes.Equal(got, data) {
			t.Fatalf("read back %d bytes, wrote %d", len(got), len(data))
		}
		if got := read(t, b, "a/b/c1", 5, 10); !bytes.Equal(got, data[5:15]) {
			t.Fatalf("range read: %q", got)
		}
		if got := read(t, b, "a/b/c1", int64(len(data)-3), -1); !bytes.Equal(got, data[len(data)-3:]) {
			t.Fatalf("tail read: %q", got)
		}
		// Large ranges, aligned and not (a local backend reads them
		// around the page cache).
		for _, r := range [][2]int{{4096, 2 << 20}, {1 << 20, -1}, {4097, 2<<20 + 5}, {0, 3 << 20}} {
			end := len(data)
			if r[1] >= 0 {
				end = r[0] + r[1]
			}
			if got := read(t, b, "a/b/c1", int64(r[0]), int64(r[1])); !bytes.Equal(got, data[r[0]:end]) {
				t.Fatalf("range read %v: %d bytes", r, len(got))
			}
		}
		fi, err := b.Stat(ctx, "a/b/c1")
		if err != nil || fi.Size != int64(len(data)) || fi.Name != "a/b/c1" {
			t.Fatalf("stat: %+v, %v", fi, err)
		}
		if err := b.Remove(ctx, "a/b/c1"); err != nil {
			t.Fatal(err)
		}
		if err := b.Remove(ctx, "a/b/c1"); err != nil {
			t.Fatalf("removing a missing file: %v", err)
		}
		if _, err := b.Stat(ctx, "a/b/c1"); !errors.Is(err, backend.ErrNotFound) {
			t.Fatalf("stat after remove: %v", err)
		}
		if _, err := b.Open(ctx, "a/b/c1", 0, -1); !errors.Is(err, backend.ErrNotFound) {
			t.Fatalf("open after remove: %v", err)
		}
	})
	t.Run("InvisibleUntilCommit", func(t *testing.T) {
		b := open(t)
		f, err := b.Create(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.Write([]byte("pending")); err != nil {
			t.Fatal(err)
		}
		if names := list(t, b, ""); len(names) != 0 {
			t.Fatalf("uncommitted file listed: %v", names)
		}
		if err := f.Abort(); err != nil {
			t.Fatal(err)
		}
		if names := list(t, b, ""); len(names) != 0 {
			t.Fatalf("aborted file listed: %v", names)
		}
	})
	t.Run("CommitReplaces", func(t *testing.T) {
		b := open(t)
		write(t, b, "x", []byte("first"))
		write(t, b, "x", []byte("second"))
		if got := read(t, b, "x", 0, -1); string(got) != "second" {
			t.Fatalf("got %q", got)
		}
	})
	t.Run("Empty", func(t *testing.T) {
		b := open(t)
		write(t, b, "empty", nil)
		if got := read(t, b, "empty", 0, -1); len(got) != 0 {
			t.Fatalf("got %q", got)
		}
	})
	t.Run("List", func(t *testing.T) {
		b := open(t)
		for _, n := range []string{"t/a/data/00/x", "t/a/data/01/y", "t/a/packs/p", "t/b/data/00/z"} {
			write(t, b, n, []byte(n))
		}
		if got := fmt.Sprint(list(t, b, "t/a/")); got != "[t/a/data/00/x t/a/data/01/y t/a/packs/p]" {
			t.Errorf("list t/a/: %s", got)
		}
		if got := fmt.Sprint(list(t, b, "t/a/data/0")); got != "[t/a/data/00/x t/a/data/01/y]" {
			t.Errorf("list t/a/data/0: %s", got)
		}
		if got := list(t, b, "nothing/"); len(got) != 0 {
			t.Errorf("list of a missing prefix: %v", got)
		}
	})
	t.Run("Save", func(t *testing.T) {
		b := open(t)
		if err := backend.Save(ctx, b, "s/saved", []byte("saved")); err != nil {
			t.Fatal(err)
		}
		if got := read(t, b, "s/saved", 0, -1); string(got) != "saved" {
			t.Fatalf("got %q", got)
		}
	})
	t.Run("Append", func(t *testing.T) {
		b := open(t)
		ap, ok := b.(backend.Appender)
		if !ok {
			t.Skip("no Appender")
		}
		f, err := ap.OpenAppend(ctx, "p/pack")
		if err != nil {
			t.Fatal(err)
		}
		o1, err := f.Append([]byte("first "))
		if err != nil || o1 != 0 {
			t.Fatalf("append: %d, %v", o1, err)
		}
		o2, err := f.Append([]byte("second"))
		if err != nil || o2 != 6 {
			t.Fatalf("append: %d, %v", o2, err)
		}
		if err := f.Sync(); err != nil {
			t.Fatal(err)
		}
		if got := read(t, b, "p/pack", o2, 6); string(got) != "second" {
			t.Fatalf("read an appended region: %q", got)
		}
		f.Close()
		// Reopened, it appends at the end.
		f, err = ap.OpenAppend(ctx, "p/pack")
		if err != nil {
			t.Fatal(err)
		}
		if o3, err := f.Append([]byte("!")); err != nil || o3 != 12 {
			t.Fatalf("append after reopening: %d, %v", o3, err)
		}
		f.Sync()
		f.Close()
		if got := read(t, b, "p/pack", 0, -1); string(got) != "first second!" {
			t.Fatalf("got %q", got)
		}
		if got := list(t, b, "p/"); fmt.Sprint(got) != "[p/pack]" {
			t.Fatalf("list: %v", got)
		}
	})
	t.Run("InvalidNames", func(t *testing.T) {
		b := open(t)
		for _, n := range []string{"", "/abs", "a/../b", "tmp/x", "a//b", "a b", "a/"} {
			f, err := b.Create(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if err := f.Commit(ctx, n); !errors.Is(err, backend.ErrInvalidName) {
				t.Errorf("commit as %q: %v", n, err)
				_ = f.Abort()
			}
		}
	})
	t.Run("Concurrent", func(t *testing.T) {
		b := open(t)
		var wg sync.WaitGroup
		for i := range 8 {
			wg.Go(func() {
				data := payload(uint64(i), 100_000)
				write(t, b, fmt.Sprintf("c/%d", i), data)
				write(t, b, "c/same", data)
				if got := read(t, b, fmt.Sprintf("c/%d", i), 0, -1); !bytes.Equal(got, data) {
					t.Errorf("file %d read back wrong", i)
				}
			})
		}
		wg.Wait()
		got := read(t, b, "c/same", 0, -1)
		ok := false
		for i := range 8 {
			ok = ok || bytes.Equal(got, payload(uint64(i), 100_000))
		}
		if !ok {
			t.Error("concurrent commits under one name left a mixture")
		}
	})
}

func payload(seed uint64, n int) []byte {
	r := rand.New(rand.NewPCG(seed, 1))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

func write(t testing.TB, b backend.Backend, name string, data []byte) {
	t.Helper()
	f, err := b.Create(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := f.Commit(context.Background(), name); err != nil {
		t.Fatal(err)
	}
}

func read(t testing.TB, b backend.Backend, name string, off, n int64) []byte {
	t.Helper()
	r, err := b.Open(context.Background(), name, off, n)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	got, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func list(t testing.TB, b backend.Backend, prefix string) []string {
	t.Helper()
	var names []string
	if err := b.List(context.Background(), prefix, func(fi backend.Info) error {
		names = append(names, fi.Name)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	sort.Strings(names)
	return names
}
