package migrate

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"

	"svc.dev/svc/vault/backend"
	"svc.dev/svc/vault/backend/local"
)

// copyVaultTier copies every file of a local vault tier (dir) to dst: each is streamed up,
// read back from dst, and its SHA-256 compared with the source's. It returns how many files
// and bytes it copied. The files are the vault's sealed blobs and packs: they move as they
// are, and the cluster opens them with the wrapped data keys copied with the records.
func copyVaultTier(ctx context.Context, dir string, dst backend.Backend) (int, int64, error) {
	if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		return 0, 0, nil
	}
	src, err := local.New(dir)
	if err != nil {
		return 0, 0, err
	}
	var infos []backend.Info
	if err := src.List(ctx, "", func(i backend.Info) error { infos = append(infos, i); return nil }); err != nil {
		return 0, 0, fmt.Errorf("list %s: %w", dir, err)
	}
	var size int64
	for _, info := range infos {
		sum, n, err := copyFile(ctx, src, dst, info.Name)
		if err != nil {
			return 0, 0, fmt.Errorf("copy %s: %w", info.Name, err)
		}
		back, m, err := hashFile(ctx, dst, info.Name)
		if err != nil {
			return 0, 0, fmt.Errorf("read back %s from %s: %w", info.Name, dst, err)
		}
		if m != n || !bytes.Equal(back, sum) {
			return 0, 0, fmt.Errorf("%w: vault file %s: %d bytes, SHA-256 %x in the source; %d bytes, %x in %s", ErrMismatch, info.Name, n, sum, m, back, dst)
		}
		size += n
	}
	return len(infos), size, nil
}

// copyFile streams one file from src to dst and returns its SHA-256 and size as read.
func copyFile(ctx context.Context, src, dst backend.Backend, name string) ([]byte, int64, error) {
	r, err := src.Open(ctx, name, 0, -1)
	if err != nil {
		return nil, 0, err
	}
	defer r.Close()
	f, err := dst.Create(ctx)
	if err != nil {
		return nil, 0, err
	}
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(f, h), r)
	if err != nil {
		f.Abort()
		return nil, 0, err
	}
	if err := f.Commit(ctx, name); err != nil {
		return nil, 0, err
	}
	return h.Sum(nil), n, nil
}

func hashFile(ctx context.Context, b backend.Backend, name string) ([]byte, int64, error) {
	r, err := b.Open(ctx, name, 0, -1)
	if err != nil {
		return nil, 0, err
	}
	defer r.Close()
	h := sha256.New()
	n, err := io.Copy(h, r)
	if err != nil {
		return nil, 0, err
	}
	return h.Sum(nil), n, nil
}
