// Package backend declares where the vault keeps its bytes: a Backend is a
// flat namespace of immutable files (local disk, an S3-compatible bucket).
// The vault encrypts everything before it reaches a backend and verifies
// everything it reads back, so a backend only has to store and return bytes
// faithfully, and make a committed file durable.
//
// The contract, which backendtest.Run checks for any implementation:
//
//   - Names are slash-separated relative paths of the characters
//     [A-Za-z0-9._%-] (ValidName); "tmp" at the top is the backend's own.
//   - A File written through Create is invisible under any name until
//     Commit, which makes it durable and visible under its name atomically,
//     replacing a file of that name. A File that is neither committed nor
//     aborted (a crash) leaves nothing that List shows.
//   - Open reads a byte range of a committed file; a missing file is an
//     error wrapping ErrNotFound.
//   - Remove is idempotent: removing a missing file succeeds.
//   - Implementations are safe for concurrent use.
//
// Optional capabilities are one-method interfaces found by type assertion
// (Saver, Appender, MediumReader).
package backend

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"
)

// ErrNotFound is returned when a named file does not exist.
var ErrNotFound = errors.New("backend: file not found")

// ErrInvalidName is returned for a name that ValidName rejects.
var ErrInvalidName = errors.New("backend: invalid file name")

// Backend stores the vault's files.
type Backend interface {
	// Create starts a new file. Nothing is visible until File.Commit.
	Create(ctx context.Context) (File, error)
	// Open returns length bytes of the named file from offset (length < 0:
	// to the end). A missing file is an error wrapping ErrNotFound.
	Open(ctx context.Context, name string, offset, length int64) (io.ReadCloser, error)
	// Stat returns a file's size and modification time, or an error
	// wrapping ErrNotFound.
	Stat(ctx context.Context, name string) (Info, error)
	// Remove deletes a file; a missing file is not an error.
	Remove(ctx context.Context, name string) error
	// List calls fn for every committed file whose name starts with
	// prefix, in no particular order; an error from fn stops the listing
	// and is returned.
	List(ctx context.Context, prefix string, fn func(Info) error) error
	// String describes the backend for logs and errors (never a secret).
	String() string
}

// File is a file being written. Exactly one of Commit and Abort must be
// called.
type File interface {
	io.Writer
	// Commit makes the written bytes durable and visible under name,
	// atomically, replacing any file of that name.
	Commit(ctx context.Context, name string) error
	// Abort discards the file.
	Abort() error
}

// Pruner is an optional capability of a backend with directories: remove the empty
// directories under a prefix that ends in "/" (an erased tenant's), the prefix's own included.
// Files are never removed; a directory that still holds one stays.
type Pruner interface {
	Prune(ctx context.Context, prefix string) error
}

// Saver is an optional capability: store data durably under name in one
// call, which an object store does without the copy that Create and Commit
// need for content whose name is only known at the end.
type Saver interface {
	Save(ctx context.Context, name string, data []byte) error
}

// Appender is an optional capability: a file that grows, so that many
// small writes share one file and each costs one data sync instead of a
// file creation, a rename and a directory sync. The vault appends each
// group commit to its tenant's open pack through it.
type Appender interface {
	// OpenAppend opens name for appending, creating it (durably, with its
	// directory entry) if it does not exist. One writer at a time.
	OpenAppend(ctx context.Context, name string) (AppendFile, error)
}

// AppendFile is a file opened by Appender.OpenAppend.
type AppendFile interface {
	// Append writes p at the end of the file and returns where it starts.
	// The bytes are readable at once and durable after Sync.
	Append(p []byte) (offset int64, err error)
	// Sync makes everything appended so far durable.
	Sync() error
	// Close closes the file.
	Close() error
}

// MediumReader is an optional capability: read a byte range from the
// storage medium itself, not from a cache of recent writes (the page cache),
// so that a read-back or a scrub verifies what the medium holds. The vault
// reads through it whenever it verifies (the read-back of a write, Verify,
// Scrub), and records such verifications as made from the medium.
type MediumReader interface {
	// OpenMedium is Open, reading around any local cache.
	OpenMedium(ctx context.Context, name string, offset, length int64) (io.ReadCloser, error)
	// Medium says how ("direct": O_DIRECT; "evict": cached pages dropped,
	// then read; "remote": a store with no local cache), or "" when this
	// backend cannot go around its cache.
	Medium() string
}

// Info describes a committed file.
type Info struct {
	Name    string
	Size    int64
	ModTime time.Time
}

// Save stores data under name through b's Saver, or with Create and Commit.
func Save(ctx context.Context, b Backend, name string, data []byte) error {
	if s, ok := b.(Saver); ok {
		return s.Save(ctx, name, data)
	}
	f, err := b.Create(ctx)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		_ = f.Abort()
		return err
	}
	return f.Commit(ctx, name)
}

// ValidName reports (as an error wrapping ErrInvalidName) whether name is a
// file name a backend accepts.
func ValidName(name string) error {
	if name == "" || len(name) > 512 || strings.HasPrefix(name, "/") || strings.HasSuffix(name, "/") || name == "tmp" || strings.HasPrefix(name, "tmp/") {
		return fmt.Errorf("%w: %q", ErrInvalidName, name)
	}
	for _, part := range strings.Split(name, "/") {
		if part == "" || part == "." || part == ".." {
			return fmt.Errorf("%w: %q", ErrInvalidName, name)
		}
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '.', c == '_', c == '%', c == '-', c == '/':
		default:
			return fmt.Errorf("%w: %q", ErrInvalidName, name)
		}
	}
	return nil
}
