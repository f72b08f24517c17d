package vault

import (
	"context"
	"errors"
	"fmt"
	"io"

	"svc.dev/svc/vault/backend"
	"svc.dev/svc/vault/internal/seal"
)

const (
	purposeContent = "content"
	purposeText    = "text"
)

// openPlacement opens a verified reader of a copy of tenant t: sealed for
// purpose, bound to the content bind (its chunks, in the bound formats), and
// whose plaintext must be size bytes with SHA-256 want (for a content, want is
// bind; for its text, the text's digest). A missing file is lost content: an
// error wrapping ErrInvalidData.
func (v *Vault) openPlacement(ctx context.Context, be backend.Backend, t *tenant, p *Placement, purpose string, bind, want Digest, size int64, what string) (*verifiedReader, error) {
	return v.openCopy(ctx, be, false, t, p, purpose, bind, want, size, what)
}

// fromMedium reports whether verifications on be read the medium itself
// (backend.MediumReader), not a cache of what was written.
func (v *Vault) fromMedium(be backend.Backend) bool {
	m, ok := be.(backend.MediumReader)
	return ok && m.Medium() != ""
}

// openStored opens a range of a stored file: from the medium when medium is
// set and be can (backend.MediumReader), else as be serves it.
func (v *Vault) openStored(ctx context.Context, be backend.Backend, medium bool, name string, offset, length int64) (io.ReadCloser, error) {
	if m, ok := be.(backend.MediumReader); ok && medium && m.Medium() != "" {
		return m.OpenMedium(ctx, name, offset, length)
	}
	return be.Open(ctx, name, offset, length)
}

// openCopy is openPlacement, reading from the medium when medium is set.
func (v *Vault) openCopy(ctx context.Context, be backend.Backend, medium bool, t *tenant, p *Placement, purpose string, bind, want Digest, size int64, what string) (*verifiedReader, error) {
	rc, err := v.openStored(ctx, be, medium, p.Name, p.Offset, p.Length)
	if errors.Is(err, backend.ErrNotFound) {
		return nil, fmt.Errorf("%s: stored copy is missing: %w: %w", what, ErrInvalidData, err)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	sr := seal.NewBoundReader(rc, t.dataKey, purpose, seal.Binding{Tenant: t.name, Digest: bind}, p.Format)
	return newVerifiedReader(rc, sr, want, size, what, !v.legacy), nil
}

// verifyPlacement reads a copy to the end, from the medium where be can
// (fromMedium), and checks it; w, if not nil, receives the plaintext.
func (v *Vault) verifyPlacement(ctx context.Context, be backend.Backend, t *tenant, p *Placement, purpose string, bind, want Digest, size int64, what string, w io.Writer) error {
	r, err := v.openCopy(ctx, be, true, t, p, purpose, bind, want, size, what)
	if err != nil {
		return err
	}
	defer r.Close()
	if w == nil {
		w = io.Discard
	}
	_, err = r.WriteTo(w)
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

// Each calls fn for every object of a tenant in id order, reading a page of objects at a
// time (no read is held across fn), and stops at fn's first error.
func (v *Vault) Each(ctx context.Context, tenant string, fn func(Object) error) error {
	after := ""
	for {
		objs, more, err := v.List(ctx, tenant, after, 200, nil)
		if err != nil {
			return err
		}
		for _, o := range objs {
			after = o.ID
			if err := fn(o); err != nil {
				return err
			}
		}
		if !more || len(objs) == 0 {
			return nil
		}
	}
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
// treat anything but io.EOF as failure, and the object becomes corrupt (as
// Verify would make it). Objects in other states are ErrInvalidState.
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
	r, err := v.openBlob(ctx, t, &b, o.cold(), &o, "vault object "+id)
	if err != nil {
		return nil, Object{}, err
	}
	return r, o, nil
}

// openBlob opens the copy of b on the preferred tier, or the other tier's
// when that one is missing or known corrupt. A read that finds the copy
// bad marks it corrupt, and the object (when obj is not nil) too if that
// was its own tier's copy: a read is a verification.
func (v *Vault) openBlob(ctx context.Context, t *tenant, b *Blob, preferCold bool, obj *Object, what string) (io.ReadCloser, error) {
	type copy struct {
		be   backend.Backend
		p    *Placement
		cold bool
	}
	order := []copy{{v.hot, b.Hot, false}, {v.cold, b.Cold, true}}
	if preferCold {
		order[0], order[1] = order[1], order[0]
	}
	for _, c := range order {
		if !c.p.good() {
			continue
		}
		failed := func(cause error) { v.readFailed(t, b.Digest, obj, c.p, c.cold, cause) }
		r, err := v.openPlacement(ctx, c.be, t, c.p, purposeContent, b.Digest, b.Digest, b.Size, what)
		if errors.Is(err, ErrInvalidData) {
			failed(err)
		}
		if err != nil {
			return nil, err
		}
		r.onInvalid = failed
		return r, nil
	}
	return nil, fmt.Errorf("%s: no intact stored copy: %w", what, ErrInvalidData)
}

// readFailed records a copy that a read found bad.
func (v *Vault) readFailed(t *tenant, d Digest, obj *Object, p *Placement, cold bool, cause error) {
	ctx := context.Background()
	if obj == nil || obj.cold() != cold {
		v.markCopyCorrupt(ctx, t, d, p.Name, p.Offset, cold)
		return
	}
	pr := probe{digest: d, cold: cold, name: p.Name, offset: p.Offset, err: cause}
	_ = v.meta.Update(ctx, t.name, func(tx MetaTx) error {
		_, err := v.applyProbe(tx, obj.ID, pr, v.now())
		return err
	})
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
		return v.openBlob(ctx, t, &b, o.cold(), &o, "vault object "+id)
	case b.TextRange.Length > 0:
		r, err := v.openBlob(ctx, t, &b, o.cold(), &o, "vault object "+id)
		if err != nil {
			return nil, err
		}
		return &rangeReader{rc: r, skip: b.TextRange.Offset, left: b.TextRange.Length}, nil
	case b.Text != nil:
		if !b.Text.good() {
			return nil, fmt.Errorf("text of vault object %s: stored text is corrupt: %w", id, ErrInvalidData)
		}
		return v.openPlacement(ctx, v.hot, t, b.Text, purposeText, b.Digest, b.TextDigest, b.TextSize, "text of vault object "+id)
	}
	return nil, fmt.Errorf("text of vault object %s: %w", id, ErrNotFound)
}

// Usage returns the bytes of distinct content a tenant stores (each
// content once, however many objects use it; before encryption).
func (v *Vault) Usage(ctx context.Context, tenant string) (int64, error) {
	if err := validTenant(tenant); err != nil {
		return 0, err
	}
	var total int64
	err := v.meta.View(ctx, tenant, func(tx MetaTx) error {
		total = 0
		return tx.Blobs(Digest{}, func(b Blob) bool {
			if b.Refs > 0 {
				total += b.Size
			}
			return true
		})
	})
	if err != nil {
		return 0, fmt.Errorf("vault usage: %w", err)
	}
	return total, nil
}

// rangeReader reads a range of a verified content stream. After the range it
// reads the content to its end, so that the stream's verification (size and
// SHA-256, at its end) is what ends the range: io.EOF only if the whole content
// verified.
type rangeReader struct {
	rc         io.ReadCloser
	skip, left int64
}

func (r *rangeReader) Read(p []byte) (int, error) {
	if r.skip > 0 {
		n, err := io.CopyN(io.Discard, r.rc, r.skip)
		r.skip -= n
		if err != nil {
			return 0, unexpected(err)
		}
	}
	if r.left == 0 {
		if _, err := io.Copy(io.Discard, r.rc); err != nil {
			return 0, err
		}
		return 0, io.EOF
	}
	if int64(len(p)) > r.left {
		p = p[:r.left]
	}
	n, err := r.rc.Read(p)
	r.left -= int64(n)
	if err == io.EOF && r.left > 0 {
		err = io.ErrUnexpectedEOF
	} else if err == io.EOF {
		err = nil
	}
	return n, err
}

// unexpected turns an early end of the content into io.ErrUnexpectedEOF.
func unexpected(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

func (r *rangeReader) Close() error { return r.rc.Close() }
