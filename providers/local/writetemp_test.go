package local

import (
	"context"
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
	leftover := filepath.Join(dir, writeTempPrefix+"123")
	if err := os.WriteFile(leftover, []byte("half"), 0o600); err != nil {
		t.Fatal(err)
	}
	live, err := createLockedTemp(dir) // a writer still at work
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
	if _, err := os.Stat(live.Name()); err != nil {
		t.Fatalf("a live writer's temporary file was removed: %v", err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 2 { // a.txt and the live writer's file
		t.Fatalf("directory holds %d entries", len(entries))
	}
}
