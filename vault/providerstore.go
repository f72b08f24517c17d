package vault

import (
	"context"
	"errors"
	"fmt"
	"io"

	"svc.dev/svc/providers"
	"svc.dev/svc/providers/vaultfs"
)

// ProviderStore returns the tenant's vault as a vaultfs.Store, for the
// svc_vault provider: vaultfs.NewWithStore(v.ProviderStore(tenant)). Its
// blobs are the tenant's distinct stored contents (by digest); a Put
// preserves content as a new vault object (identical content is stored
// once). Errors wrap the providers sentinels (ErrNotFound, ErrInvalidData)
// as well as the vault's.
func (v *Vault) ProviderStore(tenant string) vaultfs.Store {
	return &providerStore{v: v, tenant: tenant}
}

type providerStore struct {
	v      *Vault
	tenant string
}

var _ vaultfs.Store = (*providerStore)(nil)

func providerErr(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, ErrNotFound):
		return fmt.Errorf("%w: %w", providers.ErrNotFound, err)
	case errors.Is(err, ErrInvalidData):
		return fmt.Errorf("%w: %w", providers.ErrInvalidData, err)
	case errors.Is(err, ErrInvalidArgument):
		return fmt.Errorf("%w: %w", providers.ErrInvalidArgument, err)
	}
	return err
}

func blobOf(b Blob) vaultfs.Blob {
	k := providers.Kind(b.Kind)
	if !k.Valid() {
		k = providers.KindFile
	}
	return vaultfs.Blob{Digest: b.Digest.String(), Size: b.Size, Name: b.Name, MIMEType: b.MIMEType, Kind: k, CreatedAt: b.CreatedAt}
}

// live reports whether a blob is listed: some object holds it.
func live(b Blob) bool { return b.Refs > 0 }

// List implements vaultfs.Store.
func (s *providerStore) List(ctx context.Context, after string, limit int) ([]vaultfs.Blob, error) {
	var from Digest
	if after != "" {
		d, err := ParseDigest(after)
		if err != nil {
			return nil, providerErr(err)
		}
		from = d
	}
	var out []vaultfs.Blob
	err := s.v.meta.View(ctx, s.tenant, func(tx MetaTx) error {
		out = out[:0]
		return tx.Blobs(from, func(b Blob) bool {
			if live(b) {
				out = append(out, blobOf(b))
			}
			return len(out) < limit
		})
	})
	return out, providerErr(err)
}

func (s *providerStore) blob(ctx context.Context, digest string) (Blob, error) {
	d, err := ParseDigest(digest)
	if err != nil {
		return Blob{}, fmt.Errorf("blob %q: %w", digest, ErrNotFound)
	}
	var b Blob
	err = s.v.meta.View(ctx, s.tenant, func(tx MetaTx) error {
		b, err = tx.Blob(d)
		return err
	})
	if err == nil && !live(b) {
		err = fmt.Errorf("blob %s: %w", d, ErrNotFound)
	}
	return b, err
}

// Stat implements vaultfs.Store.
func (s *providerStore) Stat(ctx context.Context, digest string) (vaultfs.Blob, error) {
	b, err := s.blob(ctx, digest)
	if err != nil {
		return vaultfs.Blob{}, providerErr(err)
	}
	return blobOf(b), nil
}

// Open implements vaultfs.Store: the content, verified as it is read.
func (s *providerStore) Open(ctx context.Context, digest string) (io.ReadCloser, vaultfs.Blob, error) {
	t, err := s.v.tenant(ctx, s.tenant)
	if err != nil {
		return nil, vaultfs.Blob{}, providerErr(err)
	}
	b, err := s.blob(ctx, digest)
	if err != nil {
		return nil, vaultfs.Blob{}, providerErr(err)
	}
	r, err := s.v.openBlob(ctx, t, &b, !b.Hot.good(), nil, "blob "+b.Digest.String())
	if err != nil {
		return nil, vaultfs.Blob{}, providerErr(err)
	}
	return &providerReader{r}, blobOf(b), nil
}

type providerReader struct{ io.ReadCloser }

func (r *providerReader) Read(p []byte) (int, error) {
	n, err := r.ReadCloser.Read(p)
	if err != io.EOF {
		err = providerErr(err)
	}
	return n, err
}

// Put implements vaultfs.Store: the content becomes a committed vault
// object.
func (s *providerStore) Put(ctx context.Context, r io.Reader, m vaultfs.PutMeta) (vaultfs.Blob, error) {
	req := PutRequest{Name: m.Name, MIMEType: m.MIMEType, Kind: string(m.Kind), SizeBytes: m.Size}
	if m.SHA256 != "" {
		d, err := ParseDigest(m.SHA256)
		if err != nil {
			return vaultfs.Blob{}, providerErr(err)
		}
		if d.IsZero() { // the request's "unknown"; no content has it
			return vaultfs.Blob{}, providerErr(fmt.Errorf("put: expected sha256 is zero: %w", ErrInvalidData))
		}
		req.SHA256 = d
	}
	o, err := s.v.Put(ctx, s.tenant, req, r)
	if err != nil {
		return vaultfs.Blob{}, providerErr(err)
	}
	return s.Stat(ctx, o.SHA256.String())
}

// Usage implements vaultfs.Store: the bytes of distinct content stored.
func (s *providerStore) Usage(ctx context.Context) (int64, error) {
	n, err := s.v.Usage(ctx, s.tenant)
	return n, providerErr(err)
}
