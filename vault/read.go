package vault

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"hash"
	"io"

	"svc.dev/svc/vault/backend"
	"svc.dev/svc/vault/internal/seal"
)

const (
	purposeContent = "content"
	purposeText    = "text"
)

// verifiedReader decrypts a sealed copy and checks its size and SHA-256:
// a mismatch is reported, wrapping ErrInvalidData, instead of io.EOF. Every
// byte it returns was authenticated (chunk by chunk) under the tenant's
// key; the digest check at the end proves the whole.
type verifiedReader struct {
	rc   io.ReadCloser
	sr   *seal.Reader
	h    hash.Hash
	n    int64
	want Digest
	size int64
	what string
	err  error
}

func newVerifiedReader(rc io.ReadCloser, key []byte, purpose string, want Digest, size int64, what string) *verifiedReader {
	return &verifiedReader{rc: rc, sr: seal.NewReader(rc, key, purpose), h: sha256.New(), want: want, size: size, what: what}
}

func (r *verifiedReader) Read(p []byte) (int, error) {
	if r.err != nil {
		return 0, r.err
	}
	n, err := r.sr.Read(p)
	r.h.Write(p[:n])
	r.n += int64(n)
	switch {
	case r.n > r.size:
		err = fmt.Errorf("%s: more than %d bytes: %w", r.what, r.size, ErrInvalidData)
	case err == io.EOF:
		var got Digest
		r.h.Sum(got[:0])
		if r.n != r.size {
			err = fmt.Errorf("%s: %d bytes, want %d: %w", r.what, r.n, r.size, ErrInvalidData)
		} else if got != r.want {
			err = fmt.Errorf("%s: reads as sha256 %s, want %s: %w", r.what, got, r.want, ErrInvalidData)
		}
	case errors.Is(err, seal.ErrAuth):
		err = fmt.Errorf("%s: %w: %w", r.what, ErrInvalidData, err)
	}
	r.err = err
	return n, err
}

func (r *verifiedReader) Close() error { return r.rc.Close() }

// openPlacement opens a verified reader of a copy. A missing file is lost
// content: an error wrapping ErrInvalidData.
func (v *Vault) openPlacement(ctx context.Context, be backend.Backend, p *Placement, key []byte, purpose string, want Digest, size int64, what string) (*verifiedReader, error) {
	rc, err := be.Open(ctx, p.Name, p.Offset, p.Length)
	if errors.Is(err, backend.ErrNotFound) {
		return nil, fmt.Errorf("%s: stored copy is missing: %w: %w", what, ErrInvalidData, err)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return newVerifiedReader(rc, key, purpose, want, size, what), nil
}

// verifyPlacement reads a copy to the end and checks it; w, if not nil,
// receives the plaintext.
func (v *Vault) verifyPlacement(ctx context.Context, be backend.Backend, p *Placement, key []byte, purpose string, want Digest, size int64, what string, w io.Writer) error {
	r, err := v.openPlacement(ctx, be, p, key, purpose, want, size, what)
	if err != nil {
		return err
	}
	defer r.Close()
	if w == nil {
		w = io.Discard
	}
	buf := make([]byte, 256<<10)
	_, err = io.CopyBuffer(w, r, buf)
	return err
}

// Get returns a vault object's record.
func (v *Vault) Get(ctx context.Context, tenant, id string) (Object, error) {
	if err := validTenant(tenant); err != nil {
		return Object{}, err
	}
	var o Object
	err := v.meta.View(ctx, tenant, func(tx MetaTx) error {
		var err error
		o, err = tx.Object(id)
		return err
	})
	if err != nil {
		return Object{}, fmt.Errorf("get vault object %s: %w", id, err)
	}
	return o, nil
}

// List returns up to limit objects with ids after after, in id (creation)
// order, that keep accepts (nil: all), and whether more may follow.
func (v *Vault) List(ctx context.Context, tenant, after string, limit int, keep func(Object) bool) ([]Object, bool, error) {
	if err := validTenant(tenant); err != nil {
		return nil, false, err
	}
	var out []Object
	more := false
	err := v.meta.View(ctx, tenant, func(tx MetaTx) error {
		out, more = out[:0], false
		return tx.Objects(after, func(o Object) bool {
			if keep != nil && !keep(o) {
				return true
			}
			if len(out) == limit {
				more = true
				return false
			}
			out = append(out, o)
			return true
		})
	})
	if err != nil {
		return nil, false, fmt.Errorf("list vault objects: %w", err)
	}
	return out, more, nil
}

// Open returns a committed or cold object's content. Reading it decrypts
// and verifies as it goes: every chunk is authenticated before it is
// returned, and at the end the size and SHA-256 are checked; a mismatch is
// an error wrapping ErrInvalidData instead of io.EOF, so a consumer must
// treat anything but io.EOF as failure. Objects in other states are
// ErrInvalidState.
func (v *Vault) Open(ctx context.Context, tenant, id string) (io.ReadCloser, Object, error) {
	t, err := v.tenant(ctx, tenant)
	if err != nil {
		return nil, Object{}, err
	}
	var o Object
	var b Blob
	err = v.meta.View(ctx, tenant, func(tx MetaTx) error {
		var err error
		if o, err = tx.Object(id); err != nil {
			return err
		}
		if o.State != StateCommitted && o.State != StateCold {
			return fmt.Errorf("%w: the object is %s", ErrInvalidState, o.State)
		}
		b, err = tx.Blob(o.SHA256)
		return err
	})
	if err != nil {
		return nil, Object{}, fmt.Errorf("open vault object %s: %w", id, err)
	}
	r, err := v.openBlob(ctx, t, &b, o.cold(), "vault object "+id)
	if err != nil {
		return nil, Object{}, err
	}
	return r, o, nil
}

// openBlob opens the copy of b on the preferred tier, or the other tier's
// when that one is missing or known corrupt.
func (v *Vault) openBlob(ctx context.Context, t *tenant, b *Blob, preferCold bool, what string) (io.ReadCloser, error) {
	type copy struct {
		be backend.Backend
		p  *Placement
	}
	order := []copy{{v.hot, b.Hot}, {v.cold, b.Cold}}
	if preferCold {
		order[0], order[1] = order[1], order[0]
	}
	for _, c := range order {
		if c.p.good() {
			return v.openPlacement(ctx, c.be, c.p, t.dataKey, purposeContent, b.Digest, b.Size, what)
		}
	}
	return nil, fmt.Errorf("%s: no intact stored copy: %w", what, ErrInvalidData)
}

// OpenText returns the object's extracted text (UTF-8 for extracted text;
// the content itself for text documents), verified like Open. An object
// without text is ErrNotFound.
func (v *Vault) OpenText(ctx context.Context, tenant, id string) (io.ReadCloser, error) {
	t, err := v.tenant(ctx, tenant)
	if err != nil {
		return nil, err
	}
	var o Object
	var b Blob
	err = v.meta.View(ctx, tenant, func(tx MetaTx) error {
		var err error
		if o, err = tx.Object(id); err != nil {
			return err
		}
		if o.State != StateCommitted && o.State != StateCold {
			return fmt.Errorf("%w: the object is %s", ErrInvalidState, o.State)
		}
		b, err = tx.Blob(o.SHA256)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("open text of vault object %s: %w", id, err)
	}
	switch {
	case b.TextIsContent:
		return v.openBlob(ctx, t, &b, o.cold(), "vault object "+id)
	case b.Text != nil:
		if !b.Text.good() {
			return nil, fmt.Errorf("text of vault object %s: stored text is corrupt: %w", id, ErrInvalidData)
		}
		return v.openPlacement(ctx, v.hot, b.Text, t.dataKey, purposeText, b.TextDigest, b.TextSize, "text of vault object "+id)
	}
	return nil, fmt.Errorf("text of vault object %s: %w", id, ErrNotFound)
}
