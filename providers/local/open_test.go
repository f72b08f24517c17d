package local

import (
	"io"
	"os"
	"path/filepath"
	"testing"
)

// openFetch gives the information os.Stat gives (and so the same version), and reads like a file.
func TestOpenFetchAgreesWithOS(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "msg:2,S")
	if err := os.WriteFile(p, []byte("Subject: hi\r\n\r\nbody"), 0o640); err != nil {
		t.Fatal(err)
	}
	want, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	f, got, err := openFetch(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if got.Name() != want.Name() || got.Size() != want.Size() || !got.ModTime().Equal(want.ModTime()) || got.Mode() != want.Mode() ||
		got.IsDir() || fileVersion(got) != fileVersion(want) {
		t.Fatalf("openFetch: %s %d %v %v %s; os.Stat: %s %d %v %v %s", got.Name(), got.Size(), got.ModTime(), got.Mode(), fileVersion(got),
			want.Name(), want.Size(), want.ModTime(), want.Mode(), fileVersion(want))
	}
	b := make([]byte, 4)
	if n, err := f.ReadAt(b, 15); n != 4 || err != nil || string(b) != "body" {
		t.Fatalf("ReadAt: %d %v %q", n, err, b)
	}
	if n, err := f.ReadAt(b, 17); n != 2 || err != io.EOF {
		t.Fatalf("ReadAt past the end: %d %v", n, err)
	}
	if _, _, err := openFetch(filepath.Join(dir, "missing")); !os.IsNotExist(err) {
		t.Fatalf("missing file: %v", err)
	}
}
