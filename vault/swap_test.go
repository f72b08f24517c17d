package vault_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"svc.dev/svc/vault"
	"svc.dev/svc/vault/vaulttest"
)

// plainMessage is a text/plain message of exactly size bytes (its body is its text).
func plainMessage(seed byte, size int) []byte {
	hdr := fmt.Sprintf("From: a@example.com\r\nSubject: swap %c\r\nContent-Type: text/plain; charset=us-ascii\r\n\r\n", 'A'+seed)
	body := make([]byte, size-len(hdr))
	for i := range body {
		body[i] = 'a' + byte((i*7+int(seed))%26)
		if i%70 == 69 {
			body[i] = '\n'
		}
	}
	return append([]byte(hdr), body...)
}

// swapCase is one layout whose ciphertexts are swapped between two objects of a tenant.
type swapCase struct {
	name       string
	legacy     bool // written in the formats of before (seal versions 1 and 2)
	size       int
	knownHash  bool // the Put names the SHA-256
	wantPacked bool
}

var swapCases = []swapCase{
	{name: "pack entries", size: 5000, wantPacked: true},
	{name: "whole files, digest at end", size: 2<<20 + 100},
	{name: "whole files, digest named by the Put", size: 2<<20 + 100, knownHash: true},
	{name: "legacy pack entries", legacy: true, size: 5000, wantPacked: true},
	{name: "legacy whole files", legacy: true, size: 2<<20 + 100},
}

// swapped puts two contents of one size into one tenant and exchanges their stored
// ciphertexts (content and text copies) on disk: whole files, or the two entries' ranges
// in their pack. It returns the vault, the two objects and their contents, and a function
// that forgets every mark a refused read left (so that each read path meets the swapped
// copy afresh).
func swapped(t *testing.T, c swapCase) (*vault.Vault, [2]vault.Object, [2][]byte, func()) {
	t.Helper()
	dir := t.TempDir()
	meta, keys := vaulttest.NewMeta(), vaulttest.NewKeyStore()
	v, err := vault.Open(dir, meta, keys, vaulttest.KEK, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { v.Close() })
	vault.SetLegacyFormat(v, c.legacy)
	var objs [2]vault.Object
	var datas [2][]byte
	for i := range 2 {
		datas[i] = plainMessage(byte(i), c.size)
		req := vault.PutRequest{Name: fmt.Sprintf("%d.eml", i), MIMEType: "message/rfc822", SizeBytes: int64(c.size)}
		if c.knownHash {
			req.SHA256 = vault.Sum(datas[i])
		}
		objs[i] = put(t, v, tenant, datas[i], req)
	}
	v.Close() // the open pack is closed: the files are what the disk holds
	var blobs [2]vault.Blob
	for i := range 2 {
		if err := meta.View(ctx, tenant, func(tx vault.MetaTx) error {
			var err error
			blobs[i], err = tx.Blob(objs[i].SHA256)
			return err
		}); err != nil {
			t.Fatal(err)
		}
		if blobs[i].Hot.Pack != c.wantPacked {
			t.Fatalf("object %d packed %v, want %v", i, blobs[i].Hot.Pack, c.wantPacked)
		}
	}
	path := func(p *vault.Placement) string { return filepath.Join(dir, "hot", filepath.FromSlash(p.Name)) }
	swap := func(p, q *vault.Placement) {
		if p == nil || q == nil {
			return
		}
		if p.Length != q.Length {
			t.Fatalf("copies of %d and %d bytes", p.Length, q.Length)
		}
		read := func(p *vault.Placement) []byte {
			b, err := os.ReadFile(path(p))
			if err != nil {
				t.Fatal(err)
			}
			return bytes.Clone(b[p.Offset : p.Offset+p.Length])
		}
		write := func(p *vault.Placement, data []byte) {
			b, err := os.ReadFile(path(p))
			if err != nil {
				t.Fatal(err)
			}
			copy(b[p.Offset:], data)
			if err := os.WriteFile(path(p), b, 0o600); err != nil {
				t.Fatal(err)
			}
		}
		pb, qb := read(p), read(q)
		write(p, qb)
		write(q, pb)
	}
	swap(blobs[0].Hot, blobs[1].Hot)
	swap(blobs[0].Text, blobs[1].Text)
	// Reopened in the current mode: old data is read by new code.
	reopen, err := vault.Open(dir, meta, keys, vaulttest.KEK, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { reopen.Close() })
	reset := func() {
		if err := meta.Update(ctx, tenant, func(tx vault.MetaTx) error {
			for i := range 2 {
				if err := tx.PutBlob(blobs[i]); err != nil {
					return err
				}
				if err := tx.PutObject(objs[i]); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	return reopen, objs, datas, reset
}

// Ciphertexts swapped between two objects of one tenant (whole files and pack entries, in
// the bound formats and the old ones) are refused by every read path: nothing of the other
// object's content is served whole, a reader that stops at the known size does not get the
// last byte, an export spool, the search index's text and header reads, Verify and Scrub
// all fail, and the objects end corrupt.
func TestSwappedCiphertextsAreRefused(t *testing.T) {
	for _, c := range swapCases {
		t.Run(c.name, func(t *testing.T) {
			v, objs, datas, reset := swapped(t, c)
			a, b := objs[0], objs[1]
			size := int64(c.size)
			invalid := func(what string, err error) {
				t.Helper()
				if !errors.Is(err, vault.ErrInvalidData) {
					t.Errorf("%s: %v, want ErrInvalidData", what, err)
				}
			}
			// never checks that a consumer did not receive the other object's content whole,
			// nor the last byte of what it was served.
			never := func(what string, got []byte) {
				t.Helper()
				if int64(len(got)) >= size || bytes.Equal(got, datas[1]) {
					t.Errorf("%s: received %d of %d bytes", what, len(got), size)
				}
			}
			paths := []struct {
				name string
				run  func(id string) ([]byte, error)
			}{
				{"Open, read to the end", func(id string) ([]byte, error) { return read(t, v, tenant, id) }},
				{"Open, read the known size", func(id string) ([]byte, error) {
					rc, o, err := v.Open(ctx, tenant, id)
					if err != nil {
						return nil, err
					}
					defer rc.Close()
					return io.ReadAll(io.LimitReader(rc, o.SizeBytes))
				}},
				{"CopyContent (download)", func(id string) ([]byte, error) {
					rc, o, err := v.Open(ctx, tenant, id)
					if err != nil {
						return nil, err
					}
					defer rc.Close()
					var w bytes.Buffer
					_, err = vault.CopyContent(&w, rc, o.SizeBytes)
					return w.Bytes(), err
				}},
				{"Spool (export)", func(id string) ([]byte, error) {
					s, err := v.Spool(ctx, tenant, id, t.TempDir())
					if err != nil {
						return nil, err
					}
					defer s.Close()
					return io.ReadAll(s)
				}},
				{"ReadHead (index)", func(id string) ([]byte, error) {
					h, _, err := v.ReadHead(ctx, tenant, id, 64<<10)
					return h, err
				}},
				{"ReadText (index)", func(id string) ([]byte, error) { return v.ReadText(ctx, tenant, id, 256<<10) }},
				{"OpenText, read to the end", func(id string) ([]byte, error) {
					rc, err := v.OpenText(ctx, tenant, id)
					if err != nil {
						return nil, err
					}
					defer rc.Close()
					return io.ReadAll(rc)
				}},
			}
			for _, p := range paths {
				reset()
				got, err := p.run(a.ID)
				invalid(p.name, err)
				if strings.Contains(p.name, "Text") {
					continue // a text of its own is not the object's content
				}
				never(p.name, got)
				if o, err := v.Get(ctx, tenant, a.ID); err != nil || o.State != vault.StateCorrupt {
					t.Errorf("%s: object after the refused read: %v, %v", p.name, o.State, err)
				}
			}
			reset()
			if o, err := v.Verify(ctx, tenant, a.ID); err != nil || o.State != vault.StateCorrupt {
				t.Errorf("Verify: %v, %v", o.State, err)
			}
			reset()
			rep, err := v.Scrub(ctx, tenant, &vault.ScrubOptions{OrphanGrace: -1})
			if err != nil {
				t.Fatal(err)
			}
			slices.Sort(rep.Corrupt)
			if want := []string{a.ID, b.ID}; !slices.Equal(rep.Corrupt, want) {
				t.Errorf("scrub left corrupt %v, want %v", rep.Corrupt, want)
			}
		})
	}
}
