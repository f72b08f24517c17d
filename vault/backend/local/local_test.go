package local_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"svc.dev/svc/vault/backend"
	"svc.dev/svc/vault/backend/backendtest"
	"svc.dev/svc/vault/backend/local"
)

func TestConformance(t *testing.T) {
	backendtest.Run(t, func(t testing.TB) backend.Backend {
		b, err := local.New(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		return b
	})
}

// A crash between Create and Commit leaves a temporary file: it is never
// listed and the next New removes it.
func TestCrashLeavesOnlyTemporaryFiles(t *testing.T) {
	dir := t.TempDir()
	b, err := local.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	f, err := b.Create(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write([]byte("half written")); err != nil {
		t.Fatal(err)
	}
	// The process dies here: no Commit, no Abort.
	left, _ := os.ReadDir(filepath.Join(dir, "tmp"))
	if len(left) != 1 {
		t.Fatalf("%d temporary files", len(left))
	}
	n := 0
	if err := b.List(context.Background(), "", func(backend.Info) error { n++; return nil }); err != nil || n != 0 {
		t.Fatalf("listed %d files (%v)", n, err)
	}
	if _, err := local.New(dir); err != nil {
		t.Fatal(err)
	}
	if left, _ := os.ReadDir(filepath.Join(dir, "tmp")); len(left) != 0 {
		t.Fatalf("reopening left %d temporary files", len(left))
	}
}
