package s3_test

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/minio/minio-go/v7"

	"svc.dev/svc/internal/versitygw"
	"svc.dev/svc/providers"
	"svc.dev/svc/providers/providertest"
	"svc.dev/svc/providers/s3"
)

var sample = map[string]string{
	"photos/2024/beach.jpg":  "pretend jpeg",
	"photos/2024/sunset.png": "pretend png",
	"docs/report.pdf":        "pretend pdf, a little longer",
	"docs/notes.txt":         "notes",
	"video/clip.mp4":         "pretend mp4",
}

func open(t testing.TB, srv *versitygw.Server) providers.Provider {
	t.Helper()
	p, err := s3.New(context.Background(), srv.Config())
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestConformanceAgainstVersitygw(t *testing.T) {
	srv := versitygw.Start(t)
	providertest.Run(t, providertest.Harness{
		Open: func(t testing.TB) (providers.Provider, string) {
			return open(t, srv), srv.Bucket(t, sample)
		},
		MinObjects: len(sample),
	})
}

func TestPrefixSource(t *testing.T) {
	srv := versitygw.Start(t)
	p := open(t, srv)
	b := srv.Bucket(t, sample)
	objs, _ := providertest.ListAll(context.Background(), t, p, b+"/photos/", 1)
	if len(objs) != 2 || objs[0].ID != "photos/2024/beach.jpg" || objs[0].Kind != providers.KindPhoto {
		t.Fatalf("prefix listing: %+v", objs)
	}
	if _, err := p.Fetch(context.Background(), providers.FetchRequest{SourceRef: b + "/photos/", ObjectID: "docs/notes.txt"}); !errors.Is(err, providers.ErrNotFound) {
		t.Errorf("fetch outside the prefix: %v", err)
	}
}

func TestWriteRefusesOverwriteAndWrongContent(t *testing.T) {
	srv := versitygw.Start(t)
	p := open(t, srv)
	b := srv.Bucket(t, sample)
	w := p.(providers.Writer)
	ctx := context.Background()
	if _, err := w.Write(ctx, providers.WriteRequest{SourceRef: b, Path: "docs/notes.txt", SizeBytes: -1}, bytes.NewReader([]byte("x"))); !errors.Is(err, providers.ErrAlreadyExists) {
		t.Errorf("write over an existing key: %v", err)
	}
	if _, err := w.Write(ctx, providers.WriteRequest{SourceRef: b, Path: "docs/notes.txt", SizeBytes: -1, Overwrite: true}, bytes.NewReader([]byte("x"))); err != nil {
		t.Errorf("overwrite: %v", err)
	}
	if _, err := w.Write(ctx, providers.WriteRequest{SourceRef: b, Path: "new.bin", SizeBytes: 5}, bytes.NewReader([]byte("four"))); !errors.Is(err, providers.ErrInvalidData) {
		t.Errorf("short content: %v", err)
	}
	objs, _ := providertest.ListAll(ctx, t, p, b, 0)
	for _, o := range objs {
		if o.ID == "new.bin" {
			t.Error("rejected write left the key behind")
		}
	}
}

func TestMissingBucket(t *testing.T) {
	srv := versitygw.Start(t)
	p := open(t, srv)
	if _, err := p.List(context.Background(), providers.ListRequest{SourceRef: "no-such-bucket"}); !errors.Is(err, providers.ErrNotFound) {
		t.Errorf("missing bucket: %v", err)
	}
}

// A temporary upload left by a write whose process died is removed by the next provider that
// writes into the bucket; listings never show it.
func TestLeftoverUploadsAreSwept(t *testing.T) {
	srv := versitygw.Start(t)
	b := srv.Bucket(t, map[string]string{".svc-tmp/0123456789abcdef01234567": "half an upload", "kept.txt": "k"})
	p := open(t, srv)
	ctx := context.Background()
	objs, _ := providertest.ListAll(ctx, t, p, b, 0)
	if len(objs) != 1 || objs[0].ID != "kept.txt" {
		t.Fatalf("listed %v", objs)
	}
	defer s3.SetTmpMaxAge(0)()
	if _, err := p.(providers.Writer).Write(ctx, providers.WriteRequest{SourceRef: b, Path: "new.txt", SizeBytes: -1}, bytes.NewReader([]byte("n"))); err != nil {
		t.Fatal(err)
	}
	for o := range srv.Client.ListObjects(ctx, b, minio.ListObjectsOptions{Prefix: ".svc-tmp/", Recursive: true}) {
		t.Errorf("left at %s (%v)", o.Key, o.Err)
	}
}
