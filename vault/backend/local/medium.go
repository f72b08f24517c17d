package local

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"svc.dev/svc/vault/backend"
)

// Reading from the medium.
//
// The vault verifies what it wrote by reading it back, and a scrub re-reads
// what is stored; a read served from the page cache (which still holds the
// pages of a recent write) would only compare the cache with itself. So
// OpenMedium reads around the cache:
//
//   - with O_DIRECT where the filesystem allows it (ext4, xfs, ...): the
//     aligned blocks around the range are read from the device into an
//     aligned buffer (the kernel writes back dirty cached pages of the range
//     first, so the device holds what was written; the vault has synced them
//     already);
//   - elsewhere (tmpfs refuses O_DIRECT; other systems lack it) the range's
//     clean cached pages are dropped with posix_fadvise(POSIX_FADV_DONTNEED)
//     and the range read again, which then comes from the device (on tmpfs
//     memory is the medium, and nothing is dropped);
//   - where neither exists, Medium reports "" and the vault does not record
//     such reads as made from the medium.

// Medium implements backend.MediumReader: how OpenMedium reads ("direct",
// "evict", or "" where it cannot go around the cache).
func (b *Backend) Medium() string {
	b.mediumOnce.Do(func() { b.medium = probeMedium(filepath.Join(b.root, "tmp")) })
	return b.medium
}

// probeMedium finds whether files in dir open with O_DIRECT.
func probeMedium(dir string) string {
	if oDirect != 0 {
		f, err := os.CreateTemp(dir, "probe-")
		if err == nil {
			name := f.Name()
			f.Close()
			d, err := os.OpenFile(name, os.O_RDONLY|oDirect, 0)
			os.Remove(name)
			if err == nil {
				d.Close()
				return "direct"
			}
		}
	}
	if canEvict {
		return "evict"
	}
	return ""
}

// OpenMedium implements backend.MediumReader: Open, reading the range from the
// device rather than the page cache (see above).
func (b *Backend) OpenMedium(ctx context.Context, name string, offset, length int64) (io.ReadCloser, error) {
	if err := backend.ValidName(name); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	path := b.path(name)
	if length < 0 {
		st, err := os.Stat(path)
		if err != nil {
			return nil, notFound(name, err)
		}
		length = max(st.Size()-offset, 0)
	}
	if b.Medium() == "direct" {
		f, err := os.OpenFile(path, os.O_RDONLY|oDirect, 0)
		if err == nil {
			return readDirectRange(f, offset, length)
		}
		if os.IsNotExist(err) {
			return nil, notFound(name, err)
		}
		// Refused on this file: fall back to evicting.
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, notFound(name, err)
	}
	if err := evict(f, offset, length); err != nil && b.Medium() != "" {
		f.Close()
		return nil, fmt.Errorf("local backend: %s: drop cached pages: %w", name, err)
	}
	return &section{io.NewSectionReader(f, offset, length), f}, nil
}

// readDirectRange reads length bytes at offset of an O_DIRECT file: the
// aligned blocks around them, in one read into a pooled block when they fit
// (a pack region, a small file), else through a directReader.
func readDirectRange(f *os.File, offset, length int64) (io.ReadCloser, error) {
	start := offset &^ (align - 1)
	skip := offset - start
	end := (offset + length + align - 1) &^ (align - 1)
	if end-start > directBuf {
		d := newDirectReader(f, start, skip+length)
		if _, err := io.CopyN(io.Discard, d, skip); err != nil {
			d.Close()
			return nil, fmt.Errorf("local backend: direct read: %w", err)
		}
		return d, nil
	}
	defer f.Close()
	blk := getBlock()
	n, err := f.ReadAt(blk[:end-start], start)
	if err != nil && err != io.EOF {
		putBlock(blk)
		return nil, fmt.Errorf("local backend: direct read: %w", err)
	}
	got := max(min(int64(n)-skip, length), 0)
	return &blockReader{Reader: bytes.NewReader(blk[skip : skip+got]), blk: blk}, nil
}

// blockReader reads a pooled block, given back at Close.
type blockReader struct {
	*bytes.Reader
	blk []byte
}

func (r *blockReader) Close() error {
	if r.blk != nil {
		putBlock(r.blk)
		r.blk = nil
	}
	return nil
}
