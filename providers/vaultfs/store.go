package vaultfs

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"time"

	"svc.dev/svc/providers"

	"svc.dev/svc/internal/atomicfile"
)

// Blob is a stored blob's metadata.
type Blob struct {
	Digest    string // lowercase hex SHA-256 of the content
	Size      int64
	Name      string
	MIMEType  string
	Kind      providers.Kind
	CreatedAt time.Time
}

// PutMeta is the metadata recorded with new content.
type PutMeta struct {
	Name     string
	MIMEType string
	Kind     providers.Kind
	// SHA256 and Size, when set (Size >= 0), are checked against the
	// content; a mismatch stores nothing and wraps providers.ErrInvalidData.
	SHA256 string
	Size   int64
}

// Store is the content-addressed store the svc_vault provider works over.
// Implementations are safe for concurrent use.
type Store interface {
	// List returns up to limit blobs whose digests sort after after, in
	// digest order.
	List(ctx context.Context, after string, limit int) ([]Blob, error)
	// Stat returns a blob's metadata, or an error wrapping
	// providers.ErrNotFound.
	Stat(ctx context.Context, digest string) (Blob, error)
	// Open returns a blob's content. Reading it verifies the digest: a
	// mismatch at the end is an error wrapping providers.ErrInvalidData.
	Open(ctx context.Context, digest string) (io.ReadCloser, Blob, error)
	// Put stores content durably under its digest and returns its blob.
	// Putting content already stored is idempotent.
	Put(ctx context.Context, r io.Reader, meta PutMeta) (Blob, error)
	// Usage returns the bytes stored.
	Usage(ctx context.Context) (int64, error)
}

var digestRE = regexp.MustCompile(`^[0-9a-f]{64}$`)

// DirStore is a Store on a directory: blobs/AB/DIGEST holds the content,
// meta/AB/DIGEST.json its metadata. Content is written to tmp/, synced and
// renamed into place.
type DirStore struct {
	dir string
}

// NewDirStore opens (creating if needed) a content-addressed directory.
func NewDirStore(dir string) (*DirStore, error) {
	for _, d := range []string{"blobs", "meta", "tmp"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o700); err != nil {
			return nil, fmt.Errorf("vaultfs: %w", err)
		}
	}
	return &DirStore{dir: dir}, nil
}

func (s *DirStore) blobPath(d string) string { return filepath.Join(s.dir, "blobs", d[:2], d) }
func (s *DirStore) metaPath(d string) string { return filepath.Join(s.dir, "meta", d[:2], d+".json") }

type meta struct {
	Name      string         `json:"name,omitempty"`
	MIMEType  string         `json:"mime_type,omitempty"`
	Kind      providers.Kind `json:"kind,omitempty"`
	CreatedAt time.Time      `json:"created_at"`
}

func notFound(d string) error { return fmt.Errorf("vaultfs: blob %q: %w", d, providers.ErrNotFound) }

// Stat implements Store.
func (s *DirStore) Stat(_ context.Context, d string) (Blob, error) {
	if !digestRE.MatchString(d) {
		return Blob{}, notFound(d)
	}
	fi, err := os.Stat(s.blobPath(d))
	if errors.Is(err, fs.ErrNotExist) {
		return Blob{}, notFound(d)
	}
	if err != nil {
		return Blob{}, fmt.Errorf("vaultfs: %w", err)
	}
	b := Blob{Digest: d, Size: fi.Size(), Kind: providers.KindFile, CreatedAt: fi.ModTime().UTC()}
	if raw, err := os.ReadFile(s.metaPath(d)); err == nil {
		var m meta
		if json.Unmarshal(raw, &m) == nil {
			b.Name, b.MIMEType, b.CreatedAt = m.Name, m.MIMEType, m.CreatedAt
			if m.Kind.Valid() {
				b.Kind = m.Kind
			}
		}
	}
	return b, nil
}

// List implements Store.
func (s *DirStore) List(ctx context.Context, after string, limit int) ([]Blob, error) {
	var out []Blob
	shards, err := os.ReadDir(filepath.Join(s.dir, "blobs"))
	if err != nil {
		return nil, fmt.Errorf("vaultfs: %w", err)
	}
	for _, sh := range shards {
		if len(after) >= 2 && sh.Name() < after[:2] {
			continue
		}
		names, err := os.ReadDir(filepath.Join(s.dir, "blobs", sh.Name()))
		if err != nil {
			return nil, fmt.Errorf("vaultfs: %w", err)
		}
		sort.Slice(names, func(i, j int) bool { return names[i].Name() < names[j].Name() })
		for _, n := range names {
			if n.Name() <= after || !digestRE.MatchString(n.Name()) {
				continue
			}
			b, err := s.Stat(ctx, n.Name())
			if err != nil {
				continue // removed meanwhile
			}
			out = append(out, b)
			if len(out) == limit {
				return out, nil
			}
		}
	}
	return out, nil
}

// Open implements Store.
func (s *DirStore) Open(ctx context.Context, d string) (io.ReadCloser, Blob, error) {
	b, err := s.Stat(ctx, d)
	if err != nil {
		return nil, Blob{}, err
	}
	f, err := os.Open(s.blobPath(d))
	if err != nil {
		return nil, Blob{}, fmt.Errorf("vaultfs: %w", err)
	}
	return &verifyingReader{f: f, h: sha256.New(), want: d}, b, nil
}

// verifyingReader checks the content's digest when it reaches EOF.
type verifyingReader struct {
	f    *os.File
	h    hash.Hash
	want string
}

func (r *verifyingReader) Read(p []byte) (int, error) {
	n, err := r.f.Read(p)
	r.h.Write(p[:n])
	if err == io.EOF {
		if got := hex.EncodeToString(r.h.Sum(nil)); got != r.want {
			return n, fmt.Errorf("vaultfs: blob %s reads as %s: %w", r.want, got, providers.ErrInvalidData)
		}
	}
	return n, err
}

func (r *verifyingReader) Close() error { return r.f.Close() }

// Put implements Store.
func (s *DirStore) Put(_ context.Context, r io.Reader, m PutMeta) (Blob, error) {
	tmp, err := os.CreateTemp(filepath.Join(s.dir, "tmp"), "put-*")
	if err != nil {
		return Blob{}, fmt.Errorf("vaultfs: %w", err)
	}
	defer os.Remove(tmp.Name())
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(tmp, h), r)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return Blob{}, fmt.Errorf("vaultfs: put: %w", err)
	}
	d := hex.EncodeToString(h.Sum(nil))
	if m.Size >= 0 && n != m.Size {
		return Blob{}, fmt.Errorf("vaultfs: put: %d bytes, expected %d: %w", n, m.Size, providers.ErrInvalidData)
	}
	if m.SHA256 != "" && m.SHA256 != d {
		return Blob{}, fmt.Errorf("vaultfs: put: sha256 %s, expected %s: %w", d, m.SHA256, providers.ErrInvalidData)
	}
	if err := os.MkdirAll(filepath.Dir(s.blobPath(d)), 0o700); err != nil {
		return Blob{}, fmt.Errorf("vaultfs: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(s.metaPath(d)), 0o700); err != nil {
		return Blob{}, fmt.Errorf("vaultfs: %w", err)
	}
	if _, err := os.Stat(s.metaPath(d)); errors.Is(err, fs.ErrNotExist) {
		raw, _ := json.Marshal(meta{Name: m.Name, MIMEType: m.MIMEType, Kind: m.Kind, CreatedAt: time.Now().UTC().Truncate(time.Millisecond)})
		if err := atomicfile.Write(s.metaPath(d), raw, 0o600); err != nil {
			return Blob{}, fmt.Errorf("vaultfs: %w", err)
		}
	}
	if _, err := os.Stat(s.blobPath(d)); errors.Is(err, fs.ErrNotExist) {
		if err := os.Rename(tmp.Name(), s.blobPath(d)); err != nil {
			return Blob{}, fmt.Errorf("vaultfs: %w", err)
		}
		if err := atomicfile.SyncDir(filepath.Dir(s.blobPath(d))); err != nil {
			return Blob{}, fmt.Errorf("vaultfs: %w", err)
		}
	}
	return s.Stat(context.Background(), d)
}

// Usage implements Store.
func (s *DirStore) Usage(context.Context) (int64, error) {
	var total int64
	err := filepath.WalkDir(filepath.Join(s.dir, "blobs"), func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() {
			fi, err := d.Info()
			if err == nil {
				total += fi.Size()
			}
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("vaultfs: %w", err)
	}
	return total, nil
}
