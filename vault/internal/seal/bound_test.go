package seal

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"io"
	"testing"
	"testing/iotest"

	"pgregory.net/rapid"
)

const tenantA = "live:usr_A"

// sealBound seals plain in version 3 through the Writer (the digest known first, or given
// at the end) and SealBound.
func sealBound(t interface{ Fatal(...any) }, plain []byte, b Binding) map[string][]byte {
	out := map[string][]byte{}
	for _, known := range []bool{true, false} {
		var buf bytes.Buffer
		w, err := NewBoundWriter(&buf, key, "content", b, known)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write(plain); err != nil {
			t.Fatal(err)
		}
		if known {
			err = w.Close()
		} else {
			err = w.CloseDigest(b.Digest)
		}
		if err != nil {
			t.Fatal(err)
		}
		name := "writer, digest known"
		if !known {
			name = "writer, digest at end"
		}
		out[name] = buf.Bytes()
	}
	mem, err := SealBound(nil, plain, key, "content", b)
	if err != nil {
		t.Fatal(err)
	}
	out["SealBound"] = mem
	g, err := NewBoundGroup(key, "content", b.Tenant)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := g.SealFor(nil, []byte("an entry before"), sha256.Sum256([]byte("x"))); err != nil {
		t.Fatal(err)
	}
	grouped, err := g.SealFor(nil, plain, b.Digest)
	if err != nil {
		t.Fatal(err)
	}
	out["group"] = grouped
	if got, err := g.OpenFor(nil, grouped, b.Digest); err != nil || !bytes.Equal(got, plain) {
		t.Fatal("Group.OpenFor:", err)
	}
	return out
}

func readBound(data []byte, b Binding, require byte) ([]byte, bool, error) {
	r := NewBoundReader(iotest.OneByteReader(bytes.NewReader(data)), key, "content", b, require)
	got, err := io.ReadAll(r)
	return got, r.Bound(), err
}

func TestBoundRoundTrip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		size := rapid.OneOf(rapid.IntRange(0, 10), rapid.IntRange(ChunkSize-2, ChunkSize+2), rapid.IntRange(0, 3*ChunkSize+3)).Draw(t, "size")
		plain := rapid.SliceOfN(rapid.Byte(), size, size).Draw(t, "plain")
		b := Binding{Tenant: tenantA, Digest: sha256.Sum256(plain)}
		for name, data := range sealBound(t, plain, b) {
			if name != "group" && int64(len(data)) != SealedSizeBound(int64(size)) {
				t.Fatalf("%s: %d bytes, SealedSizeBound says %d", name, len(data), SealedSizeBound(int64(size)))
			}
			got, bound, err := readBound(data, b, data[0])
			if err != nil || !bytes.Equal(got, plain) {
				t.Fatalf("%s: Reader: %d bytes, %v", name, len(got), err)
			}
			if want := name != "writer, digest at end"; bound != want {
				t.Fatalf("%s: Bound() = %v", name, bound)
			}
			if got, err := OpenBound(nil, data, key, "content", b, 0); err != nil || !bytes.Equal(got, plain) {
				t.Fatalf("%s: OpenBound: %d bytes, %v", name, len(got), err)
			}
		}
	})
}

// A bound stream opens only as what it was sealed for: another content's digest, another
// tenant, another purpose, a changed version or flags byte, an older required version, or
// a reader without the binding all fail authentication.
func TestBoundStreamsRefuseOtherBindings(t *testing.T) {
	plain := bytes.Repeat([]byte("0123456789abcdef"), ChunkSize/16*2+7) // 3 chunks
	b := Binding{Tenant: tenantA, Digest: sha256.Sum256(plain)}
	fail := func(t *testing.T, what string, err error) {
		t.Helper()
		if !errors.Is(err, ErrAuth) {
			t.Errorf("%s: %v, want ErrAuth", what, err)
		}
	}
	for name, data := range sealBound(t, plain, b) {
		t.Run(name, func(t *testing.T) {
			other := b
			other.Digest[0] ^= 1
			_, _, err := readBound(data, other, 0)
			fail(t, "other digest", err)
			_, err = OpenBound(nil, data, key, "content", other, 0)
			fail(t, "OpenBound, other digest", err)
			if name != "writer, digest at end" {
				// Bound at every chunk: the first Read already refuses.
				r := NewBoundReader(bytes.NewReader(data), key, "content", other, 0)
				_, err := r.Read(make([]byte, 10))
				fail(t, "first read, other digest", err)
			}
			_, _, err = readBound(data, Binding{Tenant: "live:usr_B", Digest: b.Digest}, 0)
			fail(t, "other tenant", err)
			_, err = OpenBound(nil, data, key, "text", b, 0)
			fail(t, "other purpose", err)
			_, err = Open(nil, data, key, "content")
			fail(t, "no binding", err)
			_, err = OpenBound(nil, data, key, "content", b, Version1)
			fail(t, "required version 1", err)
			for _, v := range []byte{Version1, Version2, VersionBound, VersionGroup4} {
				if v == data[0] {
					continue
				}
				bad := bytes.Clone(data)
				bad[0] = v
				_, err = OpenBound(nil, bad, key, "content", b, 0)
				fail(t, "version byte changed", err)
			}
			if data[0] == VersionBound {
				bad := bytes.Clone(data)
				bad[1] ^= FlagDigestAtEnd
				_, _, err = readBound(bad, b, 0)
				fail(t, "flags changed", err)
			}
		})
	}
	// Nor does an old, unbound stream stand in for a copy recorded as version 3.
	v1, err := Seal(nil, plain, key, "content")
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = readBound(v1, b, VersionBound)
	fail(t, "version 1 where version 3 was written", err)
	if got, _, err := readBound(v1, b, 0); err != nil || !bytes.Equal(got, plain) {
		t.Errorf("version 1 through a bound reader without a required version: %v", err)
	}
}

// The formats derive their keys under different labels: the same salt gives another key.
func TestLabelsDiffer(t *testing.T) {
	seen := map[string]bool{}
	for _, v := range []byte{Version1, Version2, VersionBound, VersionGroup4} {
		seen[label(v, "content")] = true
	}
	if len(seen) != 3 { // versions 1 and 2 share theirs, as written
		t.Fatalf("%d labels for four versions", len(seen))
	}
}

func BenchmarkSealBound(b *testing.B) {
	plain := bytes.Repeat([]byte("x"), 6000)
	buf := make([]byte, 0, 8192)
	d := sha256.Sum256(plain)
	b.Run("group-v2", func(b *testing.B) {
		g, _ := NewGroup(key, "content")
		for b.Loop() {
			buf, _ = g.Seal(buf[:0], plain)
		}
	})
	b.Run("group-v4", func(b *testing.B) {
		g, _ := NewBoundGroup(key, "content", tenantA)
		for b.Loop() {
			buf, _ = g.SealFor(buf[:0], plain, d)
		}
	})
}

// BenchmarkStream seals and opens a 16 MiB stream, version 1 against version 3 (associated
// data on every chunk).
func BenchmarkStream(b *testing.B) {
	plain := bytes.Repeat([]byte("0123456789abcdef"), 1<<20)
	bind := Binding{Tenant: tenantA, Digest: sha256.Sum256(plain)}
	for _, bound := range []bool{false, true} {
		name := map[bool]string{false: "v1", true: "v3"}[bound]
		var sealedStream bytes.Buffer
		b.Run("seal-"+name, func(b *testing.B) {
			b.SetBytes(int64(len(plain)))
			for b.Loop() {
				sealedStream.Reset()
				var w *Writer
				var err error
				if bound {
					w, err = NewBoundWriter(&sealedStream, key, "content", bind, false)
				} else {
					w, err = NewWriter(&sealedStream, key, "content")
				}
				if err != nil {
					b.Fatal(err)
				}
				w.Write(plain)
				if bound {
					err = w.CloseDigest(bind.Digest)
				} else {
					err = w.Close()
				}
				if err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("open-"+name, func(b *testing.B) {
			b.SetBytes(int64(len(plain)))
			buf := make([]byte, 1<<20)
			for b.Loop() {
				r := NewBoundReader(bytes.NewReader(sealedStream.Bytes()), key, "content", bind, 0)
				for {
					_, err := r.ReadChunks(buf)
					if err == io.EOF {
						break
					}
					if err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}
