package vaultfs_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"

	"svc.dev/svc/providers"
	"svc.dev/svc/providers/providertest"
	"svc.dev/svc/providers/vaultfs"
)

func setup(t testing.TB) (providers.Provider, string) {
	t.Helper()
	dir := t.TempDir()
	p, err := vaultfs.New(context.Background(), providers.Config{"dir": dir})
	if err != nil {
		t.Fatal(err)
	}
	w := p.(providers.Writer)
	for i := range 5 {
		body := bytes.Repeat([]byte(fmt.Sprintf("blob %d\n", i)), 10*(i+1))
		if _, err := w.Write(context.Background(), providers.WriteRequest{SourceRef: "vault", Path: fmt.Sprintf("b%d.txt", i), SizeBytes: -1}, bytes.NewReader(body)); err != nil {
			t.Fatal(err)
		}
	}
	return p, dir
}

func TestConformance(t *testing.T) {
	providertest.Run(t, providertest.Harness{
		Open: func(t testing.TB) (providers.Provider, string) {
			p, _ := setup(t)
			return p, "vault"
		},
		MinObjects: 5,
	})
}

func TestWriteIsIdempotentAndAddressedByDigest(t *testing.T) {
	p, _ := setup(t)
	w := p.(providers.Writer)
	a, err := w.Write(context.Background(), providers.WriteRequest{Path: "x", SizeBytes: -1}, bytes.NewReader([]byte("same")))
	if err != nil {
		t.Fatal(err)
	}
	b, err := w.Write(context.Background(), providers.WriteRequest{Path: "y", SizeBytes: -1}, bytes.NewReader([]byte("same")))
	if err != nil {
		t.Fatal(err)
	}
	if a.ID != b.ID || a.ID != a.SHA256 || a.Version != a.SHA256 {
		t.Fatalf("objects %+v and %+v", a, b)
	}
}

func TestCorruptBlobIsDetected(t *testing.T) {
	p, dir := setup(t)
	page, err := p.List(context.Background(), providers.ListRequest{SourceRef: "vault"})
	if err != nil {
		t.Fatal(err)
	}
	d := page.Objects[0].ID
	if err := os.WriteFile(filepath.Join(dir, "blobs", d[:2], d), []byte("tampered"), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := p.Fetch(context.Background(), providers.FetchRequest{SourceRef: "vault", ObjectID: d})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Body.Close()
	if _, err := io.ReadAll(c.Body); !errors.Is(err, providers.ErrInvalidData) {
		t.Fatalf("reading a tampered blob: %v, want ErrInvalidData", err)
	}
}
