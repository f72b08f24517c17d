// Package s3 is the object_store_compatible provider: any S3-compatible
// object store, through minio-go.
//
// Config keys:
//
//	endpoint    required; host:port of the S3 API
//	access_key  required
//	secret_key  required
//	region      default us-east-1
//	secure      "true" for HTTPS (default), "false" for plain HTTP
//
// A source ref is a bucket, optionally with a key prefix: "photos" or
// "photos/2024/". Object ids are keys, versions are ETags, and the revision
// marker is a snapshot_hash over the listed keys and ETags (S3 keeps no
// change journal a client can read, so Changes only recognises the current
// marker).
//
// Write uploads to a temporary key under ".svc-tmp/", checks size and
// SHA-256, and then copies server-side to the destination key, so a
// destination never holds wrong content; without Overwrite an existing key
// is refused (checked with a HEAD just before the copy: S3 has no portable
// conditional write). Remove checks the expected ETag with a HEAD before
// deleting, which leaves a short race that S3's API cannot close. S3 has no
// trash and no quota API, so this provider offers neither.
package s3

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"path"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"svc.dev/svc/providers"
	"svc.dev/svc/providers/pagetoken"
)

var caps = []providers.Capability{providers.CapRemove, providers.CapWrite}

// Description is the object_store_compatible provider's description.
var Description = providers.Description{
	Name:             providers.ObjectStoreCompatible,
	ProtocolVersion:  providers.ProtocolVersion,
	DisplayName:      "S3-compatible object store",
	OperationClasses: providers.OperationClassesFor(caps),
	Capabilities:     caps,
	ObjectKinds:      []providers.Kind{providers.KindFile, providers.KindPhoto, providers.KindVideo},
	MarkerKinds:      []providers.MarkerKind{providers.MarkerSnapshotHash},
}

// tmpPrefix holds uploads until they are verified; listings skip it.
const tmpPrefix = ".svc-tmp/"

// Provider is an object_store_compatible provider instance.
type Provider struct {
	client *minio.Client
	swept  sync.Map // buckets whose leftover temporary uploads were removed
}

// tmpMaxAge is how old a temporary upload must be to count as a leftover: a write copies its
// upload into place right after it completes, so one this old belongs to a write that died.
var tmpMaxAge = time.Hour

// sweepOnce removes, the first time this provider writes into a bucket, the temporary uploads
// older than tmpMaxAge (left by writes whose process died between upload and copy).
func (p *Provider) sweepOnce(ctx context.Context, bucket string) {
	if _, done := p.swept.LoadOrStore(bucket, true); done {
		return
	}
	cutoff := time.Now().Add(-tmpMaxAge)
	for o := range p.client.ListObjects(ctx, bucket, minio.ListObjectsOptions{Prefix: tmpPrefix, Recursive: true}) {
		if o.Err != nil {
			return
		}
		if o.LastModified.Before(cutoff) {
			_ = p.client.RemoveObject(ctx, bucket, o.Key, minio.RemoveObjectOptions{})
		}
	}
}

var (
	_ providers.Provider = (*Provider)(nil)
	_ providers.Remover  = (*Provider)(nil)
	_ providers.Writer   = (*Provider)(nil)
)

// New opens an object_store_compatible provider. It is a
// providers.Factory. It does not contact the store.
func New(_ context.Context, cfg providers.Config) (providers.Provider, error) {
	for k := range cfg {
		switch k {
		case "endpoint", "access_key", "secret_key", "region", "secure":
		default:
			return nil, fmt.Errorf("s3: unknown config key %q: %w", k, providers.ErrInvalidArgument)
		}
	}
	if cfg["endpoint"] == "" || cfg["access_key"] == "" || cfg["secret_key"] == "" {
		return nil, fmt.Errorf("s3: endpoint, access_key and secret_key are required: %w", providers.ErrInvalidArgument)
	}
	secure := true
	if v := cfg["secure"]; v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return nil, fmt.Errorf("s3: secure %q: %w", v, providers.ErrInvalidArgument)
		}
		secure = b
	}
	region := cfg["region"]
	if region == "" {
		region = "us-east-1"
	}
	c, err := minio.New(cfg["endpoint"], &minio.Options{
		Creds:  credentials.NewStaticV4(cfg["access_key"], cfg["secret_key"], ""),
		Secure: secure,
		Region: region,
	})
	if err != nil {
		return nil, fmt.Errorf("s3: %v: %w", err, providers.ErrInvalidArgument)
	}
	return &Provider{client: c}, nil
}

// Describe implements providers.Provider.
func (p *Provider) Describe(context.Context) (providers.Description, error) { return Description, nil }

func splitSource(ref string) (bucket, prefix string, err error) {
	bucket, prefix, _ = strings.Cut(ref, "/")
	if bucket == "" {
		return "", "", fmt.Errorf("s3: source %q: want BUCKET or BUCKET/PREFIX: %w", ref, providers.ErrInvalidArgument)
	}
	return bucket, prefix, nil
}

// mapErr turns an S3 error response into the providers' sentinels.
func mapErr(op string, err error) error {
	if err == nil {
		return nil
	}
	r := minio.ToErrorResponse(err)
	var sentinel error
	switch {
	case r.Code == "NoSuchKey" || r.Code == "NoSuchBucket" || r.StatusCode == http.StatusNotFound:
		sentinel = providers.ErrNotFound
	case r.StatusCode == http.StatusForbidden || r.Code == "AccessDenied":
		sentinel = providers.ErrPermission
	case r.StatusCode == http.StatusServiceUnavailable || r.StatusCode == http.StatusTooManyRequests || r.Code == "SlowDown" || r.StatusCode >= 500:
		sentinel = providers.ErrTransient
	case r.StatusCode == 0:
		sentinel = providers.ErrTransient // no response: the network
	}
	if sentinel != nil {
		return fmt.Errorf("s3: %s: %v: %w", op, err, sentinel)
	}
	return fmt.Errorf("s3: %s: %w", op, err)
}

func kindOf(key, contentType string) (providers.Kind, string) {
	if contentType == "" || contentType == "binary/octet-stream" {
		contentType = mime.TypeByExtension(path.Ext(key))
	}
	if i := strings.IndexByte(contentType, ';'); i >= 0 {
		contentType = contentType[:i]
	}
	switch {
	case strings.HasPrefix(contentType, "image/"):
		return providers.KindPhoto, contentType
	case strings.HasPrefix(contentType, "video/"):
		return providers.KindVideo, contentType
	}
	return providers.KindFile, contentType
}

func object(info minio.ObjectInfo) providers.Object {
	kind, mt := kindOf(info.Key, info.ContentType)
	o := providers.Object{
		ID:         info.Key,
		Version:    strings.Trim(info.ETag, `"`),
		Kind:       kind,
		Name:       path.Base(info.Key),
		Path:       info.Key,
		SizeBytes:  info.Size,
		MIMEType:   mt,
		ModifiedAt: info.LastModified.UTC(),
	}
	if dir := path.Dir(info.Key); dir != "." {
		o.ParentID, o.Containers = dir, []string{dir}
	}
	if info.StorageClass != "" {
		o.Metadata = map[string]string{"storage_class": info.StorageClass}
	}
	return o
}

// List implements providers.Provider, in key order.
func (p *Provider) List(ctx context.Context, req providers.ListRequest) (providers.Page, error) {
	bucket, prefix, err := splitSource(req.SourceRef)
	if err != nil {
		return providers.Page{}, err
	}
	after, snap, err := pagetoken.Decode(req.PageToken)
	if err != nil {
		return providers.Page{}, fmt.Errorf("s3: %w", err)
	}
	start := ""
	if len(after) > 0 {
		start = after[0]
	}
	size := providers.ClampPageSize(req.PageSize)
	lctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var page providers.Page
	more := false
	for info := range p.client.ListObjects(lctx, bucket, minio.ListObjectsOptions{Prefix: prefix, StartAfter: start, Recursive: true, MaxKeys: min(size+1, 1000)}) {
		if info.Err != nil {
			return providers.Page{}, mapErr("list "+req.SourceRef, info.Err)
		}
		if strings.HasPrefix(info.Key, tmpPrefix) || strings.HasSuffix(info.Key, "/") {
			continue
		}
		if len(page.Objects) == size {
			more = true
			break
		}
		o := object(info)
		page.Objects = append(page.Objects, o)
		snap.Add(o.ID, o.Version)
	}
	if more {
		page.NextPageToken, err = pagetoken.Encode([]string{page.Objects[len(page.Objects)-1].ID}, snap)
		return page, err
	}
	page.Marker = snap.Marker()
	return page, nil
}

// Changes implements providers.Provider: the current marker gives no
// changes; any other expires.
func (p *Provider) Changes(ctx context.Context, req providers.ChangesRequest) (providers.ChangePage, error) {
	if _, _, err := splitSource(req.SourceRef); err != nil {
		return providers.ChangePage{}, err
	}
	if req.Since.Kind != providers.MarkerSnapshotHash {
		return providers.ChangePage{}, fmt.Errorf("s3: marker kind %q: %w", req.Since.Kind, providers.ErrMarkerExpired)
	}
	token := ""
	for {
		page, err := p.List(ctx, providers.ListRequest{SourceRef: req.SourceRef, PageToken: token, PageSize: providers.MaxPageSize})
		if err != nil {
			return providers.ChangePage{}, err
		}
		if page.NextPageToken == "" {
			if page.Marker == req.Since {
				return providers.ChangePage{Marker: page.Marker}, nil
			}
			return providers.ChangePage{}, fmt.Errorf("s3: bucket changed since the marker: %w", providers.ErrMarkerExpired)
		}
		token = page.NextPageToken
	}
}

func (p *Provider) key(ref, id string) (string, string, error) {
	bucket, prefix, err := splitSource(ref)
	if err != nil {
		return "", "", err
	}
	if id == "" || !strings.HasPrefix(id, prefix) || strings.HasPrefix(id, tmpPrefix) {
		return "", "", fmt.Errorf("s3: object %q: %w", id, providers.ErrNotFound)
	}
	return bucket, id, nil
}

// Fetch implements providers.Provider. The expected version is sent as
// If-Match, so the bytes read are those of that version.
func (p *Provider) Fetch(ctx context.Context, req providers.FetchRequest) (*providers.Content, error) {
	bucket, key, err := p.key(req.SourceRef, req.ObjectID)
	if err != nil {
		return nil, err
	}
	opts := minio.GetObjectOptions{}
	if req.ExpectedVersion != "" {
		_ = opts.SetMatchETag(req.ExpectedVersion)
	}
	core := minio.Core{Client: p.client}
	body, info, _, err := core.GetObject(ctx, bucket, key, opts)
	if err != nil {
		if r := minio.ToErrorResponse(err); r.StatusCode == http.StatusPreconditionFailed || r.Code == "PreconditionFailed" {
			actual := ""
			if st, serr := p.client.StatObject(ctx, bucket, key, minio.StatObjectOptions{}); serr == nil {
				actual = strings.Trim(st.ETag, `"`)
			}
			return nil, &providers.VersionMismatchError{ObjectID: req.ObjectID, Expected: req.ExpectedVersion, Actual: actual}
		}
		return nil, mapErr("fetch "+key, err)
	}
	info.Key = key
	return &providers.Content{Object: object(info), Body: body}, nil
}

// Remove implements providers.Remover.
func (p *Provider) Remove(ctx context.Context, req providers.ActionRequest) (providers.ActionResult, error) {
	bucket, key, err := p.key(req.SourceRef, req.ObjectID)
	if err != nil {
		return providers.ActionResult{}, err
	}
	st, err := p.client.StatObject(ctx, bucket, key, minio.StatObjectOptions{})
	if err != nil {
		return providers.ActionResult{}, mapErr("remove "+key, err)
	}
	if etag := strings.Trim(st.ETag, `"`); req.ExpectedVersion != "" && etag != req.ExpectedVersion {
		return providers.ActionResult{}, &providers.VersionMismatchError{ObjectID: req.ObjectID, Expected: req.ExpectedVersion, Actual: etag}
	}
	if err := p.client.RemoveObject(ctx, bucket, key, minio.RemoveObjectOptions{}); err != nil {
		return providers.ActionResult{}, mapErr("remove "+key, err)
	}
	return providers.ActionResult{ResultID: st.VersionID}, nil
}

// Write implements providers.Writer. Path is the key within the source's
// prefix.
func (p *Provider) Write(ctx context.Context, req providers.WriteRequest, body io.Reader) (providers.Object, error) {
	bucket, prefix, err := splitSource(req.SourceRef)
	if err != nil {
		return providers.Object{}, err
	}
	if req.Path == "" || strings.HasSuffix(req.Path, "/") || strings.HasPrefix(prefix+req.Path, tmpPrefix) {
		return providers.Object{}, fmt.Errorf("s3: write path %q: %w", req.Path, providers.ErrInvalidArgument)
	}
	key := prefix + req.Path
	p.sweepOnce(ctx, bucket)
	var rnd [12]byte
	_, _ = rand.Read(rnd[:])
	tmp := tmpPrefix + hex.EncodeToString(rnd[:])
	h := sha256.New()
	opts := minio.PutObjectOptions{ContentType: req.MIMEType, UserMetadata: req.Metadata}
	counted := &countingReader{r: io.TeeReader(body, h)}
	up, err := p.client.PutObject(ctx, bucket, tmp, counted, req.SizeBytes, opts)
	if err != nil {
		if req.SizeBytes >= 0 && counted.n != req.SizeBytes && counted.eof {
			err = fmt.Errorf("s3: write %q: %d bytes, expected %d: %w", key, counted.n, req.SizeBytes, providers.ErrInvalidData)
			_ = p.client.RemoveObject(context.WithoutCancel(ctx), bucket, tmp, minio.RemoveObjectOptions{})
			return providers.Object{}, err
		}
		return providers.Object{}, mapErr("write "+key, err)
	}
	defer p.client.RemoveObject(context.WithoutCancel(ctx), bucket, tmp, minio.RemoveObjectOptions{}) //nolint:errcheck // best effort
	sum := hex.EncodeToString(h.Sum(nil))
	if req.SizeBytes >= 0 && up.Size != req.SizeBytes {
		return providers.Object{}, fmt.Errorf("s3: write %q: %d bytes, expected %d: %w", key, up.Size, req.SizeBytes, providers.ErrInvalidData)
	}
	if req.SHA256 != "" && sum != req.SHA256 {
		return providers.Object{}, fmt.Errorf("s3: write %q: sha256 %s, expected %s: %w", key, sum, req.SHA256, providers.ErrInvalidData)
	}
	if !req.Overwrite {
		_, err := p.client.StatObject(ctx, bucket, key, minio.StatObjectOptions{})
		if err == nil {
			return providers.Object{}, fmt.Errorf("s3: write %q: %w", key, providers.ErrAlreadyExists)
		}
		if !errors.Is(mapErr("", err), providers.ErrNotFound) {
			return providers.Object{}, mapErr("write "+key, err)
		}
	}
	if _, err := p.client.CopyObject(ctx, minio.CopyDestOptions{Bucket: bucket, Object: key}, minio.CopySrcOptions{Bucket: bucket, Object: tmp, MatchETag: up.ETag}); err != nil {
		return providers.Object{}, mapErr("write "+key, err)
	}
	st, err := p.client.StatObject(ctx, bucket, key, minio.StatObjectOptions{})
	if err != nil {
		return providers.Object{}, mapErr("write "+key, err)
	}
	o := object(st)
	o.SHA256 = sum
	return o, nil
}

// countingReader counts the bytes read and notes the end of the content,
// so a short body can be told apart from a network failure.
type countingReader struct {
	r   io.Reader
	n   int64
	eof bool
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	if err == io.EOF {
		c.eof = true
	}
	return n, err
}
