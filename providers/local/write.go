package local

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"svc.dev/svc/providers"
)

// Write implements providers.Writer: the content goes to a temporary file
// beside the destination, is checked against the expected size and SHA-256,
// synced, and then linked (or, with Overwrite, renamed) into place, so a
// destination never holds partial or wrong content.
func (p *Provider) Write(_ context.Context, req providers.WriteRequest, body io.Reader) (providers.Object, error) {
	src, err := p.sourceDir(req.SourceRef)
	if err != nil {
		return providers.Object{}, err
	}
	id, err := relID(req.Path)
	if err != nil || strings.HasSuffix(req.Path, "/") {
		return providers.Object{}, fmt.Errorf("local: write path %q: %w", req.Path, providers.ErrInvalidArgument)
	}
	for _, part := range strings.Split(id, "/") {
		if isTrashName(part) {
			return providers.Object{}, fmt.Errorf("local: write path %q: %w", req.Path, providers.ErrInvalidArgument)
		}
	}
	dst := filepath.Join(src, filepath.FromSlash(id))
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return providers.Object{}, fmt.Errorf("local: write %q: %w", id, mapErr(err))
	}
	p.sweepOnce(filepath.Dir(dst))
	tmp, err := createLockedTemp(filepath.Dir(dst))
	if err != nil {
		return providers.Object{}, fmt.Errorf("local: write %q: %w", id, mapErr(err))
	}
	// The file stays open, so locked, until it is linked into place: a sweep must not take it
	// for a leftover in between.
	defer func() {
		os.Remove(tmp.Name())
		tmp.Close()
	}()
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(tmp, h), body)
	if err == nil {
		err = tmp.Sync()
	}
	if err != nil {
		return providers.Object{}, fmt.Errorf("local: write %q: %w", id, err)
	}
	sum := hex.EncodeToString(h.Sum(nil))
	if req.SizeBytes >= 0 && n != req.SizeBytes {
		return providers.Object{}, fmt.Errorf("local: write %q: %d bytes, expected %d: %w", id, n, req.SizeBytes, providers.ErrInvalidData)
	}
	if req.SHA256 != "" && sum != req.SHA256 {
		return providers.Object{}, fmt.Errorf("local: write %q: sha256 %s, expected %s: %w", id, sum, req.SHA256, providers.ErrInvalidData)
	}
	if req.Overwrite {
		err = os.Rename(tmp.Name(), dst)
	} else {
		err = os.Link(tmp.Name(), dst) // fails if dst exists: no overwrite race
	}
	if err != nil {
		return providers.Object{}, fmt.Errorf("local: write %q: %w", id, mapErr(err))
	}
	if d, err := os.Open(filepath.Dir(dst)); err == nil {
		_ = d.Sync()
		d.Close()
	}
	fi, err := os.Stat(dst)
	if err != nil {
		return providers.Object{}, fmt.Errorf("local: write %q: %w", id, mapErr(err))
	}
	o := fileObject(id, fi)
	o.SHA256 = sum
	return o, nil
}

// Temporary files of writes are named with writeTempPrefix beside their destination (so the
// final link or rename is atomic) and locked (flock) by the writing process for as long as it
// writes. A process killed mid-write leaves its temporary file behind, unlocked: the next
// provider instance that writes into that directory removes it (sweepOnce). Listings never
// show them.
const writeTempPrefix = ".svc-write-"

func isWriteTemp(name string) bool { return strings.HasPrefix(name, writeTempPrefix) }

// createLockedTemp creates a temporary file in dir and locks it. A sweep in another process
// can remove the file between its creation and the lock; then it is made again.
func createLockedTemp(dir string) (*os.File, error) {
	for {
		tmp, err := os.CreateTemp(dir, writeTempPrefix+"*")
		if err != nil {
			return nil, err
		}
		if err := lockFile(tmp, true); err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
			return nil, err
		}
		if stillAt(tmp, tmp.Name()) {
			return tmp, nil
		}
		tmp.Close() // swept before we locked it
	}
}

// stillAt reports whether the open file f is the file at path.
func stillAt(f *os.File, path string) bool {
	a, err := f.Stat()
	if err != nil {
		return false
	}
	b, err := os.Lstat(path)
	return err == nil && os.SameFile(a, b)
}

// sweepOnce removes, the first time this provider instance writes into dir, the temporary
// files that no live writer holds (leftovers of a killed process).
func (p *Provider) sweepOnce(dir string) {
	if _, done := p.swept.LoadOrStore(dir, true); done {
		return
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		if !isWriteTemp(e.Name()) || !e.Type().IsRegular() {
			continue
		}
		path := filepath.Join(dir, e.Name())
		f, err := os.Open(path)
		if err != nil {
			continue
		}
		if lockFile(f, false) == nil && stillAt(f, path) {
			os.Remove(path) // nobody is writing it
		}
		f.Close()
	}
}
