package vault

import (
	"time"

	"context"
	"errors"
	"fmt"
)

// Delete deletes a vault object: the record goes to deleting, the
// object's reference on its content is dropped (and the content's stored
// copies with it when no other object of the tenant uses them), and the
// record stays, deleted, as evidence. Deleting a deleted object returns it;
// an interrupted deletion is finished by calling Delete again or by Scrub.
// Any state may be deleted, so a failed upload can be abandoned.
func (v *Vault) Delete(ctx context.Context, tenant, id string) (Object, error) {
	t, err := v.tenant(ctx, tenant)
	if err != nil {
		return Object{}, err
	}
	var o Object
	err = v.meta.Update(ctx, tenant, func(tx MetaTx) error {
		var err error
		if o, err = tx.Object(id); err != nil {
			return err
		}
		if o.State == StateDeleting || o.State == StateDeleted {
			return nil
		}
		if err := transition(&o, StateDeleting); err != nil {
			return err
		}
		return tx.PutObject(o)
	})
	if err != nil {
		return Object{}, fmt.Errorf("delete vault object %s: %w", id, err)
	}
	if o.State == StateDeleted {
		return o, nil
	}
	return v.finishDelete(ctx, t, o)
}

// finishDelete takes a deleting object to deleted.
func (v *Vault) finishDelete(ctx context.Context, t *tenant, o Object) (Object, error) {
	if o.Held {
		defer v.locks.lock(lockKey(t, o.SHA256))()
	}
	var rm []removal
	err := v.meta.Update(ctx, t.name, func(tx MetaTx) error {
		rm = nil
		var err error
		if o, err = tx.Object(o.ID); err != nil {
			return err
		}
		if o.State != StateDeleting {
			return nil
		}
		if o.Held {
			b, err := tx.Blob(o.SHA256)
			switch {
			case err == nil:
				b.Refs--
				if o.cold() {
					b.ColdRefs--
				}
				if rm, err = v.trim(tx, &b); err != nil {
					return err
				}
			case !errors.Is(err, ErrNotFound):
				return err
			}
			o.Held = false
		}
		if err := transition(&o, StateDeleted); err != nil {
			return err
		}
		return tx.PutObject(o)
	})
	if err != nil {
		return Object{}, fmt.Errorf("delete vault object %s: %w", o.ID, err)
	}
	v.remove(ctx, rm)
	if o.State == StateDeleted {
		v.changed(ctx, t.name, o)
	}
	return o, nil
}

// Cold moves a committed object to the cold tier: its content is copied
// there (unless a copy is there already), read back and verified, then the
// object becomes cold; the hot copy is dropped once no committed object
// uses the content. A cold object's reads come from the cold tier and are
// verified the same way. Cold on a cold object returns it.
func (v *Vault) Cold(ctx context.Context, tenant, id string) (Object, error) {
	return v.moveTier(ctx, tenant, id, true)
}

// Warm brings a cold object back to the hot tier (committed), copying and
// verifying its content there if needed. Warm on a committed object
// returns it.
func (v *Vault) Warm(ctx context.Context, tenant, id string) (Object, error) {
	return v.moveTier(ctx, tenant, id, false)
}

func (v *Vault) moveTier(ctx context.Context, tenant, id string, toCold bool) (Object, error) {
	op, from, to := "warm", StateCold, StateCommitted
	if toCold {
		op, from, to = "cold", StateCommitted, StateCold
	}
	t, err := v.tenant(ctx, tenant)
	if err != nil {
		return Object{}, err
	}
	o, err := v.Get(ctx, tenant, id)
	if err != nil {
		return Object{}, fmt.Errorf("%s: %w", op, err)
	}
	if o.State == to {
		return o, nil
	}
	if o.State != from {
		return Object{}, fmt.Errorf("%s: %w", op, &TransitionError{ID: id, From: o.State, To: to})
	}
	defer v.locks.lock(lockKey(t, o.SHA256))()
	var b Blob
	if err := v.meta.View(ctx, tenant, func(tx MetaTx) error {
		var err error
		b, err = tx.Blob(o.SHA256)
		return err
	}); err != nil {
		return Object{}, fmt.Errorf("%s %s: %w", op, id, err)
	}
	dst := b.Hot
	if toCold {
		dst = b.Cold
	}
	var fresh *Placement
	if !dst.good() {
		if fresh, err = v.copyTier(ctx, t, &b, toCold, "vault object "+id); err != nil {
			return Object{}, fmt.Errorf("%s %s: %w", op, id, err)
		}
	}
	var rm []removal
	err = v.meta.Update(ctx, tenant, func(tx MetaTx) error {
		rm = nil
		o, err := tx.Object(id)
		if err != nil {
			return err
		}
		if o.State == to {
			return nil
		}
		b, err := tx.Blob(o.SHA256)
		if err != nil {
			return err
		}
		slot, be := &b.Hot, v.hot
		if toCold {
			slot, be = &b.Cold, v.cold
		}
		if fresh != nil {
			if *slot != nil && !(*slot).same(fresh) {
				r, err := v.release(tx, *slot, be)
				if err != nil {
					return err
				}
				rm = append(rm, r...)
			}
			p := *fresh
			*slot = &p
		}
		if !(*slot).good() {
			return fmt.Errorf("no intact copy on the target tier: %w", ErrInvalidData)
		}
		if err := transition(&o, to); err != nil {
			return err
		}
		if toCold {
			b.ColdRefs++
			o.ColdSince = v.now()
		} else {
			b.ColdRefs--
			o.ColdSince = time.Time{}
		}
		r, err := v.trim(tx, &b)
		if err != nil {
			return err
		}
		rm = append(rm, r...)
		return tx.PutObject(o)
	})
	if err != nil {
		return Object{}, fmt.Errorf("%s %s: %w", op, id, err)
	}
	v.remove(ctx, rm)
	o, err = v.Get(ctx, tenant, id)
	if err == nil {
		v.changed(ctx, tenant, o)
	}
	return o, err
}

// copyTier copies b's content from one tier to the other through a
// verified read, commits it under the content name and verifies the new
// copy. A source that fails verification is marked corrupt.
func (v *Vault) copyTier(ctx context.Context, t *tenant, b *Blob, toCold bool, what string) (*Placement, error) {
	src, srcBE, dstBE := b.Hot, v.hot, v.cold
	if !toCold {
		src, srcBE, dstBE = b.Cold, v.cold, v.hot
	}
	if !src.good() {
		return nil, fmt.Errorf("%s: no intact copy to copy from: %w", what, ErrInvalidData)
	}
	r, err := v.openPlacement(ctx, srcBE, t, src, purposeContent, b.Digest, b.Digest, b.Size, what)
	if err != nil {
		if errors.Is(err, ErrInvalidData) {
			v.markCopyCorrupt(ctx, t, b.Digest, src.Name, src.Offset, !toCold)
		}
		return nil, err
	}
	defer r.Close()
	f, err := dstBE.Create(ctx)
	if err != nil {
		return nil, err
	}
	d, n, format, err := v.writeSealed(f, t, purposeContent, b.Digest, r)
	if err != nil {
		_ = f.Abort()
		if errors.Is(err, ErrInvalidData) {
			v.markCopyCorrupt(ctx, t, b.Digest, src.Name, src.Offset, !toCold)
		}
		return nil, err
	}
	if d != b.Digest || n != b.Size {
		_ = f.Abort()
		return nil, fmt.Errorf("%s: copy reads as other content: %w", what, ErrInvalidData)
	}
	name := t.contentName(b.Digest)
	if err := f.Commit(ctx, name); err != nil {
		return nil, err
	}
	v.stats.durableWrite(false)
	p := &Placement{Name: name, Length: sealedLen(format, n), Format: format, VerifiedAt: v.now()}
	if err := v.verifyPlacement(ctx, dstBE, t, p, purposeContent, b.Digest, b.Digest, b.Size, what, nil); err != nil {
		return nil, fmt.Errorf("read back: %w", err)
	}
	return p, nil
}
