package archive

import (
	"bytes"
	"crypto/rand"
	"errors"
	"io"
	"testing"
)

func seal(t *testing.T, plain []byte, secret []byte, name string, writes int) []byte {
	t.Helper()
	var buf bytes.Buffer
	w, err := NewSealedWriter(&buf, secret, name)
	if err != nil {
		t.Fatal(err)
	}
	step := max(1, len(plain)/max(writes, 1))
	for off := 0; off < len(plain); off += step {
		if _, err := w.Write(plain[off:min(len(plain), off+step)]); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// A sealed archive reads back whole and at any range; it reveals nothing of the plaintext, and
// another key or name, a changed byte, swapped chunks or a cut end do not open.
func TestSealedArchive(t *testing.T) {
	secret := bytes.Repeat([]byte{7}, 32)
	for _, size := range []int{0, 1, sealedChunk - 1, sealedChunk, sealedChunk + 1, 3*sealedChunk + 17} {
		plain := make([]byte, size)
		rand.Read(plain)
		for _, writes := range []int{1, 7} {
			sealed := seal(t, plain, secret, "job_1", writes)
			if size > 64 && bytes.Contains(sealed, plain[:64]) {
				t.Fatalf("size %d: the plaintext shows in the sealed file", size)
			}
			r, err := OpenSealed(bytes.NewReader(sealed), int64(len(sealed)), secret, "job_1")
			if err != nil {
				t.Fatalf("size %d: %v", size, err)
			}
			if r.Size() != int64(size) {
				t.Fatalf("size %d: Size %d", size, r.Size())
			}
			got, err := io.ReadAll(r)
			if err != nil || !bytes.Equal(got, plain) {
				t.Fatalf("size %d, %d writes: read %d bytes, %v", size, writes, len(got), err)
			}
			if size > 10 {
				part := make([]byte, size/2)
				if _, err := r.ReadAt(part, int64(size/3)); err != nil || !bytes.Equal(part, plain[size/3:size/3+size/2]) {
					t.Fatalf("size %d: a range: %v", size, err)
				}
			}
		}
	}
	plain := make([]byte, 3*sealedChunk)
	rand.Read(plain)
	sealed := seal(t, plain, secret, "job_1", 1)
	open := func(b []byte, secret []byte, name string) error {
		r, err := OpenSealed(bytes.NewReader(b), int64(len(b)), secret, name)
		if err == nil {
			_, err = io.ReadAll(r)
		}
		return err
	}
	bad := map[string]func() ([]byte, []byte, string){
		"another key":  func() ([]byte, []byte, string) { return sealed, bytes.Repeat([]byte{8}, 32), "job_1" },
		"another name": func() ([]byte, []byte, string) { return sealed, secret, "job_2" },
		"a changed byte": func() ([]byte, []byte, string) {
			b := bytes.Clone(sealed)
			b[len(sealedMagic)+100] ^= 1
			return b, secret, "job_1"
		},
		"cut at a chunk": func() ([]byte, []byte, string) {
			return sealed[:len(sealedMagic)+2*(sealedChunk+sealedOverhead)], secret, "job_1"
		},
		"swapped chunks": func() ([]byte, []byte, string) {
			b := bytes.Clone(sealed)
			c := sealedChunk + sealedOverhead
			a, z := b[len(sealedMagic):len(sealedMagic)+c], bytes.Clone(b[len(sealedMagic)+c:len(sealedMagic)+2*c])
			copy(b[len(sealedMagic)+c:], a)
			copy(b[len(sealedMagic):], z)
			return b, secret, "job_1"
		},
	}
	for what, f := range bad {
		b, k, n := f()
		if err := open(b, k, n); !errors.Is(err, ErrSealedInvalid) {
			t.Errorf("%s: %v, want ErrSealedInvalid", what, err)
		}
	}
}
