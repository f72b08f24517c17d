package vault_test

import (
	"bytes"
	"encoding/hex"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"svc.dev/svc/vault"
	"svc.dev/svc/vault/vaulttest"
)

// goldenObjects is the content of the vaults kept under testdata/: written once by the
// format they are named after, read by every later version of the vault.
func goldenObjects() []struct {
	name, mime string
	data       []byte
} {
	plainMail := []byte("From: a@example.com\r\nTo: b@example.com\r\nSubject: golden plain\r\nContent-Type: text/plain; charset=utf-8\r\n\r\nThe body of a plain message, kept as a range of its content.\r\n")
	htmlMail := []byte("From: a@example.com\r\nSubject: golden html\r\nContent-Type: text/html; charset=utf-8\r\n\r\n<html><body><p>An <b>HTML</b> body whose text is sealed apart.</p></body></html>\r\n")
	bigMail := append([]byte("From: a@example.com\r\nSubject: golden large\r\nContent-Type: text/html\r\n\r\n<p>"), bytes.Repeat([]byte("large html words "), 17000)...)
	return []struct {
		name, mime string
		data       []byte
	}{
		{"plain.eml", "message/rfc822", plainMail},
		{"html.eml", "message/rfc822", htmlMail},
		{"small.bin", "application/octet-stream", payload(101, 5000)},
		{"empty.bin", "application/octet-stream", nil},
		{"large.bin", "application/octet-stream", payload(102, 256<<10+70001)},
		{"large.eml", "message/rfc822", bigMail},
	}
}

// TestWriteGolden writes a golden vault in the current format into the directory
// VAULT_WRITE_GOLDEN names (run by hand when a format changes; the result goes under
// testdata/).
func TestWriteGolden(t *testing.T) {
	dir := os.Getenv("VAULT_WRITE_GOLDEN")
	if dir == "" {
		t.Skip("VAULT_WRITE_GOLDEN not set")
	}
	meta, err := vaulttest.NewFileMeta(filepath.Join(dir, "meta.json"))
	if err != nil {
		t.Fatal(err)
	}
	keys := vaulttest.NewKeyStore()
	v, err := vault.Open(dir, meta, keys, vaulttest.KEK, nil)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, g := range goldenObjects() {
		o := put(t, v, tenant, g.data, vault.PutRequest{Name: g.name, MIMEType: g.mime, SizeBytes: int64(len(g.data))})
		ids = append(ids, o.ID)
	}
	if err := v.Close(); err != nil {
		t.Fatal(err)
	}
	w, err := keys.WrappedKey(ctx, tenant)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "key.hex"), []byte(hex.EncodeToString(w)+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "ids.txt"), []byte(strings.Join(ids, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

// openGolden opens a copy of the golden vault in testdata/name.
func openGolden(t *testing.T, name string) (*vault.Vault, []string) {
	t.Helper()
	src := filepath.Join("testdata", name)
	dir := t.TempDir()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dir, rel), 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dir, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	meta, err := vaulttest.NewFileMeta(filepath.Join(dir, "meta.json"))
	if err != nil {
		t.Fatal(err)
	}
	keyHex, err := os.ReadFile(filepath.Join(dir, "key.hex"))
	if err != nil {
		t.Fatal(err)
	}
	w, err := hex.DecodeString(strings.TrimSpace(string(keyHex)))
	if err != nil {
		t.Fatal(err)
	}
	keys := vaulttest.NewKeyStore()
	keys.Set(tenant, w)
	v, err := vault.Open(dir, meta, keys, vaulttest.KEK, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { v.Close() })
	idsRaw, err := os.ReadFile(filepath.Join(dir, "ids.txt"))
	if err != nil {
		t.Fatal(err)
	}
	return v, strings.Fields(string(idsRaw))
}

// Every golden vault reads: contents and texts open and verify, Verify and Scrub find them
// intact, and the same content put again reuses the stored copy.
func TestGoldenVaultsRead(t *testing.T) {
	dirs, _ := filepath.Glob(filepath.Join("testdata", "format*"))
	if len(dirs) == 0 {
		t.Fatal("no golden vaults under testdata")
	}
	for _, d := range dirs {
		t.Run(filepath.Base(d), func(t *testing.T) {
			v, ids := openGolden(t, filepath.Base(d))
			objs := goldenObjects()
			if len(ids) != len(objs) {
				t.Fatalf("%d ids for %d objects", len(ids), len(objs))
			}
			for i, g := range objs {
				got, err := read(t, v, tenant, ids[i])
				if err != nil || !bytes.Equal(got, g.data) {
					t.Fatalf("%s: read %d bytes: %v", g.name, len(got), err)
				}
				if strings.HasSuffix(g.name, ".eml") {
					rc, err := v.OpenText(ctx, tenant, ids[i])
					if err != nil {
						t.Fatalf("%s: text: %v", g.name, err)
					}
					text, err := io.ReadAll(rc)
					rc.Close()
					if err != nil || len(text) == 0 {
						t.Fatalf("%s: text %q: %v", g.name, text, err)
					}
				}
				if _, err := v.Verify(ctx, tenant, ids[i]); err != nil {
					t.Fatalf("%s: verify: %v", g.name, err)
				}
			}
			rep, err := v.Scrub(ctx, tenant, nil)
			if err != nil || len(rep.Corrupt) != 0 {
				t.Fatalf("scrub %+v: %v", rep, err)
			}
			before := v.Stats().DurableWrites
			for _, g := range objs {
				put(t, v, tenant, g.data, vault.PutRequest{Name: "again-" + g.name, MIMEType: g.mime, SizeBytes: int64(len(g.data))})
			}
			if w := v.Stats().DurableWrites - before; w != 0 {
				t.Errorf("putting the golden contents again wrote %d times, want 0 (reuse)", w)
			}
		})
	}
}
