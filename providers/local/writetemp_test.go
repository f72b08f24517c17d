package local

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"svc.dev/svc/providers"
)

// A write killed midway leaves an unlocked temporary file: the next provider instance that
// writes into its directory removes it, but never one a live writer holds, and listings never
// show either.
func TestWriteTemporariesAreSweptAndHidden(t *testing.T) {
	root := t.TempDir()
	ctx := context.Background()
	dir := filepath.Join(root, "out")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	leftover := filepath.Join(dir, writeTempPrefix+"0123456789abcdef0123456789abcdef"+writeTempSuffix)
	if err := os.WriteFile(leftover, []byte("half"), 0o600); err != nil {
		t.Fatal(err)
	}
	r, err := os.OpenRoot(root)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	live, liveName, err := createLockedTemp(r, "out") // a writer still at work
	if err != nil {
		t.Fatal(err)
	}
	defer live.Close()

	p, err := New(ctx, providers.Config{"root": root})
	if err != nil {
		t.Fatal(err)
	}
	page, err := p.List(ctx, providers.ListRequest{PageSize: 100})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range page.Objects {
		if strings.Contains(o.ID, writeTempPrefix) {
			t.Fatalf("a write's temporary file is listed: %s", o.ID)
		}
	}
	w, _ := providers.AsWriter(p)
	if _, err := w.Write(ctx, providers.WriteRequest{Path: "out/a.txt", SizeBytes: -1}, strings.NewReader("a")); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(leftover); !os.IsNotExist(err) {
		t.Fatalf("the leftover of a killed write is still there: %v", err)
	}
	if _, err := os.Stat(filepath.Join(root, liveName)); err != nil {
		t.Fatalf("a live writer's temporary file was removed: %v", err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 2 { // a.txt and the live writer's file
		t.Fatalf("directory holds %d entries", len(entries))
	}
}

// A user's own file whose name merely starts like a temporary (".svc-write-notes.txt") is
// listed like any file and survives writes into its folder.
func TestUserFilesNamedLikeTemporariesAreKept(t *testing.T) {
	root := t.TempDir()
	ctx := context.Background()
	mine := filepath.Join(root, ".svc-write-notes.txt")
	if err := os.WriteFile(mine, []byte("my notes"), 0o600); err != nil {
		t.Fatal(err)
	}
	p, err := New(ctx, providers.Config{"root": root})
	if err != nil {
		t.Fatal(err)
	}
	page, err := p.List(ctx, providers.ListRequest{PageSize: 100})
	if err != nil {
		t.Fatal(err)
	}
	listed := false
	for _, o := range page.Objects {
		listed = listed || o.ID == ".svc-write-notes.txt"
	}
	if !listed {
		t.Fatal("the user's .svc-write-notes.txt is not listed, so it would never be preserved")
	}
	w, _ := providers.AsWriter(p)
	if _, err := w.Write(ctx, providers.WriteRequest{Path: "a.txt", SizeBytes: -1}, strings.NewReader("a")); err != nil {
		t.Fatal(err)
	}
	if data, err := os.ReadFile(mine); err != nil || string(data) != "my notes" {
		t.Fatalf("the user's file after a write: %q, %v", data, err)
	}
}

// A write through a symbolic link in the folder (linkdir -> a directory elsewhere) is
// refused, and nothing is written outside the folder.
func TestWriteNeverFollowsLinksOutOfTheFolder(t *testing.T) {
	root, elsewhere := t.TempDir(), t.TempDir()
	ctx := context.Background()
	if err := os.Symlink(elsewhere, filepath.Join(root, "linkdir")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(elsewhere, "target.txt"), filepath.Join(root, "linkfile.txt")); err != nil {
		t.Fatal(err)
	}
	p, err := New(ctx, providers.Config{"root": root})
	if err != nil {
		t.Fatal(err)
	}
	w, _ := providers.AsWriter(p)
	for _, path := range []string{"linkdir/x.txt", "linkdir/deeper/x.txt", "linkfile.txt"} {
		_, err := w.Write(ctx, providers.WriteRequest{Path: path, SizeBytes: -1, Overwrite: true}, strings.NewReader("x"))
		if !errors.Is(err, providers.ErrInvalidArgument) {
			t.Errorf("write %s: %v, want ErrInvalidArgument", path, err)
		}
	}
	if entries, _ := os.ReadDir(elsewhere); len(entries) != 0 {
		t.Fatalf("a write escaped the folder: %d entries elsewhere", len(entries))
	}
}

// Errors say what failed without the host path of the user's folder: they reach executions,
// receipts and API responses.
func TestWriteErrorsHideHostPaths(t *testing.T) {
	root := t.TempDir()
	ctx := context.Background()
	if err := os.WriteFile(filepath.Join(root, "a"), []byte("a file, not a folder"), 0o600); err != nil {
		t.Fatal(err)
	}
	p, err := New(ctx, providers.Config{"root": root})
	if err != nil {
		t.Fatal(err)
	}
	w, _ := providers.AsWriter(p)
	_, err = w.Write(ctx, providers.WriteRequest{Path: "a/b.txt", SizeBytes: -1}, strings.NewReader("x"))
	if err == nil {
		t.Fatal("a write under a file succeeded")
	}
	if strings.Contains(err.Error(), root) {
		t.Fatalf("the error names the host path: %v", err)
	}
}

// An export of an object named exactly like svc's temporaries (".svc-write-" + 32 hex +
// ".tmp") used to be written, reported verified, and then deleted by the next write's sweep
// (issue 27, finding 7). Such a path is refused, and nothing is left under that name.
func TestWriteRefusesTheTemporaryNameForm(t *testing.T) {
	root := t.TempDir()
	ctx := context.Background()
	p, err := New(ctx, providers.Config{"root": root})
	if err != nil {
		t.Fatal(err)
	}
	w, _ := providers.AsWriter(p)
	for _, path := range []string{".svc-write-0123456789abcdef0123456789abcdef.tmp", "dir/.svc-write-0123456789abcdef0123456789abcdef.tmp",
		".svc-write-0123456789abcdef0123456789abcdef.tmp/inside.txt"} {
		_, err := w.Write(ctx, providers.WriteRequest{Path: path, SizeBytes: -1}, strings.NewReader("exported"))
		if !errors.Is(err, providers.ErrInvalidArgument) {
			t.Errorf("write %s: %v, want ErrInvalidArgument", path, err)
		}
		if _, err := os.Lstat(filepath.Join(root, filepath.FromSlash(path))); err == nil {
			t.Errorf("%s was written", path)
		}
	}
	// A name that only starts like one is an ordinary name.
	if _, err := w.Write(ctx, providers.WriteRequest{Path: ".svc-write-notes.txt", SizeBytes: -1}, strings.NewReader("n")); err != nil {
		t.Fatal(err)
	}
}
