package atomicfile

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestWriteReplacesAndCreateRefuses(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "key")
	if err := Create(p, []byte("one"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := Create(p, []byte("two"), 0o600); !errors.Is(err, ErrExist) {
		t.Fatalf("second Create: %v, want ErrExist", err)
	}
	if err := Write(p, []byte("three"), 0o640); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(p)
	if err != nil || string(got) != "three" {
		t.Fatalf("read %q, %v", got, err)
	}
	fi, _ := os.Stat(p)
	if fi.Mode().Perm() != 0o640 {
		t.Fatalf("mode %v", fi.Mode())
	}
	left, _ := os.ReadDir(dir)
	if len(left) != 1 {
		t.Fatalf("temporary files left: %v", left)
	}
}
