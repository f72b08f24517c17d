package local

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"svc.dev/svc/providers"
)

// Write implements providers.Writer: the content goes to a temporary file
// beside the destination, is checked against the expected size and SHA-256,
// synced, and then linked (or, with Overwrite, renamed) into place, so a
// destination never holds partial or wrong content.
//
// Every file operation goes through an os.Root opened on the source folder, and
// a path through a symbolic link is refused: a link in the user's folder (say
// linkdir -> /elsewhere) can never carry a write out of it.
func (p *Provider) Write(_ context.Context, req providers.WriteRequest, body io.Reader) (providers.Object, error) {
	src, err := p.sourceDir(req.SourceRef)
	if err != nil {
		return providers.Object{}, err
	}
	id, err := writePath(req.Path)
	if err != nil || strings.HasSuffix(req.Path, "/") {
		return providers.Object{}, fmt.Errorf("local: write path %q: %w", req.Path, providers.ErrInvalidArgument)
	}
	for _, part := range strings.Split(id, "/") {
		if isTrashName(part) {
			return providers.Object{}, fmt.Errorf("local: write path %q: %w", req.Path, providers.ErrInvalidArgument)
		}
		if isWriteTemp(part) {
			// The name of one of svc's own temporary files: written there, the next write
			// into its folder would sweep it as a leftover (and listings skip it).
			return providers.Object{}, fmt.Errorf("local: write path %q: the name is reserved for svc's temporary files: %w", req.Path, providers.ErrInvalidArgument)
		}
	}
	root, err := os.OpenRoot(src)
	if err != nil {
		return providers.Object{}, fmt.Errorf("local: write %q: %w", id, mapErr(err))
	}
	defer root.Close()
	if err := noLinks(root, id); err != nil {
		return providers.Object{}, fmt.Errorf("local: write path %q: %w: %w", req.Path, err, providers.ErrInvalidArgument)
	}
	name := filepath.FromSlash(id)
	dir := filepath.Dir(name)
	if err := root.MkdirAll(dir, 0o755); err != nil {
		return providers.Object{}, fmt.Errorf("local: write %q: %w", id, mapErr(err))
	}
	p.sweepOnce(root, dir)
	tmp, tmpName, err := createLockedTemp(root, dir)
	if err != nil {
		return providers.Object{}, fmt.Errorf("local: write %q: %w", id, mapErr(err))
	}
	// The file stays open, so locked, until it is linked into place: a sweep must not take it
	// for a leftover in between.
	defer func() {
		root.Remove(tmpName)
		tmp.Close()
	}()
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(tmp, h), body)
	if err == nil {
		err = tmp.Sync()
	}
	if err != nil {
		return providers.Object{}, fmt.Errorf("local: write %q: %w", id, mapErr(err))
	}
	sum := hex.EncodeToString(h.Sum(nil))
	if req.SizeBytes >= 0 && n != req.SizeBytes {
		return providers.Object{}, fmt.Errorf("local: write %q: %d bytes, expected %d: %w", id, n, req.SizeBytes, providers.ErrInvalidData)
	}
	if req.SHA256 != "" && sum != req.SHA256 {
		return providers.Object{}, fmt.Errorf("local: write %q: sha256 %s, expected %s: %w", id, sum, req.SHA256, providers.ErrInvalidData)
	}
	if req.Overwrite {
		err = root.Rename(tmpName, name)
	} else {
		err = root.Link(tmpName, name) // fails if the name exists: no overwrite race
	}
	if err != nil {
		return providers.Object{}, fmt.Errorf("local: write %q: %w", id, mapErr(err))
	}
	if d, err := root.Open(dir); err == nil {
		_ = d.Sync()
		d.Close()
	}
	fi, err := root.Lstat(name)
	if err != nil {
		return providers.Object{}, fmt.Errorf("local: write %q: %w", id, mapErr(err))
	}
	o := fileObject(encodePath(strings.Split(id, "/")...), fi)
	o.SHA256 = sum
	return o, nil
}

// writePath is the file path a write goes to: a path in the form of an object id (its names
// encoded, as a restore to the original place writes an object back at its id) is decoded;
// any other is taken as it is. It must be a clean relative path.
func writePath(p string) (string, error) {
	if raw, err := relID(p); err == nil {
		return raw, nil
	}
	if p == "" || strings.HasPrefix(p, "/") || (filepath.Separator == '\\' && strings.Contains(p, "\\")) || path.Clean(p) != p || p == ".." || strings.HasPrefix(p, "../") || strings.ContainsRune(p, 0) {
		return "", fmt.Errorf("local: write path %q: %w", p, providers.ErrInvalidArgument)
	}
	return p, nil
}

// noLinks refuses a path any existing component of which is a symbolic link (listings skip
// them too); os.Root already keeps every operation inside the folder.
func noLinks(root *os.Root, id string) error {
	parts := strings.Split(id, "/")
	for i := range parts {
		fi, err := root.Lstat(filepath.FromSlash(strings.Join(parts[:i+1], "/")))
		if err != nil {
			return nil // from here on nothing exists yet
		}
		if fi.Mode()&os.ModeSymlink != 0 {
			return errors.New("the path goes through a symbolic link")
		}
	}
	return nil
}

// Temporary files of writes are named writeTempPrefix, 32 random hex digits and writeTempSuffix,
// beside their destination (so the final link or rename is atomic), and locked (flock) by the
// writing process for as long as it writes. A process killed mid-write leaves its temporary
// file behind, unlocked: the next provider instance that writes into that directory removes
// it (sweepOnce). Listings never show them. Only names of exactly that form are svc's: a
// user's own ".svc-write-notes.txt" is listed, preserved and never swept.
const (
	writeTempPrefix = ".svc-write-"
	writeTempSuffix = ".tmp"
)

func isWriteTemp(name string) bool {
	mid, ok := strings.CutPrefix(name, writeTempPrefix)
	if !ok {
		return false
	}
	mid, ok = strings.CutSuffix(mid, writeTempSuffix)
	if !ok || len(mid) != 32 {
		return false
	}
	for _, c := range mid {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

func newWriteTempName() (string, error) {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return writeTempPrefix + hex.EncodeToString(b) + writeTempSuffix, nil
}

// createLockedTemp creates a temporary file in dir (under root) and locks it. A sweep in
// another process can remove the file between its creation and the lock; then it is made
// again. It returns the file and its name relative to root.
func createLockedTemp(root *os.Root, dir string) (*os.File, string, error) {
	for {
		base, err := newWriteTempName()
		if err != nil {
			return nil, "", err
		}
		name := filepath.Join(dir, base)
		tmp, err := root.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return nil, "", err
		}
		if err := lockFile(tmp, true); err != nil {
			tmp.Close()
			root.Remove(name)
			return nil, "", err
		}
		if stillAt(root, tmp, name) {
			return tmp, name, nil
		}
		tmp.Close() // swept before we locked it
	}
}

// stillAt reports whether the open file f is the file at name under root.
func stillAt(root *os.Root, f *os.File, name string) bool {
	a, err := f.Stat()
	if err != nil {
		return false
	}
	b, err := root.Lstat(name)
	return err == nil && os.SameFile(a, b)
}

// sweepOnce removes, the first time this provider instance writes into dir (under root), the
// temporary files that no live writer holds (leftovers of a killed process).
func (p *Provider) sweepOnce(root *os.Root, dir string) {
	if _, done := p.swept.LoadOrStore(filepath.Join(root.Name(), dir), true); done {
		return
	}
	d, err := root.Open(dir)
	if err != nil {
		return
	}
	entries, err := d.ReadDir(-1)
	d.Close()
	if err != nil {
		return
	}
	for _, e := range entries {
		if !isWriteTemp(e.Name()) || !e.Type().IsRegular() {
			continue
		}
		name := filepath.Join(dir, e.Name())
		f, err := root.Open(name)
		if err != nil {
			continue
		}
		if lockFile(f, false) == nil && stillAt(root, f, name) {
			root.Remove(name) // nobody is writing it
		}
		f.Close()
	}
}
