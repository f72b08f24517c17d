package vault

import (
	"context"
	"errors"
	"fmt"
	"time"

	"svc.dev/svc/vault/backend"
)

// probe is the outcome of re-reading the copy an object reads from.
type probe struct {
	digest Digest
	cold   bool   // the copy is on the cold tier
	name   string // the copy checked ("" when the content has no copy)
	offset int64
	bytes  int64 // bytes re-hashed (0 when the result came from the memo)
	err    error // nil, or wrapping ErrInvalidData: the copy is bad or lost
	medium bool  // the copy was read from the medium (not a cache)
}

type copyKey struct {
	cold   bool
	name   string
	offset int64
}

// probeObject re-reads and re-hashes the copy o reads from. Results are
// shared through memo, so content that many objects use is read once per
// scrub. Errors other than a mismatch (I/O, cancellation) are returned.
func (v *Vault) probeObject(ctx context.Context, t *tenant, o Object, memo map[copyKey]error) (probe, error) {
	defer v.locks.lock(lockKey(t, o.SHA256))()
	pr := probe{digest: o.SHA256, cold: o.cold()}
	var b Blob
	err := v.meta.View(ctx, t.name, func(tx MetaTx) error {
		var err error
		b, err = tx.Blob(o.SHA256)
		return err
	})
	if errors.Is(err, ErrNotFound) {
		pr.err = fmt.Errorf("vault object %s: no stored content: %w", o.ID, ErrInvalidData)
		return pr, nil
	}
	if err != nil {
		return pr, err
	}
	p, be := b.Hot, v.hot
	if pr.cold {
		p, be = b.Cold, v.cold
	}
	if p == nil {
		pr.err = fmt.Errorf("vault object %s: no copy on its tier: %w", o.ID, ErrInvalidData)
		return pr, nil
	}
	pr.name, pr.offset = p.Name, p.Offset
	pr.medium = v.fromMedium(be)
	k := copyKey{pr.cold, p.Name, p.Offset}
	if err, ok := memo[k]; ok {
		pr.err = err
		return pr, nil
	}
	err = v.verifyPlacement(ctx, be, t, p, purposeContent, b.Digest, b.Digest, b.Size, "vault object "+o.ID, nil)
	if err != nil && !errors.Is(err, ErrInvalidData) {
		return pr, err
	}
	pr.err, pr.bytes = err, b.Size
	if memo != nil {
		if len(memo) > 100_000 {
			clear(memo)
		}
		memo[k] = err
	}
	return pr, nil
}

// applyProbe records a probe: verified_at, or corrupt, or back from
// corrupt. A probe of a copy the blob no longer uses (replaced meanwhile)
// changes nothing. It returns the object as stored.
func (v *Vault) applyProbe(tx MetaTx, id string, pr probe, now time.Time) (Object, error) {
	o, err := tx.Object(id)
	if err != nil {
		return Object{}, err
	}
	if o.State != StateCommitted && o.State != StateCold && o.State != StateCorrupt || o.SHA256 != pr.digest || o.cold() != pr.cold {
		return o, nil
	}
	b, err := tx.Blob(o.SHA256)
	var p *Placement
	if err == nil {
		p = b.Hot
		if pr.cold {
			p = b.Cold
		}
		if p != nil && (p.Name != pr.name || p.Offset != pr.offset) {
			return o, nil // replaced meanwhile: this probe says nothing of it
		}
	} else if !errors.Is(err, ErrNotFound) {
		return Object{}, err
	}
	if (p == nil) != (pr.name == "") {
		return o, nil
	}
	if pr.err == nil {
		p.Corrupt, p.VerifiedAt = false, now
		if err := tx.PutBlob(b); err != nil {
			return Object{}, err
		}
		if o.State == StateCorrupt {
			to := StateCommitted
			if o.cold() {
				to = StateCold
			}
			if err := transition(&o, to); err != nil {
				return Object{}, err
			}
		}
		o.VerifiedAt, o.Reason = now, ""
		if pr.medium {
			o.MediumVerifiedAt = now
		}
	} else {
		if p != nil && !p.Corrupt {
			p.Corrupt = true
			if err := tx.PutBlob(b); err != nil {
				return Object{}, err
			}
		}
		if o.State != StateCorrupt {
			if err := transition(&o, StateCorrupt); err != nil {
				return Object{}, err
			}
		}
		o.Reason = pr.err.Error()
	}
	return o, tx.PutObject(o)
}

// Verify re-reads a committed, cold or corrupt object's stored content and
// checks its SHA-256 now. Content that verifies gives the object a new
// verified_at (and takes a corrupt object back to committed or cold);
// content that does not, or is lost, makes the object corrupt with the
// reason. Other failures (I/O, cancellation) are returned and change
// nothing.
func (v *Vault) Verify(ctx context.Context, tenant, id string) (Object, error) {
	t, err := v.tenant(ctx, tenant)
	if err != nil {
		return Object{}, err
	}
	o, err := v.Get(ctx, tenant, id)
	if err != nil {
		return Object{}, fmt.Errorf("verify: %w", err)
	}
	if o.State != StateCommitted && o.State != StateCold && o.State != StateCorrupt {
		return Object{}, fmt.Errorf("verify vault object %s: %w: the object is %s", id, ErrInvalidState, o.State)
	}
	pr, err := v.probeObject(ctx, t, o, nil)
	if err != nil {
		return Object{}, fmt.Errorf("verify vault object %s: %w", id, err)
	}
	err = v.meta.Update(ctx, tenant, func(tx MetaTx) error {
		var err error
		o, err = v.applyProbe(tx, id, pr, v.now())
		return err
	})
	if err != nil {
		return Object{}, fmt.Errorf("verify vault object %s: %w", id, err)
	}
	return o, nil
}

// ScrubOptions tunes Scrub; nil means defaults.
type ScrubOptions struct {
	// Repair rewrites a bad copy from the content's intact copy on the
	// other tier, when there is one. Default true (set NoRepair).
	NoRepair bool
	// OrphanGrace: stored files that no record uses and that are older
	// than this are removed (see Collect). 0 means 24 hours; negative
	// turns the collection off.
	OrphanGrace time.Duration
	// Progress, if set, is called after every page of objects.
	Progress func(ScrubReport)
}

// ScrubReport says what a scrub did.
type ScrubReport struct {
	Objects  int   // records examined
	Verified int   // objects whose content verified
	Bytes    int64 // bytes re-read and re-hashed (each stored copy once)
	// Corrupt lists the objects left corrupt; Repaired those that verify
	// again (a copy rewritten from the other tier, or content that
	// verifies again).
	Corrupt  []string
	Repaired []string
	// TextCorrupt counts extracted texts that failed verification.
	TextCorrupt int
	// Deleted counts interrupted deletions finished; InFlight the objects
	// left alone because a Put is writing them (uploading, verifying).
	Deleted, InFlight int
	// OrphanFiles and OrphanBytes: files no record used, removed.
	OrphanFiles int
	OrphanBytes int64
}

// Scrub re-reads and re-hashes every stored copy a tenant's objects read
// from, marking mismatches (and lost content) corrupt and repairing what it
// can from the other tier; it verifies extracted texts, finishes
// interrupted deletions and removes orphaned files. The server runs it as
// a job per tenant, and the binary as a command. It walks the tenant page
// by page: memory does not grow with the number of objects beyond a memo
// of copies already checked.
func (v *Vault) Scrub(ctx context.Context, tenant string, opts *ScrubOptions) (ScrubReport, error) {
	var o ScrubOptions
	if opts != nil {
		o = *opts
	}
	if o.OrphanGrace == 0 {
		o.OrphanGrace = 24 * time.Hour
	}
	var rep ScrubReport
	t, err := v.tenant(ctx, tenant)
	if err != nil {
		return rep, err
	}
	memo := map[copyKey]error{}
	after := ""
	for {
		page, more, err := v.List(ctx, tenant, after, 256, nil)
		if err != nil {
			return rep, fmt.Errorf("scrub: %w", err)
		}
		if err := v.scrubPage(ctx, t, page, memo, &o, &rep); err != nil {
			return rep, fmt.Errorf("scrub: %w", err)
		}
		if o.Progress != nil {
			o.Progress(rep)
		}
		if !more || len(page) == 0 {
			break
		}
		after = page[len(page)-1].ID
	}
	if err := v.scrubTexts(ctx, t, &rep); err != nil {
		return rep, fmt.Errorf("scrub: %w", err)
	}
	if o.OrphanGrace > 0 {
		n, size, err := v.Collect(ctx, tenant, o.OrphanGrace)
		if err != nil {
			return rep, fmt.Errorf("scrub: %w", err)
		}
		rep.OrphanFiles, rep.OrphanBytes = n, size
	}
	return rep, nil
}

func (v *Vault) scrubPage(ctx context.Context, t *tenant, page []Object, memo map[copyKey]error, opts *ScrubOptions, rep *ScrubReport) error {
	type checked struct {
		id     string
		before State
		pr     probe
	}
	var probes []checked
	for _, o := range page {
		rep.Objects++
		switch o.State {
		case StateDeleting:
			if _, err := v.finishDelete(ctx, t, o); err != nil {
				return err
			}
			rep.Deleted++
		case StateUploading, StateVerifying:
			rep.InFlight++
		case StateCommitted, StateCold, StateCorrupt:
			pr, err := v.probeObject(ctx, t, o, memo)
			if err != nil {
				return err
			}
			rep.Bytes += pr.bytes
			probes = append(probes, checked{o.ID, o.State, pr})
		}
	}
	if len(probes) == 0 {
		return nil
	}
	// One transaction records the page.
	after := make([]Object, len(probes))
	err := v.meta.Update(ctx, t.name, func(tx MetaTx) error {
		now := v.now()
		for i, c := range probes {
			o, err := v.applyProbe(tx, c.id, c.pr, now)
			if err != nil {
				return err
			}
			after[i] = o
		}
		return nil
	})
	if err != nil {
		return err
	}
	for i, c := range probes {
		o := after[i]
		found := o.State == StateCorrupt
		if found && !opts.NoRepair {
			if r, err := v.repair(ctx, t, o); err == nil {
				o = r
			}
		}
		switch {
		case o.State == StateCorrupt:
			rep.Corrupt = append(rep.Corrupt, o.ID)
		case found || c.before == StateCorrupt:
			rep.Repaired = append(rep.Repaired, o.ID)
			rep.Verified++
		default:
			rep.Verified++
		}
	}
	return nil
}

// repair rewrites a corrupt object's bad copy from the content's intact
// copy on the other tier, then verifies the object again.
func (v *Vault) repair(ctx context.Context, t *tenant, o Object) (Object, error) {
	unlock := v.locks.lock(lockKey(t, o.SHA256))
	var b Blob
	err := v.meta.View(ctx, t.name, func(tx MetaTx) error {
		var err error
		b, err = tx.Blob(o.SHA256)
		return err
	})
	if err != nil {
		unlock()
		return o, err
	}
	other := b.Cold
	if o.cold() {
		other = b.Hot
	}
	if !other.good() {
		unlock()
		return o, fmt.Errorf("vault object %s: no intact copy to repair from: %w", o.ID, ErrInvalidData)
	}
	fresh, err := v.copyTier(ctx, t, &b, o.cold(), "vault object "+o.ID)
	if err != nil {
		unlock()
		return o, err
	}
	var rm []removal
	err = v.meta.Update(ctx, t.name, func(tx MetaTx) error {
		rm = nil
		b, err := tx.Blob(o.SHA256)
		if err != nil {
			return err
		}
		slot, be := &b.Hot, v.hot
		if o.cold() {
			slot, be = &b.Cold, v.cold
		}
		if *slot != nil && !(*slot).same(fresh) {
			if rm, err = v.release(tx, *slot, be); err != nil {
				return err
			}
		}
		p := *fresh
		*slot = &p
		return tx.PutBlob(b)
	})
	unlock()
	if err != nil {
		return o, err
	}
	v.remove(ctx, rm)
	return v.Verify(ctx, t.name, o.ID)
}

// scrubTexts verifies every extracted text of the tenant.
func (v *Vault) scrubTexts(ctx context.Context, t *tenant, rep *ScrubReport) error {
	var after Digest
	for {
		var page []Blob
		err := v.meta.View(ctx, t.name, func(tx MetaTx) error {
			page = page[:0]
			return tx.Blobs(after, func(b Blob) bool {
				page = append(page, b)
				return len(page) < 256
			})
		})
		if err != nil {
			return err
		}
		for _, b := range page {
			if b.Text == nil {
				continue
			}
			err := v.verifyPlacement(ctx, v.hot, t, b.Text, purposeText, b.Digest, b.TextDigest, b.TextSize, "extracted text", nil)
			if err != nil && !errors.Is(err, ErrInvalidData) {
				return err
			}
			rep.Bytes += b.TextSize
			if err == nil {
				continue
			}
			rep.TextCorrupt++
			name := b.Text.Name
			if err := v.meta.Update(ctx, t.name, func(tx MetaTx) error {
				b, err := tx.Blob(b.Digest)
				if err != nil || b.Text == nil || b.Text.Name != name {
					return err
				}
				b.Text.Corrupt = true
				return tx.PutBlob(b)
			}); err != nil {
				return err
			}
		}
		if len(page) < 256 {
			return nil
		}
		after = page[len(page)-1].Digest
	}
}

// Collect removes a tenant's stored files that no record uses and that
// are older than grace: left by a crash between writing a file and
// committing its record, or between a commit and a removal. grace keeps
// files of writes in flight; it should exceed the longest write. It
// returns the number of files and bytes removed.
func (v *Vault) Collect(ctx context.Context, tenant string, grace time.Duration) (int, int64, error) {
	t, err := v.tenant(ctx, tenant)
	if err != nil {
		return 0, 0, err
	}
	cutoff := v.now().Add(-grace)
	type orphan struct {
		be   backend.Backend
		name string
		size int64
	}
	// List first, then read the records: a file committed after the
	// listing is not a candidate, and one committed before it is in the
	// records read after.
	var candidates []orphan
	for _, be := range []backend.Backend{v.hot, v.cold} {
		if err := be.List(ctx, t.prefix, func(fi backend.Info) error {
			if fi.ModTime.Before(cutoff) {
				candidates = append(candidates, orphan{be, fi.Name, fi.Size})
			}
			return nil
		}); err != nil {
			return 0, 0, fmt.Errorf("collect: %w", err)
		}
	}
	if len(candidates) == 0 {
		return 0, 0, nil
	}
	used := map[string]bool{} // "h:"/"c:" + name
	var after Digest
	for {
		n := 0
		err := v.meta.View(ctx, tenant, func(tx MetaTx) error {
			n = 0
			return tx.Blobs(after, func(b Blob) bool {
				n++
				after = b.Digest
				for _, p := range []*Placement{b.Hot, b.Text} {
					if p != nil {
						used["h:"+p.Name] = true
					}
				}
				if b.Cold != nil {
					used["c:"+b.Cold.Name] = true
				}
				return n < 1024
			})
		})
		if err != nil {
			return 0, 0, fmt.Errorf("collect: %w", err)
		}
		if n < 1024 {
			break
		}
	}
	files, bytes := 0, int64(0)
	for _, c := range candidates {
		tier := "h:"
		if c.be == v.cold {
			tier = "c:"
		}
		if used[tier+c.name] || tier == "h:" && v.isAppending(c.name) {
			continue
		}
		if tier == "h:" {
			// A pack with live entries is in use; a recorded pack without
			// any (left by a failed close) goes with its record.
			inUse := false
			err := v.meta.Update(ctx, tenant, func(tx MetaTx) error {
				pk, err := tx.Pack(c.name)
				if errors.Is(err, ErrNotFound) {
					inUse = false
					return nil
				}
				if err != nil {
					return err
				}
				if inUse = pk.Live > 0 || v.isAppending(c.name); inUse {
					return nil
				}
				return tx.DeletePack(c.name)
			})
			if err != nil {
				return files, bytes, fmt.Errorf("collect: %w", err)
			}
			if inUse {
				continue
			}
		}
		if err := c.be.Remove(ctx, c.name); err != nil {
			return files, bytes, fmt.Errorf("collect: %w", err)
		}
		files++
		bytes += c.size
	}
	return files, bytes, nil
}
