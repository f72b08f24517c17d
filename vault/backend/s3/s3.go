// Package s3 is a vault backend on an S3-compatible object store (through
// minio-go): files are objects under a key prefix in one bucket.
//
// A file whose name is known up front (a pack) is one PUT, which S3 makes
// durable and visible atomically. A streamed file is uploaded to
// PREFIX/tmp/ in constant memory (multipart, PartSize a part), then copied
// server-side to its name at Commit and the temporary object removed; an
// upload interrupted by a crash leaves a temporary object that is never
// listed and that CleanTemp removes (configure the bucket to abort
// incomplete multipart uploads after a day, too).
package s3

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"svc.dev/svc/vault/backend"
)

// Config says where the backend's objects are.
type Config struct {
	Endpoint  string // host:port
	AccessKey string
	SecretKey string
	Secure    bool   // HTTPS
	Region    string // "" means us-east-1
	Bucket    string
	Prefix    string // key prefix, "" or ending in "/"
	// PartSize is the multipart part size of streamed uploads, which is
	// also the memory one upload holds; 0 means 16 MiB.
	PartSize uint64
}

// Backend is a backend.Backend on an S3 bucket.
type Backend struct {
	c        *minio.Client
	bucket   string
	prefix   string
	partSize uint64
}

var (
	_ backend.Backend = (*Backend)(nil)
	_ backend.Saver   = (*Backend)(nil)
)

// New connects to the store and checks that the bucket exists.
func New(ctx context.Context, cfg Config) (*Backend, error) {
	region := cfg.Region
	if region == "" {
		region = "us-east-1"
	}
	c, err := minio.New(cfg.Endpoint, &minio.Options{Creds: credentials.NewStaticV4(cfg.AccessKey, cfg.SecretKey, ""), Secure: cfg.Secure, Region: region})
	if err != nil {
		return nil, fmt.Errorf("s3 backend: %w", err)
	}
	b, err := NewWithClient(c, cfg.Bucket, cfg.Prefix)
	if err != nil {
		return nil, err
	}
	if cfg.PartSize != 0 {
		b.partSize = cfg.PartSize
	}
	ok, err := c.BucketExists(ctx, cfg.Bucket)
	if err != nil {
		return nil, fmt.Errorf("s3 backend: bucket %s: %w", cfg.Bucket, err)
	}
	if !ok {
		return nil, fmt.Errorf("s3 backend: bucket %s does not exist", cfg.Bucket)
	}
	return b, nil
}

// NewWithClient returns a backend over an existing client.
func NewWithClient(c *minio.Client, bucket, prefix string) (*Backend, error) {
	if bucket == "" {
		return nil, errors.New("s3 backend: empty bucket name")
	}
	if prefix != "" && !strings.HasSuffix(prefix, "/") {
		prefix += "/"
	}
	return &Backend{c: c, bucket: bucket, prefix: prefix, partSize: 16 << 20}, nil
}

// String implements backend.Backend.
func (b *Backend) String() string { return "s3://" + b.bucket + "/" + b.prefix }

func (b *Backend) key(name string) string { return b.prefix + name }

func mapErr(name string, err error) error {
	r := minio.ToErrorResponse(err)
	if r.Code == "NoSuchKey" || r.StatusCode == http.StatusNotFound {
		return fmt.Errorf("s3 backend: %s: %w", name, backend.ErrNotFound)
	}
	return fmt.Errorf("s3 backend: %s: %w", name, err)
}

// Save implements backend.Saver: one PUT.
func (b *Backend) Save(ctx context.Context, name string, data []byte) error {
	if err := backend.ValidName(name); err != nil {
		return err
	}
	_, err := b.c.PutObject(ctx, b.bucket, b.key(name), bytes.NewReader(data), int64(len(data)), minio.PutObjectOptions{ContentType: "application/octet-stream"})
	if err != nil {
		return mapErr(name, err)
	}
	return nil
}

// Create implements backend.Backend: the bytes stream to a temporary
// object as they are written.
func (b *Backend) Create(ctx context.Context) (backend.File, error) {
	var r [16]byte
	_, _ = rand.Read(r[:])
	tmp := b.prefix + "tmp/" + hex.EncodeToString(r[:])
	pr, pw := io.Pipe()
	f := &file{b: b, tmp: tmp, pw: pw, done: make(chan struct{})}
	go func() {
		info, err := b.c.PutObject(ctx, b.bucket, tmp, pr, -1, minio.PutObjectOptions{PartSize: b.partSize, ContentType: "application/octet-stream"})
		f.size, f.err = info.Size, err
		pr.CloseWithError(err) // unblock a writer if the upload failed
		close(f.done)
	}()
	return f, nil
}

type file struct {
	b      *Backend
	tmp    string
	pw     *io.PipeWriter
	n      int64
	done   chan struct{}
	size   int64
	err    error
	closed bool
}

func (f *file) Write(p []byte) (int, error) {
	n, err := f.pw.Write(p)
	f.n += int64(n)
	return n, err
}

var errAborted = errors.New("s3 backend: upload aborted")

func (f *file) Abort() error {
	if f.closed {
		return nil
	}
	f.closed = true
	f.pw.CloseWithError(errAborted)
	<-f.done
	return f.b.c.RemoveObject(context.Background(), f.b.bucket, f.tmp, minio.RemoveObjectOptions{})
}

// maxCopy is the largest object a single server-side copy may produce.
const maxCopy = 5 << 30

// Commit finishes the upload, copies the object to its name server-side
// and removes the temporary object.
func (f *file) Commit(ctx context.Context, name string) error {
	if f.closed {
		return errors.New("s3 backend: file already committed or aborted")
	}
	if err := backend.ValidName(name); err != nil {
		_ = f.Abort()
		return err
	}
	f.closed = true
	f.pw.Close()
	<-f.done
	defer f.b.c.RemoveObject(context.Background(), f.b.bucket, f.tmp, minio.RemoveObjectOptions{})
	if f.err != nil {
		return mapErr(name, f.err)
	}
	if f.size != f.n {
		return fmt.Errorf("s3 backend: %s: uploaded %d bytes of %d", name, f.size, f.n)
	}
	dst := minio.CopyDestOptions{Bucket: f.b.bucket, Object: f.b.key(name)}
	src := minio.CopySrcOptions{Bucket: f.b.bucket, Object: f.tmp}
	var err error
	if f.n > maxCopy {
		_, err = f.b.c.ComposeObject(ctx, dst, src)
	} else {
		_, err = f.b.c.CopyObject(ctx, dst, src)
	}
	if err != nil {
		return mapErr(name, err)
	}
	return nil
}

// Open implements backend.Backend with a ranged GET.
func (b *Backend) Open(ctx context.Context, name string, offset, length int64) (io.ReadCloser, error) {
	if err := backend.ValidName(name); err != nil {
		return nil, err
	}
	if length == 0 {
		if _, err := b.Stat(ctx, name); err != nil {
			return nil, err
		}
		return io.NopCloser(bytes.NewReader(nil)), nil
	}
	var opts minio.GetObjectOptions
	if offset > 0 || length > 0 {
		end := int64(0)
		if length > 0 {
			end = offset + length - 1
		}
		if err := opts.SetRange(offset, end); err != nil {
			return nil, fmt.Errorf("s3 backend: %s: %w", name, err)
		}
	}
	obj, err := b.c.GetObject(ctx, b.bucket, b.key(name), opts)
	if err != nil {
		return nil, mapErr(name, err)
	}
	if _, err := obj.Stat(); err != nil { // sends the request: a missing object fails here
		obj.Close()
		return nil, mapErr(name, err)
	}
	return obj, nil
}

// Stat implements backend.Backend.
func (b *Backend) Stat(ctx context.Context, name string) (backend.Info, error) {
	if err := backend.ValidName(name); err != nil {
		return backend.Info{}, err
	}
	oi, err := b.c.StatObject(ctx, b.bucket, b.key(name), minio.StatObjectOptions{})
	if err != nil {
		return backend.Info{}, mapErr(name, err)
	}
	return backend.Info{Name: name, Size: oi.Size, ModTime: oi.LastModified}, nil
}

// Remove implements backend.Backend (S3 deletes are idempotent).
func (b *Backend) Remove(ctx context.Context, name string) error {
	if err := backend.ValidName(name); err != nil {
		return err
	}
	if err := b.c.RemoveObject(ctx, b.bucket, b.key(name), minio.RemoveObjectOptions{}); err != nil {
		if errors.Is(mapErr(name, err), backend.ErrNotFound) {
			return nil
		}
		return mapErr(name, err)
	}
	return nil
}

// List implements backend.Backend. Temporary objects are never listed.
func (b *Backend) List(ctx context.Context, prefix string, fn func(backend.Info) error) error {
	for oi := range b.c.ListObjects(ctx, b.bucket, minio.ListObjectsOptions{Prefix: b.key(prefix), Recursive: true}) {
		if oi.Err != nil {
			return fmt.Errorf("s3 backend: list %q: %w", prefix, oi.Err)
		}
		name := strings.TrimPrefix(oi.Key, b.prefix)
		if strings.HasPrefix(name, "tmp/") || strings.HasSuffix(name, "/") {
			continue
		}
		if err := fn(backend.Info{Name: name, Size: oi.Size, ModTime: oi.LastModified}); err != nil {
			return err
		}
	}
	return nil
}

// CleanTemp removes temporary objects older than age, left by uploads a
// crash interrupted, and returns how many it removed.
func (b *Backend) CleanTemp(ctx context.Context, age time.Duration) (int, error) {
	cutoff := time.Now().Add(-age)
	n := 0
	for oi := range b.c.ListObjects(ctx, b.bucket, minio.ListObjectsOptions{Prefix: b.prefix + "tmp/", Recursive: true}) {
		if oi.Err != nil {
			return n, fmt.Errorf("s3 backend: clean temporary objects: %w", oi.Err)
		}
		if oi.LastModified.Before(cutoff) {
			if err := b.c.RemoveObject(ctx, b.bucket, oi.Key, minio.RemoveObjectOptions{}); err == nil {
				n++
			}
		}
	}
	return n, nil
}

// OpenMedium implements backend.MediumReader: every read of an object store
// comes from the store (this process keeps no cache of what it wrote).
func (b *Backend) OpenMedium(ctx context.Context, name string, offset, length int64) (io.ReadCloser, error) {
	return b.Open(ctx, name, offset, length)
}

// Medium implements backend.MediumReader.
func (b *Backend) Medium() string { return "remote" }
