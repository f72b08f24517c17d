package local

import (
	"bytes"
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"testing"

	"svc.dev/svc/vault/backend"
)

// OpenMedium reads exactly the range asked for, at any offset and length (aligned blocks
// around it are read and trimmed), in one block or through the direct reader.
func TestOpenMediumRanges(t *testing.T) {
	ctx := context.Background()
	b, err := New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("medium: %q", b.Medium())
	data := make([]byte, 5<<20+123)
	rand.NewChaCha8([32]byte{9}).Read(data)
	f, err := b.Create(ctx)
	if err != nil {
		t.Fatal(err)
	}
	f.Write(data)
	if err := f.Commit(ctx, "f"); err != nil {
		t.Fatal(err)
	}
	for _, r := range [][2]int64{{0, 0}, {0, 1}, {1, 4095}, {4095, 2}, {4096, 4096}, {100, 9000}, {12345, directBuf}, {3, directBuf + 5000}, {7, 5 << 20}, {0, -1}, {5 << 20, -1}} {
		rc, err := b.OpenMedium(ctx, "f", r[0], r[1])
		if err != nil {
			t.Fatalf("range %v: %v", r, err)
		}
		got, err := io.ReadAll(rc)
		rc.Close()
		end := r[0] + r[1]
		if r[1] < 0 {
			end = int64(len(data))
		}
		if err != nil || !bytes.Equal(got, data[r[0]:end]) {
			t.Fatalf("range %v: %d bytes, %v", r, len(got), err)
		}
	}
	if _, err := b.OpenMedium(ctx, "missing", 0, 10); !errors.Is(err, backend.ErrNotFound) {
		t.Fatalf("a missing file: %v", err)
	}
}
