package vault_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"svc.dev/svc/providers"
	"svc.dev/svc/providers/providertest"
	"svc.dev/svc/providers/vaultfs"
	"svc.dev/svc/vault"
	"svc.dev/svc/vault/backend"
	"svc.dev/svc/vault/backend/local"
	"svc.dev/svc/vault/vaulttest"
)

const message = "From: billing@example.com\r\nTo: me@example.com\r\nSubject: Your invoice\r\n" +
	"MIME-Version: 1.0\r\nContent-Type: multipart/alternative; boundary=b\r\n\r\n" +
	"--b\r\nContent-Type: text/plain; charset=utf-8\r\n\r\nYour invoice total is 42 EUR.\r\n" +
	"--b\r\nContent-Type: text/html\r\n\r\n<p>Your <b>invoice</b></p>\r\n--b--\r\n"

func readText(t *testing.T, v *vault.Vault, id string) (string, error) {
	t.Helper()
	r, err := v.OpenText(ctx, tenant, id)
	if err != nil {
		return "", err
	}
	defer r.Close()
	b, err := io.ReadAll(r)
	return string(b), err
}

func TestTextExtraction(t *testing.T) {
	v := vaulttest.Open(t, &vault.Options{PackThreshold: 1024})
	big := "<html><body>" + strings.Repeat("<p>long   page &amp; more</p>", 2000) + "</body></html>"
	for _, c := range []struct {
		name, mime, kind, body, want string
		hasText                      bool
	}{
		{"message", "message/rfc822", "", message, "Your invoice total is 42 EUR.", true},
		{"message by kind", "", "message", message, "Your invoice total is 42 EUR.", true},
		{"html", "text/html", "", "<h1>Title</h1><p>Body &amp; text</p>", "Title\n\nBody & text", true},
		{"large html", "text/html", "", big, "long page & more", true},
		{"plain text is its own text", "text/plain", "", "just text", "just text", true},
		{"binary", "image/png", "", "\x89PNG....", "", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			o := put(t, v, tenant, []byte(c.body), vault.PutRequest{MIMEType: c.mime, Kind: c.kind})
			if o.HasText != c.hasText {
				t.Fatalf("has_text %v", o.HasText)
			}
			got, err := readText(t, v, o.ID)
			if !c.hasText {
				if !errors.Is(err, vault.ErrNotFound) {
					t.Fatalf("text of binary content: %v", err)
				}
				return
			}
			if err != nil || !strings.Contains(got, c.want) {
				t.Fatalf("text %.80q, %v", got, err)
			}
		})
	}
}

func TestKeys(t *testing.T) {
	dir := t.TempDir()
	meta, keys := vaulttest.NewMeta(), vaulttest.NewKeyStore()
	old := vault.KEK{9}
	v, err := vault.Open(dir, meta, keys, old, nil)
	if err != nil {
		t.Fatal(err)
	}
	o := put(t, v, tenant, []byte("kept under the old key"), vault.PutRequest{})
	v.Close()
	// After a rotation the previous KEK still unwraps the tenant's key.
	v, err = vault.Open(dir, meta, keys, vault.KEK{10}, &vault.Options{PreviousKEKs: []vault.KEK{old}})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := read(t, v, tenant, o.ID); err != nil || string(got) != "kept under the old key" {
		t.Fatalf("read after rotation: %v", err)
	}
	v.Close()
	// Without it, the tenant's content is unavailable, not garbage.
	v, err = vault.Open(dir, meta, keys, vault.KEK{10}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := v.Open(ctx, tenant, o.ID); !errors.Is(err, vault.ErrKeyUnavailable) {
		t.Fatalf("read without the KEK: %v", err)
	}
	v.Close()
	// A tenant's wrapped key does not unwrap for another tenant.
	w, _ := keys.WrappedKey(ctx, tenant)
	keys.Set("live:usr_other", w)
	v, _ = vault.Open(dir, meta, keys, old, nil)
	defer v.Close()
	if _, err := v.Put(ctx, "live:usr_other", vault.PutRequest{SizeBytes: -1}, strings.NewReader("x")); !errors.Is(err, vault.ErrKeyUnavailable) {
		t.Fatalf("a key moved to another tenant: %v", err)
	}
}

func TestDigest(t *testing.T) {
	d := vault.Sum([]byte("abc"))
	if d.String() != "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad" {
		t.Fatal(d)
	}
	p, err := vault.ParseDigest(strings.ToUpper(d.String()))
	if err != nil || p != d {
		t.Fatalf("parse: %v", err)
	}
	for _, bad := range []string{"", "ab", strings.Repeat("g", 64), d.String() + "0"} {
		if _, err := vault.ParseDigest(bad); !errors.Is(err, vault.ErrInvalidArgument) {
			t.Errorf("ParseDigest(%q): %v", bad, err)
		}
	}
	text, _ := d.MarshalText()
	var back vault.Digest
	if err := back.UnmarshalText(text); err != nil || back != d {
		t.Fatalf("text round trip: %v", err)
	}
}

func TestStateTransitions(t *testing.T) {
	// The spec's states, and no way out of deleted.
	if len(vault.States) != 7 {
		t.Fatal(vault.States)
	}
	for _, s := range vault.States {
		if s.Proto().String() == "VAULT_OBJECT_STATE_UNSPECIFIED" {
			t.Errorf("%s has no API enum", s)
		}
		if vault.CanTransition(vault.StateDeleted, s) {
			t.Errorf("deleted -> %s", s)
		}
	}
	for _, bad := range [][2]vault.State{{vault.StateUploading, vault.StateCommitted}, {vault.StateCommitted, vault.StateUploading}, {vault.StateCold, vault.StateUploading}} {
		if vault.CanTransition(bad[0], bad[1]) {
			t.Errorf("%s -> %s is allowed", bad[0], bad[1])
		}
	}
}

func TestInvalidState(t *testing.T) {
	v := vaulttest.Open(t, nil)
	o := put(t, v, tenant, []byte("x"), vault.PutRequest{})
	if _, err := v.Delete(ctx, tenant, o.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := v.Delete(ctx, tenant, o.ID); err != nil {
		t.Fatalf("deleting twice: %v", err)
	}
	var te *vault.TransitionError
	if _, err := v.Cold(ctx, tenant, o.ID); !errors.As(err, &te) || !errors.Is(err, vault.ErrInvalidState) {
		t.Fatalf("cold of a deleted object: %v", err)
	}
	if _, _, err := v.Open(ctx, tenant, o.ID); !errors.Is(err, vault.ErrInvalidState) {
		t.Fatalf("open a deleted object: %v", err)
	}
	if _, err := v.Put(ctx, tenant, vault.PutRequest{ID: "nope", SizeBytes: -1}, strings.NewReader("x")); !errors.Is(err, vault.ErrInvalidArgument) {
		t.Fatalf("put with a bad id: %v", err)
	}
	if _, err := v.Get(ctx, tenant, "vlt_01JD0000000000000000000000"); !errors.Is(err, vault.ErrNotFound) {
		t.Fatalf("get a missing object: %v", err)
	}
}

// flaky corrupts what it stores: every committed or saved file gets one
// byte flipped, as a failing disk or a lying object store would.
type flaky struct {
	backend.Backend
}

type flakyFile struct {
	backend.File
	n int
}

func (f *flaky) Create(ctx context.Context) (backend.File, error) {
	inner, err := f.Backend.Create(ctx)
	return &flakyFile{File: inner}, err
}

func (f *flakyFile) Write(p []byte) (int, error) {
	q := bytes.Clone(p)
	if f.n <= 100 && f.n+len(q) > 100 {
		q[100-f.n] ^= 0x40
	}
	f.n += len(p)
	return f.File.Write(q)
}

func (f *flaky) Save(ctx context.Context, name string, data []byte) error {
	return backend.Save(ctx, f.Backend, name, append(bytes.Clone(data[:len(data)-1]), data[len(data)-1]^1))
}

// Nothing is committed whose stored bytes do not read back as the content.
func TestNoCommitWithoutVerifiedContent(t *testing.T) {
	hot, err := local.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	v := vaulttest.Open(t, &vault.Options{Hot: &flaky{hot}})
	for _, size := range []int{4096, 1 << 20} {
		o, err := v.Put(ctx, tenant, vault.PutRequest{SizeBytes: -1}, bytes.NewReader(payload(3, size)))
		if !errors.Is(err, vault.ErrInvalidData) {
			t.Fatalf("size %d: put over a corrupting backend: %+v, %v", size, o, err)
		}
	}
	all, _, _ := v.List(ctx, tenant, "", 100, nil)
	for _, o := range all {
		if o.State == vault.StateCommitted {
			t.Fatalf("%s committed", o.ID)
		}
	}
	if len(all) != 1 || all[0].State != vault.StateCorrupt {
		// The streamed object was recorded (uploading) and failed its
		// read back; the small one never got a record.
		t.Fatalf("records %+v", all)
	}
}

// A metadata commit that fails commits nothing, and its files are
// collected.
func TestFailedMetaCommit(t *testing.T) {
	dir := t.TempDir()
	meta := vaulttest.NewMeta()
	v, err := vault.Open(dir, meta, vaulttest.NewKeyStore(), vaulttest.KEK, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	put(t, v, tenant, []byte("ok"), vault.PutRequest{}) // creates the key
	// A group commit fails in its one transaction, after its pack was
	// written; a streamed Put fails in its last (the third: uploading,
	// verifying, committed), after its content was written.
	for _, c := range []struct{ size, failAt int }{{10, 1}, {1 << 20, 3}} {
		n := 0
		meta.BeforeCommit = func(string) error {
			if n++; n == c.failAt {
				return errors.New("disk full")
			}
			return nil
		}
		o, err := v.Put(ctx, tenant, vault.PutRequest{SizeBytes: -1}, bytes.NewReader(payload(9, c.size)))
		if err == nil {
			t.Fatalf("put succeeded with a failing metadata store: %+v", o)
		}
	}
	meta.BeforeCommit = nil
	all, _, _ := v.List(ctx, tenant, "", 10, nil)
	for _, o := range all[1:] {
		if o.State != vault.StateVerifying {
			t.Errorf("after a failed commit: %+v", o)
		}
	}
	n, _, err := v.Collect(ctx, tenant, -time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if n == 0 {
		t.Error("no orphan collected")
	}
	rep, err := v.Scrub(ctx, tenant, &vault.ScrubOptions{OrphanGrace: -1})
	if err != nil || len(rep.Corrupt) != 0 {
		t.Fatalf("scrub: %+v, %v", rep, err)
	}
}

func TestScrubFindsAndRepairs(t *testing.T) {
	dir := t.TempDir()
	meta := vaulttest.NewMeta()
	v, err := vault.Open(dir, meta, vaulttest.NewKeyStore(), vaulttest.KEK, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	data := payload(5, 1<<20)
	a := put(t, v, tenant, data, vault.PutRequest{})
	b := put(t, v, tenant, data, vault.PutRequest{})
	small := put(t, v, tenant, []byte("small"), vault.PutRequest{})
	if _, err := v.Cold(ctx, tenant, b.ID); err != nil { // both tiers hold the content now
		t.Fatal(err)
	}
	var blob vault.Blob
	meta.View(ctx, tenant, func(tx vault.MetaTx) error { blob, err = tx.Blob(a.SHA256); return err })
	hotFile := filepath.Join(dir, "hot", filepath.FromSlash(blob.Hot.Name))
	raw, _ := os.ReadFile(hotFile)
	raw[len(raw)/2] ^= 1
	os.WriteFile(hotFile, raw, 0o600)
	if _, err := read(t, v, tenant, a.ID); !errors.Is(err, vault.ErrInvalidData) {
		t.Fatalf("reading damaged content: %v", err)
	}
	if got, err := read(t, v, tenant, b.ID); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("the cold twin: %v", err)
	}
	// The small object's pack loses a byte too.
	meta.View(ctx, tenant, func(tx vault.MetaTx) error { blob, err = tx.Blob(small.SHA256); return err })
	packFile := filepath.Join(dir, "hot", filepath.FromSlash(blob.Hot.Name))
	raw, _ = os.ReadFile(packFile)
	raw[blob.Hot.Offset+blob.Hot.Length-1] ^= 1
	os.WriteFile(packFile, raw, 0o600)

	rep, err := v.Scrub(ctx, tenant, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Repaired) != 1 || rep.Repaired[0] != a.ID || len(rep.Corrupt) != 1 || rep.Corrupt[0] != small.ID {
		t.Fatalf("scrub: %+v", rep)
	}
	if got, err := read(t, v, tenant, a.ID); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("repaired object: %v", err)
	}
	if o, _ := v.Get(ctx, tenant, small.ID); o.State != vault.StateCorrupt || o.Reason == "" {
		t.Fatalf("small object %+v", o)
	}
	// Preserving the same content again repairs it.
	put(t, v, tenant, []byte("small"), vault.PutRequest{})
	if o, err := v.Verify(ctx, tenant, small.ID); err != nil || o.State != vault.StateCommitted {
		t.Fatalf("after a fresh copy: %+v, %v", o, err)
	}
}

func TestColdTier(t *testing.T) {
	dir := t.TempDir()
	v, err := vault.Open(dir, vaulttest.NewMeta(), vaulttest.NewKeyStore(), vaulttest.KEK, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	for _, data := range [][]byte{payload(1, 100), payload(2, 2<<20)} {
		o := put(t, v, tenant, data, vault.PutRequest{})
		c, err := v.Cold(ctx, tenant, o.ID)
		if err != nil || c.State != vault.StateCold || c.ColdSince.IsZero() {
			t.Fatalf("cold: %+v, %v", c, err)
		}
		if mv := c.ManifestVault(); mv.GetStorageClass().String() != "VAULT_STORAGE_CLASS_INFREQUENT_ACCESS" || mv.GetSha256() != o.SHA256.String() {
			t.Fatalf("manifest vault %v", mv)
		}
		if got, err := read(t, v, tenant, o.ID); err != nil || !bytes.Equal(got, data) {
			t.Fatalf("cold read: %v", err)
		}
		if w, err := v.Warm(ctx, tenant, o.ID); err != nil || w.State != vault.StateCommitted {
			t.Fatalf("warm: %+v, %v", w, err)
		}
		if got, err := read(t, v, tenant, o.ID); err != nil || !bytes.Equal(got, data) {
			t.Fatalf("warm read: %v", err)
		}
	}
	// Nothing is left on the cold tier once nothing is cold.
	n := 0
	filepath.Walk(filepath.Join(dir, "cold", "t"), func(_ string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() {
			n++
		}
		return nil
	})
	if n != 0 {
		t.Errorf("%d files left on the cold tier", n)
	}
}

// The svc_vault provider passes the provider conformance suite over the
// real vault.
func TestProviderStore(t *testing.T) {
	providertest.Run(t, providertest.Harness{
		Open: func(t testing.TB) (providers.Provider, string) {
			v := vaulttest.Open(t, nil)
			p := vaultfs.NewWithStore(v.ProviderStore(tenant))
			for i := range 5 {
				body := bytes.Repeat([]byte{byte('a' + i)}, 100*(i+1))
				if _, err := p.Write(ctx, providers.WriteRequest{SourceRef: "vault", Path: "b.txt", SizeBytes: -1}, bytes.NewReader(body)); err != nil {
					t.Fatal(err)
				}
			}
			return p, "vault"
		},
		MinObjects: 5,
	})
}

func TestProviderStoreVerifiesReads(t *testing.T) {
	dir := t.TempDir()
	meta := vaulttest.NewMeta()
	v, err := vault.Open(dir, meta, vaulttest.NewKeyStore(), vaulttest.KEK, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	data := payload(4, 1<<20)
	o := put(t, v, tenant, data, vault.PutRequest{})
	var blob vault.Blob
	meta.View(ctx, tenant, func(tx vault.MetaTx) error { blob, err = tx.Blob(o.SHA256); return err })
	f := filepath.Join(dir, "hot", filepath.FromSlash(blob.Hot.Name))
	raw, _ := os.ReadFile(f)
	raw[len(raw)-1] ^= 1
	os.WriteFile(f, raw, 0o600)
	c, err := vaultfs.NewWithStore(v.ProviderStore(tenant)).Fetch(ctx, providers.FetchRequest{SourceRef: "vault", ObjectID: o.SHA256.String()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Body.Close()
	if _, err := io.ReadAll(c.Body); !errors.Is(err, providers.ErrInvalidData) || !errors.Is(err, vault.ErrInvalidData) {
		t.Fatalf("reading a damaged blob through the provider: %v", err)
	}
}

// A plain-text message's text is its body: it is read from the content (verified as a
// whole), not stored a second time, and it reads exactly as extraction would give it.
func TestTextInPlace(t *testing.T) {
	dir := t.TempDir()
	meta := vaulttest.NewMeta()
	v, err := vault.Open(dir, meta, vaulttest.NewKeyStore(), vaulttest.KEK, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	const body = "Hello,\r\nthe meeting moved to Tuesday.\r\n"
	msg := "From: ann@example.com\r\nTo: me@example.com\r\nSubject: moved\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n" + body
	o := put(t, v, tenant, []byte(msg), vault.PutRequest{MIMEType: "message/rfc822"})
	if !o.HasText {
		t.Fatal("no text")
	}
	if got, err := readText(t, v, o.ID); err != nil || got != body {
		t.Fatalf("text %q, %v", got, err)
	}
	var b vault.Blob
	if err := meta.View(ctx, tenant, func(tx vault.MetaTx) error { b, err = tx.Blob(o.SHA256); return err }); err != nil {
		t.Fatal(err)
	}
	if b.Text != nil || b.TextRange != (vault.Range{Offset: int64(len(msg) - len(body)), Length: int64(len(body))}) {
		t.Fatalf("text stored as %+v, range %+v", b.Text, b.TextRange)
	}
	// Damage the stored content: its text no longer reads.
	packs, _ := filepath.Glob(filepath.Join(dir, "hot", "t", "*", "packs", "*"))
	if len(packs) != 1 {
		t.Fatalf("packs %v", packs)
	}
	raw, err := os.ReadFile(packs[0])
	if err != nil {
		t.Fatal(err)
	}
	raw[len(raw)-20] ^= 1
	if err := os.WriteFile(packs[0], raw, 0o600); err != nil {
		t.Fatal(err)
	}
	if got, err := readText(t, v, o.ID); !errors.Is(err, vault.ErrInvalidData) {
		t.Fatalf("text of damaged content: %q, %v", got, err)
	}
}
