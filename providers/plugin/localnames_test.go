package plugin_test

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"svc.dev/svc/providers"
	"svc.dev/svc/providers/plugin"
)

// TestLocalNamesThroughThePlugin: a local folder holding files named with a newline, control
// characters, invalid UTF-8, a leading dash, a 255-byte name and one like svc's temporary
// files lists whole through the plugin boundary (the host's checks refused the whole page
// before: a 502 for every plan over the folder, issue 21 item 7), and each listed object
// fetches.
func TestLocalNamesThroughThePlugin(t *testing.T) {
	t.Parallel() // its own plugin process
	root, trash := t.TempDir(), t.TempDir()
	src := filepath.Join(root, "src")
	names := []string{"plain.txt", "new\nline.txt", "bell\a\x1b[31m.txt", "latin1-caf\xe9.txt", "-rf", "--help",
		strings.Repeat("n", 255), "%41", "\xff\xfe", ".svc-write-notes.txt"}
	if err := os.MkdirAll(filepath.Join(src, "dir\nwith\tcontrols"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		if err := os.WriteFile(filepath.Join(src, n), []byte("content of "+n), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(src, "dir\nwith\tcontrols", "in\x01side"), []byte("inside"), 0o644); err != nil {
		t.Fatal(err)
	}
	pl := newPlugin(t, providers.VendorDLocal, "local", &plugin.Options{CallTimeout: 30 * time.Second})
	p := open(t, pl, providers.Config{"root": root, "trash_dir": trash})
	ctx := context.Background()
	var got []providers.Object
	token := ""
	for {
		page, err := p.List(ctx, providers.ListRequest{SourceRef: "src", PageToken: token, PageSize: 2})
		if err != nil {
			t.Fatalf("listing through the plugin: %v", err)
		}
		got = append(got, page.Objects...)
		if token = page.NextPageToken; token == "" {
			break
		}
	}
	if len(got) != len(names)+1 {
		var ids []string
		for _, o := range got {
			ids = append(ids, o.ID)
		}
		t.Fatalf("listed %d objects, want %d: %q", len(got), len(names)+1, ids)
	}
	var ids []string
	for _, o := range got {
		ids = append(ids, o.ID)
		c, err := p.Fetch(ctx, providers.FetchRequest{SourceRef: "src", ObjectID: o.ID, ExpectedVersion: o.Version})
		if err != nil {
			t.Fatalf("fetch %q: %v", o.ID, err)
		}
		b, err := io.ReadAll(c.Body)
		c.Body.Close()
		if err != nil || !strings.HasPrefix(string(b), "content of ") && string(b) != "inside" {
			t.Fatalf("fetch %q: %q, %v", o.ID, b, err)
		}
	}
	for _, want := range []string{"%new%0Aline.txt", "%latin1-caf%E9.txt", "-rf", "%%2541", "%dir%0Awith%09controls/%in%01side"} {
		if !slices.Contains(ids, want) {
			t.Errorf("%q not listed: %q", want, ids)
		}
	}
}
