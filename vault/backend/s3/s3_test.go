package s3_test

import (
	"bytes"
	"context"
	"io"
	"testing"
	"time"

	"svc.dev/svc/internal/versitygw"
	"svc.dev/svc/vault/backend"
	"svc.dev/svc/vault/backend/backendtest"
	"svc.dev/svc/vault/backend/s3"
)

func TestConformance(t *testing.T) {
	srv := versitygw.Start(t)
	backendtest.Run(t, func(t testing.TB) backend.Backend {
		b, err := s3.New(context.Background(), s3.Config{
			Endpoint: srv.Endpoint, AccessKey: srv.AccessKey, SecretKey: srv.SecretKey,
			Bucket: srv.Bucket(t, nil), Prefix: "vault", PartSize: 5 << 20,
		})
		if err != nil {
			t.Fatal(err)
		}
		return b
	})
}

// A crash between the upload and Commit leaves an object under tmp/: it
// is never listed, and CleanTemp removes it.
func TestCleanTemp(t *testing.T) {
	srv := versitygw.Start(t)
	ctx := context.Background()
	bucket := srv.Bucket(t, map[string]string{"v/tmp/leftover": "interrupted upload"})
	b, err := s3.New(ctx, s3.Config{Endpoint: srv.Endpoint, AccessKey: srv.AccessKey, SecretKey: srv.SecretKey, Bucket: bucket, Prefix: "v/"})
	if err != nil {
		t.Fatal(err)
	}
	listed := 0
	b.List(ctx, "", func(backend.Info) error { listed++; return nil })
	if listed != 0 {
		t.Errorf("%d objects listed", listed)
	}
	if n, err := b.CleanTemp(ctx, time.Hour); err != nil || n != 0 {
		t.Fatalf("a fresh temporary object was removed (%d, %v)", n, err)
	}
	if n, err := b.CleanTemp(ctx, -time.Hour); err != nil || n != 1 {
		t.Fatalf("removed %d temporary objects (%v), want 1", n, err)
	}
}

// A streamed file larger than a part is a multipart upload.
func TestMultipart(t *testing.T) {
	srv := versitygw.Start(t)
	ctx := context.Background()
	b, err := s3.New(ctx, s3.Config{Endpoint: srv.Endpoint, AccessKey: srv.AccessKey, SecretKey: srv.SecretKey, Bucket: srv.Bucket(t, nil), PartSize: 5 << 20})
	if err != nil {
		t.Fatal(err)
	}
	data := bytes.Repeat([]byte("0123456789abcdef"), 12<<20/16+3)
	f, err := b.Create(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for p := data; len(p) > 0; {
		n := min(len(p), 100_000)
		if _, err := f.Write(p[:n]); err != nil {
			t.Fatal(err)
		}
		p = p[n:]
	}
	if err := f.Commit(ctx, "big"); err != nil {
		t.Fatal(err)
	}
	r, err := b.Open(ctx, "big", 6<<20, 10)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(r)
	r.Close()
	if !bytes.Equal(got, data[6<<20:6<<20+10]) {
		t.Fatalf("range of a multipart object: %q", got)
	}
}

func TestMissingBucket(t *testing.T) {
	srv := versitygw.Start(t)
	_, err := s3.New(context.Background(), s3.Config{Endpoint: srv.Endpoint, AccessKey: srv.AccessKey, SecretKey: srv.SecretKey, Bucket: "no-such-bucket"})
	if err == nil {
		t.Fatal("opened a missing bucket")
	}
}
