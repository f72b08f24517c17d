// Package atomicfile writes whole files so that a crash at any instant leaves either the old
// file or the new one, never a part: the data goes to a temporary file in the same directory,
// is synced, then renamed (or linked) over the name, and the directory is synced so the new
// name itself survives a power loss.
package atomicfile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// ErrExist is returned (wrapped) by Create when the file already exists.
var ErrExist = fs.ErrExist

// Write replaces the file at path with data, mode perm.
func Write(path string, data []byte, perm fs.FileMode) error {
	return write(path, data, perm, true)
}

// Create writes a new file at path with data, mode perm, and fails with an error wrapping
// ErrExist if a file is there already (two processes creating the same key file: one wins).
func Create(path string, data []byte, perm fs.FileMode) error {
	return write(path, data, perm, false)
}

func write(path string, data []byte, perm fs.FileMode, replace bool) error {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, ".tmp-"+filepath.Base(path)+"-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer os.Remove(tmp.Name())
	err = tmp.Chmod(perm)
	if err == nil {
		_, err = tmp.Write(data)
	}
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		if replace {
			err = os.Rename(tmp.Name(), path)
		} else {
			err = os.Link(tmp.Name(), path)
		}
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := SyncDir(dir); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// SyncDir syncs a directory, so that the names created or renamed in it are durable.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("sync %s: %w", dir, err)
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if err != nil && !errors.Is(err, os.ErrInvalid) {
		return fmt.Errorf("sync %s: %w", dir, err)
	}
	return nil
}
