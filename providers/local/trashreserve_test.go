package local

import (
	"net/url"
	"os"
	"path/filepath"
	"testing"
)

// A trash killed after it reserved a name (wrote the info file) and before it moved the file
// is redone under the same name; an empty reservation (killed before writing it, or another
// trash writing it right now) is left alone and the next name is used.
func TestTrashRetakesItsOwnReservation(t *testing.T) {
	root, trash := t.TempDir(), t.TempDir()
	for _, d := range []string{"files", "info"} {
		os.MkdirAll(filepath.Join(trash, d), 0o700)
	}
	a, b := filepath.Join(root, "a.txt"), filepath.Join(root, "b.txt")
	os.WriteFile(a, []byte("a"), 0o600)
	os.WriteFile(b, []byte("b"), 0o600)
	u := url.URL{Path: a}
	os.WriteFile(filepath.Join(trash, "info", "a.txt.trashinfo"), []byte("[Trash Info]\nPath="+u.EscapedPath()+"\nDeletionDate=2026-11-25T00:00:00\n"), 0o600)
	os.WriteFile(filepath.Join(trash, "info", "b.txt.trashinfo"), nil, 0o600)

	info, err := trashInto(trash, a)
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Base(info) != "a.txt.trashinfo" {
		t.Fatalf("a went to %s, want its own reservation a.txt.trashinfo", info)
	}
	if got, _ := os.ReadFile(filepath.Join(trash, "files", "a.txt")); string(got) != "a" {
		t.Fatalf("files/a.txt holds %q", got)
	}
	info, err = trashInto(trash, b)
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Base(info) != "b.2.txt.trashinfo" {
		t.Fatalf("b went to %s, want b.2.txt.trashinfo (the empty reservation is not ours to take)", info)
	}
	if raw, _ := os.ReadFile(filepath.Join(trash, "info", "b.txt.trashinfo")); len(raw) != 0 {
		t.Fatalf("the empty reservation was changed: %q", raw)
	}
}
