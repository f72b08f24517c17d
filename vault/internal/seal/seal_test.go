package seal

import (
	"bytes"
	"errors"
	"io"
	"testing"
	"testing/iotest"

	"pgregory.net/rapid"
)

var key = bytes.Repeat([]byte{7}, KeySize)

func sealStream(t interface{ Fatal(...any) }, plain []byte, writes []int) []byte {
	var out bytes.Buffer
	w, err := NewWriter(&out, key, "content")
	if err != nil {
		t.Fatal(err)
	}
	p := plain
	for _, n := range writes {
		if n > len(p) {
			n = len(p)
		}
		if _, err := w.Write(p[:n]); err != nil {
			t.Fatal(err)
		}
		p = p[n:]
	}
	if _, err := w.Write(p); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

func TestRoundTrip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		size := rapid.OneOf(rapid.IntRange(0, 10), rapid.IntRange(ChunkSize-2, ChunkSize+2), rapid.IntRange(0, 4*ChunkSize+3)).Draw(t, "size")
		plain := rapid.SliceOfN(rapid.Byte(), size, size).Draw(t, "plain")
		writes := rapid.SliceOfN(rapid.IntRange(0, 2*ChunkSize), 0, 5).Draw(t, "writes")
		streamed := sealStream(t, plain, writes)
		if int64(len(streamed)) != SealedSize(int64(size)) {
			t.Fatalf("sealed %d bytes into %d, SealedSize says %d", size, len(streamed), SealedSize(int64(size)))
		}
		mem, err := Seal(nil, plain, key, "content")
		if err != nil {
			t.Fatal(err)
		}
		if len(mem) != len(streamed) {
			t.Fatalf("Seal gave %d bytes, the Writer %d", len(mem), len(streamed))
		}
		for _, data := range [][]byte{streamed, mem} {
			got, err := io.ReadAll(iotest.OneByteReader(NewReader(bytes.NewReader(data), key, "content")))
			if err != nil || !bytes.Equal(got, plain) {
				t.Fatalf("Reader: %d bytes, %v", len(got), err)
			}
			var buf bytes.Buffer
			if _, err := NewReader(bytes.NewReader(data), key, "content").WriteTo(&buf); err != nil || !bytes.Equal(buf.Bytes(), plain) {
				t.Fatalf("WriteTo: %v", err)
			}
			var chunks []byte
			cr := NewReader(bytes.NewReader(data), key, "content")
			for {
				buf := make([]byte, rapid.IntRange(1, 3*ChunkSize).Draw(t, "buffer"))
				n, err := cr.ReadChunks(buf)
				chunks = append(chunks, buf[:n]...)
				if err == io.EOF {
					break
				}
				if err != nil {
					t.Fatalf("ReadChunks: %v", err)
				}
			}
			if !bytes.Equal(chunks, plain) {
				t.Fatalf("ReadChunks: %d bytes", len(chunks))
			}
			got, err = Open(nil, data, key, "content")
			if err != nil || !bytes.Equal(got, plain) {
				t.Fatalf("Open: %v", err)
			}
		}
	})
}

func mustFail(t *testing.T, name string, data []byte, k []byte, purpose string) {
	t.Helper()
	if _, err := io.ReadAll(NewReader(bytes.NewReader(data), k, purpose)); !errors.Is(err, ErrAuth) {
		t.Errorf("%s: Reader gave %v, want ErrAuth", name, err)
	}
	if _, err := Open(nil, data, k, purpose); !errors.Is(err, ErrAuth) {
		t.Errorf("%s: Open gave %v, want ErrAuth", name, err)
	}
}

func TestTamperingFails(t *testing.T) {
	plain := bytes.Repeat([]byte("0123456789abcdef"), 3*ChunkSize/16+5) // 4 chunks
	data, err := Seal(nil, plain, key, "content")
	if err != nil {
		t.Fatal(err)
	}
	other := bytes.Repeat([]byte{8}, KeySize)
	mustFail(t, "other key", data, other, "content")
	mustFail(t, "other purpose", data, key, "text")
	for _, off := range []int{0, 1, HeaderSize, HeaderSize + ChunkSize, len(data) - 1} {
		bad := bytes.Clone(data)
		bad[off] ^= 1
		mustFail(t, "flipped byte", bad, key, "content")
	}
	// Dropping the last chunk leaves a stream whose last chunk is not
	// marked last.
	mustFail(t, "truncated at a chunk boundary", data[:HeaderSize+3*(ChunkSize+TagSize)], key, "content")
	mustFail(t, "truncated", data[:len(data)-1], key, "content")
	mustFail(t, "header only", data[:HeaderSize], key, "content")
	mustFail(t, "empty", nil, key, "content")
	swapped := bytes.Clone(data)
	c0 := HeaderSize
	c1 := HeaderSize + ChunkSize + TagSize
	copy(swapped[c0:c1], data[c1:c1+ChunkSize+TagSize])
	copy(swapped[c1:c1+ChunkSize+TagSize], data[c0:c1])
	mustFail(t, "reordered chunks", swapped, key, "content")
	mustFail(t, "appended bytes", append(bytes.Clone(data), 0), key, "content")
}

func TestWrap(t *testing.T) {
	kek := bytes.Repeat([]byte{1}, KeySize)
	old := bytes.Repeat([]byte{2}, KeySize)
	dk, err := NewKey()
	if err != nil {
		t.Fatal(err)
	}
	w, err := Wrap(old, dk, "test:usr_1")
	if err != nil {
		t.Fatal(err)
	}
	got, err := Unwrap([][]byte{kek, old}, w, "test:usr_1")
	if err != nil || !bytes.Equal(got, dk) {
		t.Fatalf("unwrap with the previous KEK: %v", err)
	}
	if _, err := Unwrap([][]byte{kek}, w, "test:usr_1"); !errors.Is(err, ErrUnknownKEK) {
		t.Errorf("unwrap without its KEK: %v", err)
	}
	if _, err := Unwrap([][]byte{old}, w, "live:usr_1"); !errors.Is(err, ErrAuth) {
		t.Errorf("unwrap for another owner: %v", err)
	}
	bad := bytes.Clone(w)
	bad[len(bad)-1] ^= 1
	if _, err := Unwrap([][]byte{old}, bad, "test:usr_1"); !errors.Is(err, ErrAuth) {
		t.Errorf("unwrap tampered: %v", err)
	}
}

func BenchmarkWriter(b *testing.B) {
	buf := make([]byte, 1<<20)
	b.SetBytes(int64(len(buf)))
	w, _ := NewWriter(io.Discard, key, "content")
	for b.Loop() {
		w.Write(buf)
	}
}

// A group's streams (version 2) open alone, through Open and the Reader, from the data key.
func TestGroupRoundTrip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		g, err := NewGroup(key, "content")
		if err != nil {
			t.Fatal(err)
		}
		sizes := rapid.SliceOfN(rapid.OneOf(rapid.IntRange(0, 10), rapid.IntRange(ChunkSize-2, ChunkSize+2), rapid.IntRange(0, 3*ChunkSize)), 1, 4).Draw(t, "sizes")
		var buf []byte
		var plains [][]byte
		var offs []int
		for _, size := range sizes {
			plain := rapid.SliceOfN(rapid.Byte(), size, size).Draw(t, "plain")
			offs = append(offs, len(buf))
			buf, err = g.Seal(buf, plain)
			if err != nil {
				t.Fatal(err)
			}
			if got := int64(len(buf) - offs[len(offs)-1]); got != g.SealedSize(int64(size)) {
				t.Fatalf("sealed %d bytes into %d, SealedSize says %d", size, got, g.SealedSize(int64(size)))
			}
			plains = append(plains, plain)
		}
		offs = append(offs, len(buf))
		for i, plain := range plains {
			data := buf[offs[i]:offs[i+1]]
			for name, open := range map[string]func() ([]byte, error){
				"Open":       func() ([]byte, error) { return Open(nil, data, key, "content") },
				"Group.Open": func() ([]byte, error) { return g.Open(nil, data) },
				"Reader":     func() ([]byte, error) { return io.ReadAll(NewReader(bytes.NewReader(data), key, "content")) },
				"ReadChunks": func() ([]byte, error) {
					out := make([]byte, len(plain)+ChunkSize)
					r := NewReader(bytes.NewReader(data), key, "content")
					n := 0
					for {
						m, err := r.ReadChunks(out[n:])
						n += m
						if err == io.EOF {
							return out[:n], nil
						}
						if err != nil {
							return nil, err
						}
					}
				},
			} {
				got, err := open()
				if err != nil || !bytes.Equal(got, plain) {
					t.Fatalf("%s of entry %d: %d bytes, %v", name, i, len(got), err)
				}
			}
		}
	})
}

// Streams of a group share a key, never a nonce: the same plaintext seals differently, and a
// stream's entry cannot be changed, nor one group's stream opened as another's.
func TestGroupTamperingFails(t *testing.T) {
	g, err := NewGroup(key, "content")
	if err != nil {
		t.Fatal(err)
	}
	plain := bytes.Repeat([]byte("0123456789abcdef"), ChunkSize/16+5) // 2 chunks
	a, err := g.Seal(nil, plain)
	if err != nil {
		t.Fatal(err)
	}
	b, err := g.Seal(nil, plain)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(a[headerSizeGroup:], b[headerSizeGroup:]) {
		t.Fatal("two entries of a group sealed the same plaintext to the same bytes")
	}
	renumbered := bytes.Clone(b)
	copy(renumbered[HeaderSize:headerSizeGroup], a[HeaderSize:headerSizeGroup])
	mustFail(t, "entry changed", renumbered, key, "content")
	if _, err := g.Open(nil, renumbered); !errors.Is(err, ErrAuth) {
		t.Errorf("Group.Open of a renumbered entry: %v", err)
	}
	for _, off := range []int{0, 1, HeaderSize, headerSizeGroup, len(a) - 1} {
		bad := bytes.Clone(a)
		bad[off] ^= 1
		mustFail(t, "flipped byte", bad, key, "content")
		if _, err := g.Open(nil, bad); !errors.Is(err, ErrAuth) {
			t.Errorf("Group.Open with byte %d flipped: %v", off, err)
		}
	}
	mustFail(t, "other purpose", a, key, "text")
	mustFail(t, "truncated", a[:len(a)-1], key, "content")
	mustFail(t, "header only", a[:headerSizeGroup], key, "content")
	other, err := NewGroup(key, "content")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := other.Open(nil, a); !errors.Is(err, ErrAuth) {
		t.Errorf("another group opened this group's stream: %v", err)
	}
	v1, err := Seal(nil, plain, key, "content")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := g.Open(nil, v1); !errors.Is(err, ErrAuth) {
		t.Errorf("Group.Open of a version 1 stream: %v", err)
	}
}

func BenchmarkSealSmall(b *testing.B) {
	plain := bytes.Repeat([]byte("x"), 6000)
	buf := make([]byte, 0, 8192)
	b.Run("v1", func(b *testing.B) {
		for b.Loop() {
			buf, _ = Seal(buf[:0], plain, key, "content")
		}
	})
	b.Run("group", func(b *testing.B) {
		g, _ := NewGroup(key, "content")
		for b.Loop() {
			buf, _ = g.Seal(buf[:0], plain)
		}
	})
}
