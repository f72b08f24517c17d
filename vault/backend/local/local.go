// Package local is the vault's default backend: files under a directory on
// local disk.
//
// A file is written in ROOT/tmp, fsynced, renamed into place and its
// directory fsynced, so that a committed file survives a crash and a crash
// before Commit leaves only a temporary file. New cleans ROOT/tmp: a
// directory is used by one process at a time (the vault's own data
// directory), so whatever is there was left by a crash.
package local

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"

	"svc.dev/svc/vault/backend"
)

// Backend is a backend.Backend on a local directory.
type Backend struct {
	root       string
	mediumOnce sync.Once
	medium     string // how OpenMedium reads (Medium)
}

var (
	_ backend.Backend      = (*Backend)(nil)
	_ backend.Saver        = (*Backend)(nil)
	_ backend.MediumReader = (*Backend)(nil)
)

// New opens (creating if needed) a local backend rooted at dir and removes
// temporary files left by a crash.
func New(dir string) (*Backend, error) {
	if dir == "" {
		return nil, errors.New("local backend: empty directory")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("local backend: %w", err)
	}
	if err := os.MkdirAll(filepath.Join(abs, "tmp"), 0o700); err != nil {
		return nil, fmt.Errorf("local backend: %w", err)
	}
	b := &Backend{root: abs}
	if _, err := b.CleanTemp(); err != nil {
		return nil, err
	}
	return b, nil
}

// CleanTemp removes every temporary file and returns how many it removed.
// Writes in flight in another process on the same directory would fail at
// Commit (never commit something partial), which is why a directory belongs
// to one process.
func (b *Backend) CleanTemp() (int, error) {
	entries, err := os.ReadDir(filepath.Join(b.root, "tmp"))
	if err != nil {
		return 0, fmt.Errorf("local backend: clean temporary files: %w", err)
	}
	n := 0
	for _, e := range entries {
		if err := os.Remove(filepath.Join(b.root, "tmp", e.Name())); err == nil {
			n++
		}
	}
	return n, nil
}

// Root returns the backend's directory.
func (b *Backend) Root() string { return b.root }

// String implements backend.Backend.
func (b *Backend) String() string { return "local:" + b.root }

func (b *Backend) path(name string) string { return filepath.Join(b.root, filepath.FromSlash(name)) }

// Create implements backend.Backend.
func (b *Backend) Create(ctx context.Context) (backend.File, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return b.create(true)
}

// create starts a temporary file, with O_DIRECT if direct and the
// filesystem allows it.
func (b *Backend) create(direct bool) (*file, error) {
	var r [12]byte
	_, _ = rand.Read(r[:])
	name := filepath.Join(b.root, "tmp", "w-"+hex.EncodeToString(r[:]))
	flag := 0
	if direct {
		flag = oDirect
	}
	f, err := os.OpenFile(name, os.O_CREATE|os.O_EXCL|os.O_WRONLY|flag, 0o600)
	if err != nil && flag != 0 {
		f, err = os.OpenFile(name, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600) // no O_DIRECT here
		if err != nil {
			return nil, fmt.Errorf("local backend: create: %w", err)
		}
		return &file{b: b, f: f}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("local backend: create: %w", err)
	}
	fl := &file{b: b, f: f}
	if flag != 0 {
		fl.dw = newDirectWriter(f)
	}
	return fl, nil
}

// Save implements backend.Saver: small data known in full (a pack) goes
// through the page cache, where the read-back that follows finds it; see
// direct.go for why large files do not.
func (b *Backend) Save(ctx context.Context, name string, data []byte) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	fl, err := b.create(false)
	if err != nil {
		return err
	}
	if _, err := fl.Write(data); err != nil {
		_ = fl.Abort()
		return fmt.Errorf("local backend: write %s: %w", name, err)
	}
	return fl.Commit(ctx, name)
}

type file struct {
	b    *Backend
	f    *os.File
	dw   *directWriter // nil without O_DIRECT
	done bool
}

func (f *file) Write(p []byte) (int, error) {
	if f.dw != nil {
		return f.dw.Write(p)
	}
	return f.f.Write(p)
}

func (f *file) Abort() error {
	if f.done {
		return nil
	}
	f.done = true
	if f.dw != nil {
		f.dw.abort()
	}
	f.f.Close()
	return os.Remove(f.f.Name())
}

// Commit fsyncs the file, renames it into place and fsyncs the directory
// (and any directory it had to create, and that one's parent).
func (f *file) Commit(ctx context.Context, name string) (err error) {
	if f.done {
		return errors.New("local backend: file already committed or aborted")
	}
	defer func() {
		if err != nil {
			_ = f.Abort()
		}
	}()
	if err := backend.ValidName(name); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if f.dw != nil {
		if err := f.dw.finish(); err != nil {
			return fmt.Errorf("local backend: write %s: %w", name, err)
		}
	}
	if err := f.f.Sync(); err != nil {
		return fmt.Errorf("local backend: sync %s: %w", name, err)
	}
	if err := f.f.Close(); err != nil {
		return fmt.Errorf("local backend: close %s: %w", name, err)
	}
	dst := f.b.path(name)
	if err := f.b.mkdirs(path.Dir(name)); err != nil {
		return err
	}
	if err := os.Rename(f.f.Name(), dst); err != nil {
		return fmt.Errorf("local backend: commit %s: %w", name, err)
	}
	f.done = true
	return syncDir(filepath.Dir(dst))
}

// mkdirs creates dir (a slash name) and its missing parents, fsyncing the
// parent of every directory it creates so the new entries are durable.
func (b *Backend) mkdirs(dir string) error {
	if dir == "." || dir == "" {
		return nil
	}
	full := b.path(dir)
	if fi, err := os.Stat(full); err == nil && fi.IsDir() {
		return nil
	}
	if err := b.mkdirs(path.Dir(dir)); err != nil {
		return err
	}
	if err := os.Mkdir(full, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("local backend: %w", err)
	}
	return syncDir(filepath.Dir(full))
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("local backend: sync dir: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("local backend: sync dir %s: %w", dir, err)
	}
	return nil
}

func notFound(name string, err error) error {
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("local backend: %s: %w", name, backend.ErrNotFound)
	}
	return fmt.Errorf("local backend: %s: %w", name, err)
}

// Open implements backend.Backend.
func (b *Backend) Open(ctx context.Context, name string, offset, length int64) (io.ReadCloser, error) {
	if err := backend.ValidName(name); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if d := openDirect(b.path(name), offset, length); d != nil {
		return d, nil
	}
	f, err := os.Open(b.path(name))
	if err != nil {
		return nil, notFound(name, err)
	}
	if offset == 0 && length < 0 {
		return f, nil
	}
	if length < 0 {
		length = 1<<63 - 1 - offset
	}
	return &section{io.NewSectionReader(f, offset, length), f}, nil
}

type section struct {
	*io.SectionReader
	f *os.File
}

func (s *section) Close() error { return s.f.Close() }

// Stat implements backend.Backend.
func (b *Backend) Stat(ctx context.Context, name string) (backend.Info, error) {
	if err := backend.ValidName(name); err != nil {
		return backend.Info{}, err
	}
	fi, err := os.Stat(b.path(name))
	if err != nil {
		return backend.Info{}, notFound(name, err)
	}
	return backend.Info{Name: name, Size: fi.Size(), ModTime: fi.ModTime()}, nil
}

// Remove implements backend.Backend.
func (b *Backend) Remove(ctx context.Context, name string) error {
	if err := backend.ValidName(name); err != nil {
		return err
	}
	if err := os.Remove(b.path(name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("local backend: remove %s: %w", name, err)
	}
	return nil
}

// Prune implements backend.Pruner: it removes the empty directories under prefix, deepest
// first, and prefix's own directory when it is left empty.
func (b *Backend) Prune(ctx context.Context, prefix string) error {
	if !strings.HasSuffix(prefix, "/") || backend.ValidName(strings.TrimSuffix(prefix, "/")) != nil {
		return fmt.Errorf("local backend: prune %q: %w", prefix, backend.ErrInvalidName)
	}
	root := b.path(strings.TrimSuffix(prefix, "/"))
	var dirs []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if d.IsDir() {
			dirs = append(dirs, p)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("local backend: prune %s: %w", prefix, err)
	}
	for i := len(dirs) - 1; i >= 0; i-- {
		if err := ctx.Err(); err != nil {
			return err
		}
		os.Remove(dirs[i]) // fails, as it should, on a directory that still holds a file
	}
	return nil
}

// List implements backend.Backend. Temporary files are never listed.
func (b *Backend) List(ctx context.Context, prefix string, fn func(backend.Info) error) error {
	// Walk from the deepest directory the prefix names.
	start := "."
	if i := strings.LastIndexByte(prefix, '/'); i >= 0 {
		start = prefix[:i]
	}
	err := filepath.WalkDir(b.path(start), func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		rel, _ := filepath.Rel(b.root, p)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if rel == "tmp" {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() || !strings.HasPrefix(rel, prefix) {
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return nil // removed meanwhile
		}
		return fn(backend.Info{Name: rel, Size: fi.Size(), ModTime: fi.ModTime()})
	})
	if err != nil {
		return fmt.Errorf("local backend: list %q: %w", prefix, err)
	}
	return nil
}
