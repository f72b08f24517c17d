package local

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"

	"svc.dev/svc/vault/backend"
)

var _ backend.Appender = (*Backend)(nil)

// OpenAppend implements backend.Appender. A new file's directory entry is
// made durable before the file is returned.
func (b *Backend) OpenAppend(ctx context.Context, name string) (backend.AppendFile, error) {
	if err := backend.ValidName(name); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := b.mkdirs(path.Dir(name)); err != nil {
		return nil, err
	}
	p := b.path(name)
	f, err := os.OpenFile(p, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	switch {
	case err == nil:
		if err := syncDir(filepath.Dir(p)); err != nil {
			f.Close()
			return nil, err
		}
	case errors.Is(err, fs.ErrExist):
		if f, err = os.OpenFile(p, os.O_WRONLY, 0); err != nil {
			return nil, fmt.Errorf("local backend: append %s: %w", name, err)
		}
	default:
		return nil, fmt.Errorf("local backend: append %s: %w", name, err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("local backend: append %s: %w", name, err)
	}
	return &appendFile{f: f, name: name, off: fi.Size()}, nil
}

type appendFile struct {
	f    *os.File
	name string
	off  int64
}

func (a *appendFile) Append(p []byte) (int64, error) {
	off := a.off
	n, err := a.f.WriteAt(p, off)
	a.off += int64(n)
	if err != nil {
		return off, fmt.Errorf("local backend: append %s: %w", a.name, err)
	}
	return off, nil
}

func (a *appendFile) Sync() error {
	if err := datasync(a.f); err != nil {
		return fmt.Errorf("local backend: sync %s: %w", a.name, err)
	}
	return nil
}

func (a *appendFile) Close() error { return a.f.Close() }
