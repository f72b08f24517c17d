package local

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// The index finds a message where it is now: after another client renamed it (its flags
// changed), after it moved from new/ to cur/, and not at all once it is gone.
func TestMaildirIndexFollowsRenames(t *testing.T) {
	dir := t.TempDir()
	for _, sub := range []string{"cur", "new", "tmp"} {
		os.MkdirAll(filepath.Join(dir, sub), 0o700)
	}
	write := func(rel string) {
		if err := os.WriteFile(filepath.Join(dir, rel), []byte("Subject: x\r\n\r\nbody"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("new/1.a.host")
	write("cur/2.b.host:2,S")
	x := &maildirIndex{dirs: map[string]*indexedMaildir{}}
	find := func(unique, wantRel, wantFlags string) {
		t.Helper()
		m, err := x.find(dir, unique)
		if err != nil {
			t.Fatalf("find %s: %v", unique, err)
		}
		if m.file != filepath.Join(dir, wantRel) || m.flags != wantFlags {
			t.Fatalf("find %s: %s flags %q, want %s flags %q", unique, m.file, m.flags, wantRel, wantFlags)
		}
	}
	find("1.a.host", "new/1.a.host", "")
	find("2.b.host", "cur/2.b.host:2,S", "S")

	// Another client reads the new message and flags the other one.
	os.Rename(filepath.Join(dir, "new/1.a.host"), filepath.Join(dir, "cur/1.a.host:2,S"))
	os.Rename(filepath.Join(dir, "cur/2.b.host:2,S"), filepath.Join(dir, "cur/2.b.host:2,FS"))
	find("1.a.host", "cur/1.a.host:2,S", "S")
	find("2.b.host", "cur/2.b.host:2,FS", "FS")

	// A message delivered after the directory was read is found.
	write("new/3.c.host")
	find("3.c.host", "new/3.c.host", "")

	// A removed one is not.
	os.Remove(filepath.Join(dir, "cur/2.b.host:2,FS"))
	if _, err := x.find(dir, "2.b.host"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("removed message: %v", err)
	}

	// This provider's own rename is remembered.
	to := filepath.Join(dir, "cur/1.a.host:2,ST")
	os.Rename(filepath.Join(dir, "cur/1.a.host:2,S"), to)
	x.moved(dir, "1.a.host", to)
	find("1.a.host", "cur/1.a.host:2,ST", "ST")
}

// Only a bounded number of Maildirs is remembered.
func TestMaildirIndexBounded(t *testing.T) {
	x := &maildirIndex{dirs: map[string]*indexedMaildir{}}
	for i := range 3 * maxIndexedMaildirs {
		x.dir(filepath.Join("/nowhere", string(rune('a'+i))))
	}
	if len(x.dirs) != maxIndexedMaildirs {
		t.Fatalf("%d Maildirs remembered, want %d", len(x.dirs), maxIndexedMaildirs)
	}
}
