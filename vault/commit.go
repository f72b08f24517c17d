package vault

import (
	"context"
	"errors"
	"fmt"
	"time"

	"svc.dev/svc/vault/backend"
)

// removal is a file to remove once the transaction that stopped using it
// has committed. A crash before the removal leaves an orphan, which
// Collect removes; never the reverse (a record pointing at nothing).
type removal struct {
	be   backend.Backend
	name string
}

func (v *Vault) remove(ctx context.Context, rm []removal) {
	for _, r := range rm {
		_ = r.be.Remove(ctx, r.name) // an orphan on failure: Collect retries
	}
}

// release stops using a copy: a standalone file is removed, a pack loses a
// live placement (and is removed at zero).
func (v *Vault) release(tx MetaTx, p *Placement, be backend.Backend) ([]removal, error) {
	if p == nil {
		return nil, nil
	}
	if !p.Pack {
		return []removal{{be, p.Name}}, nil
	}
	pk, err := tx.Pack(p.Name)
	if errors.Is(err, ErrNotFound) {
		if v.isAppending(p.Name) {
			return nil, nil
		}
		return []removal{{be, p.Name}}, nil
	}
	if err != nil {
		return nil, err
	}
	if pk.Live--; pk.Live > 0 || v.isAppending(pk.Name) {
		return nil, tx.PutPack(pk) // an open pack goes when it is closed
	}
	if err := tx.DeletePack(pk.Name); err != nil {
		return nil, err
	}
	return []removal{{be, pk.Name}}, nil
}

// trim drops the copies nobody needs after a change of b's counts, and the
// blob itself at zero references; it stores (or deletes) b. A copy is only
// dropped while the other one is intact, so the last good copy stays as
// the source of a repair.
func (v *Vault) trim(tx MetaTx, b *Blob) ([]removal, error) {
	var rm []removal
	add := func(p *Placement, be backend.Backend) error {
		r, err := v.release(tx, p, be)
		rm = append(rm, r...)
		return err
	}
	if b.Refs <= 0 {
		for _, c := range []struct {
			p  *Placement
			be backend.Backend
		}{{b.Hot, v.hot}, {b.Cold, v.cold}, {b.Text, v.hot}} {
			if err := add(c.p, c.be); err != nil {
				return nil, err
			}
		}
		return rm, tx.DeleteBlob(b.Digest)
	}
	if b.Refs == b.ColdRefs && b.Hot != nil && b.Cold.good() {
		if err := add(b.Hot, v.hot); err != nil {
			return nil, err
		}
		b.Hot = nil
	}
	if b.ColdRefs == 0 && b.Cold != nil && b.Hot.good() {
		if err := add(b.Cold, v.cold); err != nil {
			return nil, err
		}
		b.Cold = nil
	}
	return rm, tx.PutBlob(*b)
}

// commitInput is content that was written and verified (or found stored
// and verified), to be committed as object draft.ID.
type commitInput struct {
	draft  Object
	digest Digest
	size   int64
	hot    *Placement // a fresh verified hot copy, or nil to use the blob's
	text   *Placement // a fresh verified text copy, or nil
	tdig   Digest
	tsize  int64
	tself  bool  // the content is its own text
	trange Range // the text is this range of the content
}

type commitResult struct {
	obj           Object
	rm            []removal
	usedHot       bool // in.hot was installed
	usedText      bool
	alreadyStored bool // the object was committed before with this content
}

// startUpload moves a new or unfinished object to uploading.
func startUpload(o *Object) error {
	if o.State == "" || o.State == StateUploading {
		o.State = StateUploading
		return nil
	}
	return transition(o, StateUploading)
}

// mergeDraft takes the request's metadata into an existing record.
func mergeDraft(o *Object, d Object) {
	keep := func(dst *string, src string) {
		if src != "" {
			*dst = src
		}
	}
	keep(&o.AssetID, d.AssetID)
	keep(&o.Name, d.Name)
	keep(&o.SourceID, d.SourceID)
	keep(&o.MIMEType, d.MIMEType)
	keep(&o.Kind, d.Kind)
	keep(&o.ManifestID, d.ManifestID)
	if d.Provider != 0 {
		o.Provider = d.Provider
	}
}

// commit is the one transaction that makes an object committed: the state
// machine from wherever the record is through verifying to committed, the
// blob's copies and counts, in one atomic step.
func (v *Vault) commit(tx MetaTx, in *commitInput, now time.Time) (commitResult, error) {
	var res commitResult
	o, err := tx.Object(in.draft.ID)
	switch {
	case errors.Is(err, ErrNotFound):
		o = in.draft
		o.State = StateUploading
	case err != nil:
		return res, err
	default:
		switch o.State {
		case StateCommitted, StateCold:
			if o.SHA256 == in.digest {
				res.obj, res.alreadyStored = o, true
				return res, nil
			}
			return res, fmt.Errorf("vault object %s holds other content (sha256 %s): %w", o.ID, o.SHA256, ErrInvalidState)
		}
		if o.Held && o.SHA256 != in.digest {
			return res, fmt.Errorf("vault object %s was committed with sha256 %s, not %s: %w", o.ID, o.SHA256, in.digest, ErrInvalidState)
		}
		mergeDraft(&o, in.draft)
		if o.State == StateCorrupt {
			if err := startUpload(&o); err != nil {
				return res, err
			}
		}
	}
	if o.State == StateUploading {
		if err := transition(&o, StateVerifying); err != nil {
			return res, err
		}
	}
	if o.State != StateVerifying {
		return res, &TransitionError{ID: o.ID, From: o.State, To: StateCommitted}
	}
	b, err := tx.Blob(in.digest)
	if errors.Is(err, ErrNotFound) {
		b = Blob{Digest: in.digest, Size: in.size, Name: o.Name, MIMEType: o.MIMEType, Kind: o.Kind, CreatedAt: now}
	} else if err != nil {
		return res, err
	}
	// A fresh copy replaces the blob's unless an earlier object of the same
	// group installed it already.
	if in.hot != nil && !(b.Hot.good() && b.Hot.same(in.hot)) {
		if b.Hot != nil && !b.Hot.same(in.hot) {
			r, err := v.release(tx, b.Hot, v.hot)
			if err != nil {
				return res, err
			}
			res.rm = append(res.rm, r...)
		}
		hp := *in.hot
		b.Hot = &hp
		res.usedHot = true
	}
	if !b.Hot.good() {
		return res, fmt.Errorf("vault object %s: no intact hot copy to commit: %w", o.ID, ErrInvalidData)
	}
	switch {
	case in.tself:
		b.TextIsContent = true
	case in.trange.Length > 0 && !b.TextIsContent && b.TextRange.Length == 0 && !b.Text.good():
		if b.Text != nil { // a corrupt copy of the text: the range replaces it
			r, err := v.release(tx, b.Text, v.hot)
			if err != nil {
				return res, err
			}
			res.rm = append(res.rm, r...)
			b.Text, b.TextDigest, b.TextSize = nil, Digest{}, 0
		}
		b.TextRange = in.trange
	case in.text != nil && (b.Text == nil || b.Text.Corrupt) && !b.TextIsContent:
		if b.Text != nil && !b.Text.same(in.text) {
			r, err := v.release(tx, b.Text, v.hot)
			if err != nil {
				return res, err
			}
			res.rm = append(res.rm, r...)
		}
		tp := *in.text
		b.Text, b.TextDigest, b.TextSize = &tp, in.tdig, in.tsize
		res.usedText = true
	}
	if o.Held && o.cold() {
		b.ColdRefs-- // it was cold, and is committed to the hot tier now
	}
	if !o.Held {
		b.Refs++
		o.Held = true
	}
	o.ColdSince = time.Time{}
	if err := transition(&o, StateCommitted); err != nil {
		return res, err
	}
	o.SHA256, o.SizeBytes = in.digest, in.size
	o.CommittedAt, o.VerifiedAt = now, now
	if v.fromMedium(v.hot) { // the read-back (or the reused copy's check) read the device
		o.MediumVerifiedAt = now
	}
	o.HasText = b.hasText()
	o.Reason = ""
	rm, err := v.trim(tx, &b)
	if err != nil {
		return res, err
	}
	res.rm = append(res.rm, rm...)
	if err := tx.PutObject(o); err != nil {
		return res, err
	}
	res.obj = o
	return res, nil
}
