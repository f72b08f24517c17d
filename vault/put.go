package vault

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"

	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/id"
	"svc.dev/svc/vault/backend"
	"svc.dev/svc/vault/internal/extract"
	"svc.dev/svc/vault/internal/seal"
)

// PutRequest describes content to preserve.
type PutRequest struct {
	// ID is the vault object's id (vlt_). The execution engine chooses it
	// and journals it before the write, so that a write interrupted by a
	// crash is redone into the same object; empty means a new id.
	ID         string
	AssetID    string
	Name       string
	Provider   svcv1.Provider
	SourceID   string
	MIMEType   string
	Kind       string // the provider's content kind ("message", "file", ...)
	ManifestID string
	// SizeBytes is the expected size, or -1 when unknown. (0 expects empty
	// content.)
	SizeBytes int64
	// SizeHint is the size the caller expects (a provider's reported size) when it does not
	// require it (SizeBytes -1): it only sizes the buffer small content is read into, and
	// content of another size is stored all the same. 0 or less: no hint.
	SizeHint int64
	// SHA256 is the expected digest, or zero when unknown.
	SHA256 Digest
}

func (r *PutRequest) check(d Digest, n int64) error {
	if r.SizeBytes >= 0 && n != r.SizeBytes {
		return fmt.Errorf("content is %d bytes, expected %d: %w", n, r.SizeBytes, ErrInvalidData)
	}
	if !r.SHA256.IsZero() && d != r.SHA256 {
		return fmt.Errorf("content has sha256 %s, expected %s: %w", d, r.SHA256, ErrInvalidData)
	}
	return nil
}

// draft is base with the request's metadata.
func (r *PutRequest) draft(base Object) Object {
	o := base
	o.AssetID, o.Name, o.Provider, o.SourceID = r.AssetID, r.Name, r.Provider, r.SourceID
	o.MIMEType, o.Kind, o.ManifestID = r.MIMEType, r.Kind, r.ManifestID
	return o
}

// Put preserves body as a vault object and returns it committed: the
// content was stored durably, read back, decrypted and its SHA-256
// compared. Content already stored in the tenant is not stored again (its
// stored copy is verified instead). Small content is committed in groups
// with concurrent Puts (one pack file, one fsync); larger content streams
// through a temporary file in constant memory.
//
// A Put that fails leaves the object, if it was recorded, in uploading,
// verifying or corrupt, and a Put with the same ID redoes it. A Put into
// an id already committed with the same content returns it unchanged; with
// other content it is ErrInvalidState. A mismatch with the request's
// SizeBytes or SHA256 is ErrInvalidData and commits nothing.
func (v *Vault) Put(ctx context.Context, tenant string, req PutRequest, body io.Reader) (Object, error) {
	o, err := v.put(ctx, tenant, req, body)
	if err == nil {
		v.changed(ctx, tenant, o)
	}
	return o, err
}

func (v *Vault) put(ctx context.Context, tenant string, req PutRequest, body io.Reader) (Object, error) {
	t, err := v.tenant(ctx, tenant)
	if err != nil {
		return Object{}, err
	}
	if req.ID == "" {
		req.ID = id.New("vlt")
	} else if !id.Valid("vlt", req.ID) {
		return Object{}, fmt.Errorf("put: id %q is not a vault object id: %w", req.ID, ErrInvalidArgument)
	}
	mode := extract.ModeOf(req.MIMEType, req.Kind, req.Name)
	if limit := v.opts.PackThreshold; limit > 0 && req.SizeBytes <= limit {
		hint := req.SizeBytes
		if hint < 0 && req.SizeHint > 0 {
			hint = min(req.SizeHint, limit)
		}
		if hint < 0 {
			hint = min(sizeOf(body), limit)
		}
		data, err := readAllSized(io.LimitReader(body, limit+1), hint)
		if err != nil {
			putContent(data)
			return Object{}, fmt.Errorf("put %s: read content: %w", req.ID, err)
		}
		if int64(len(data)) <= limit {
			// The group commit looks the object up (a redo) with the group's other
			// records, in one read. Once it has answered, nothing holds the content.
			defer putContent(data)
			draft := req.draft(Object{ID: req.ID, CreatedAt: v.now()})
			return v.putSmall(ctx, t, draft, &req, data, mode)
		}
		body = io.MultiReader(bytes.NewReader(data), body)
	}
	var existing Object
	found := false
	err = v.meta.View(ctx, tenant, func(tx MetaTx) error {
		var err error
		existing, err = tx.Object(req.ID)
		found = err == nil
		if errors.Is(err, ErrNotFound) {
			err = nil
		}
		return err
	})
	if err != nil {
		return Object{}, fmt.Errorf("put %s: %w", req.ID, err)
	}
	// Until the content is known, the record shows what is expected.
	draft := req.draft(Object{ID: req.ID, CreatedAt: v.now(), SHA256: req.SHA256, SizeBytes: max(req.SizeBytes, 0)})
	if found {
		switch existing.State {
		case StateCommitted, StateCold:
			return v.confirm(existing, &req, body)
		case StateDeleting, StateDeleted:
			return Object{}, fmt.Errorf("put: %w", &TransitionError{ID: req.ID, From: existing.State, To: StateUploading})
		}
		draft.CreatedAt = existing.CreatedAt
	}
	return v.putLarge(ctx, t, draft, &req, body, mode)
}

// sizeOf returns what an in-memory reader (bytes.Reader, strings.Reader, ...) says is
// left to read, or -1: a hint only.
func sizeOf(r io.Reader) int64 {
	if l, ok := r.(interface{ Len() int }); ok {
		return int64(l.Len())
	}
	return -1
}

// readAllSized reads r to EOF into a buffer sized for the expected size (when it is known,
// >= 0) and one byte more, so that content of the announced size is read without the
// buffer growing and copying (io.ReadAll starts at 512 bytes).
func readAllSized(r io.Reader, size int64) ([]byte, error) {
	if size < 0 {
		size = 511
	}
	data := getContent(int(size) + 1)
	for {
		if len(data) == cap(data) {
			data = append(data, 0)[:len(data)]
		}
		n, err := r.Read(data[len(data):cap(data)])
		data = data[:len(data)+n]
		if err == io.EOF {
			return data, nil
		}
		if err != nil {
			return data, err
		}
	}
}

// contentPools recycle the buffers small content is read into, by size class: class i
// holds buffers of at least 1<<i bytes, from 4 KiB to 512 KiB (small content is at most
// PackThreshold, 256 KiB by default). A buffer goes back once the Put that read into it
// has been answered: the group commit that sealed and verified it is done with it, and
// nothing returned to the caller points into it.
var contentPools [20]sync.Pool

const minContentClass = 12

func contentClass(n int) int {
	c := minContentClass
	for c < len(contentPools) && 1<<c < n {
		c++
	}
	return c
}

// getContent returns an empty buffer with room for n bytes.
func getContent(n int) []byte {
	c := contentClass(n)
	if c >= len(contentPools) {
		return make([]byte, 0, n)
	}
	if b, ok := contentPools[c].Get().(*[]byte); ok {
		return (*b)[:0]
	}
	return make([]byte, 0, 1<<c)
}

// putContent gives a buffer from getContent back (any buffer of a class's size will do).
func putContent(b []byte) {
	c := minContentClass
	if cap(b) < 1<<c {
		return
	}
	for c+1 < len(contentPools) && 1<<(c+1) <= cap(b) {
		c++
	}
	if 1<<c > cap(b) || c >= len(contentPools) {
		return
	}
	b = b[:0]
	contentPools[c].Put(&b)
}

// confirm answers a Put into an object that is already committed: the
// same content returns it, other content is refused.
func (v *Vault) confirm(o Object, req *PutRequest, body io.Reader) (Object, error) {
	h := sha256.New()
	n, err := io.Copy(h, body)
	if err != nil {
		return Object{}, fmt.Errorf("put %s: read content: %w", o.ID, err)
	}
	var d Digest
	h.Sum(d[:0])
	if err := req.check(d, n); err != nil {
		return Object{}, fmt.Errorf("put %s: %w", o.ID, err)
	}
	if d != o.SHA256 {
		return Object{}, fmt.Errorf("put %s: already committed with sha256 %s, not %s: %w", o.ID, o.SHA256, d, ErrInvalidState)
	}
	return o, nil
}

// extractText returns the text of small content for a mode: where it is a range of
// the content itself (a plain-text message's body), only that range, so that
// the text is neither copied, nor sealed, written, read back and hashed again.
func (v *Vault) extractText(mode extract.Mode, data []byte) ([]byte, Range) {
	if mode != extract.HTML && mode != extract.Message {
		return nil, Range{}
	}
	if mode == extract.Message {
		if from, ok := extract.Body(data, v.opts.MaxTextBytes); ok {
			return nil, Range{Offset: int64(from), Length: int64(len(data) - from)}
		}
	}
	text, ok, err := extract.Text(mode, bytes.NewReader(data), v.opts.MaxTextBytes)
	if err != nil || !ok || len(text) == 0 {
		return nil, Range{}
	}
	return text, Range{}
}

func (v *Vault) putSmall(ctx context.Context, t *tenant, draft Object, req *PutRequest, data []byte, mode extract.Mode) (Object, error) {
	t.group.prepare()
	d := Sum(data)
	if err := req.check(d, int64(len(data))); err != nil {
		t.group.unprepare()
		return Object{}, fmt.Errorf("put %s: %w", draft.ID, err)
	}
	p := &pending{
		draft:  draft,
		data:   data,
		digest: d,
		tself:  mode == extract.Self,
		done:   make(chan struct{}),
	}
	p.text, p.trange = v.extractText(mode, data)
	o, err := t.group.submit(p)
	if err != nil {
		return Object{}, fmt.Errorf("put %s: %w", draft.ID, err)
	}
	return o, nil
}

// putLarge streams content through a temporary file: sealed and hashed in
// one pass, committed under its content name, read back and verified
// (extracting text on the way), then the object is committed.
func (v *Vault) putLarge(ctx context.Context, t *tenant, draft Object, req *PutRequest, body io.Reader, mode extract.Mode) (Object, error) {
	// The uploading record comes first, so that an interrupted upload is
	// visible and redone into the same object. An object that was
	// committed before (now corrupt) keeps its state until the content is
	// known to be its own.
	var held Object
	if err := v.meta.Update(ctx, t.name, func(tx MetaTx) error {
		held = Object{}
		o, err := tx.Object(draft.ID)
		if errors.Is(err, ErrNotFound) {
			o = draft
		} else if err != nil {
			return err
		} else if o.Held {
			held = o
			return nil
		} else {
			mergeDraft(&o, draft)
		}
		if err := startUpload(&o); err != nil {
			return err
		}
		return tx.PutObject(o)
	}); err != nil {
		return Object{}, fmt.Errorf("put %s: %w", draft.ID, err)
	}
	f, err := v.hot.Create(ctx)
	if err != nil {
		return Object{}, fmt.Errorf("put %s: %w", draft.ID, err)
	}
	d, n, format, err := v.writeSealed(f, t, purposeContent, req.SHA256, body)
	if err == nil {
		err = req.check(d, n)
	}
	if err == nil && held.Held && held.SHA256 != d {
		err = fmt.Errorf("committed earlier with sha256 %s, not %s: %w", held.SHA256, d, ErrInvalidState)
	}
	if err != nil {
		_ = f.Abort()
		return Object{}, fmt.Errorf("put %s: %w", draft.ID, err)
	}

	unlock := v.locks.lock(lockKey(t, d))
	defer unlock()
	var b Blob
	found := false
	if err := v.meta.View(ctx, t.name, func(tx MetaTx) error {
		var err error
		b, err = tx.Blob(d)
		found = err == nil
		if errors.Is(err, ErrNotFound) {
			err = nil
		}
		return err
	}); err != nil {
		_ = f.Abort()
		return Object{}, fmt.Errorf("put %s: %w", draft.ID, err)
	}
	in := &commitInput{draft: draft, digest: d, size: n, tself: mode == extract.Self}
	what := "vault object " + draft.ID
	var text []byte
	reuse := false
	if found && b.Hot.good() {
		// The content is stored: verify that copy instead of storing
		// another one.
		err := v.verifyPlacement(ctx, v.hot, t, b.Hot, purposeContent, d, d, n, what, nil)
		switch {
		case err == nil:
			reuse = true
		case errors.Is(err, ErrInvalidData):
			v.markCopyCorrupt(ctx, t, d, b.Hot.Name, b.Hot.Offset, false)
		default:
			_ = f.Abort()
			return Object{}, fmt.Errorf("put %s: %w", draft.ID, err)
		}
	}
	if reuse {
		_ = f.Abort()
		if !b.hasText() && (mode == extract.HTML || mode == extract.Message) {
			text, _ = v.readBack(ctx, t, b.Hot, d, n, mode, what)
		}
	} else {
		name := t.contentName(d)
		if err := f.Commit(ctx, name); err != nil {
			return Object{}, fmt.Errorf("put %s: %w", draft.ID, err)
		}
		v.stats.durableWrite(false)
		in.hot = &Placement{Name: name, Length: sealedLen(format, n), Format: format, VerifiedAt: v.now()}
		if err := v.setState(ctx, t.name, draft.ID, func(o *Object) { o.SHA256, o.SizeBytes = d, n }, StateUploading, StateVerifying); err != nil {
			return Object{}, fmt.Errorf("put %s: %w", draft.ID, err)
		}
		text, err = v.readBack(ctx, t, in.hot, d, n, mode, what)
		if err != nil {
			if errors.Is(err, ErrInvalidData) {
				v.markObjectCorrupt(ctx, t.name, draft.ID, err)
			}
			return Object{}, fmt.Errorf("put %s: read back: %w", draft.ID, err)
		}
	}
	if len(text) > 0 && (!found || b.Text == nil || b.Text.Corrupt) {
		tp, tdig, err := v.writeText(ctx, t, d, text)
		if err == nil {
			in.text, in.tdig, in.tsize = tp, tdig, int64(len(text))
		} // without text the object is still committed, has_text false
	}
	var res commitResult
	err = v.meta.Update(ctx, t.name, func(tx MetaTx) error {
		var err error
		res, err = v.commit(tx, in, v.now())
		return err
	})
	if err != nil {
		return Object{}, fmt.Errorf("put %s: commit: %w", draft.ID, err)
	}
	v.remove(ctx, res.rm)
	if !res.alreadyStored {
		v.stats.committed(1, 0)
	}
	return res.obj, nil
}

// readBack verifies a copy and, for messages and HTML, extracts its text
// from the verified plaintext on the way.
func (v *Vault) readBack(ctx context.Context, t *tenant, p *Placement, d Digest, n int64, mode extract.Mode, what string) ([]byte, error) {
	if mode != extract.HTML && mode != extract.Message {
		return nil, v.verifyPlacement(ctx, v.hot, t, p, purposeContent, d, d, n, what, nil)
	}
	pr, pw := io.Pipe()
	type result struct {
		text []byte
		ok   bool
	}
	done := make(chan result, 1)
	go func() {
		text, ok, _ := extract.Text(mode, pr, v.opts.MaxTextBytes)
		_, _ = io.Copy(io.Discard, pr) // the extractor may stop early
		done <- result{text, ok}
	}()
	err := v.verifyPlacement(ctx, v.hot, t, p, purposeContent, d, d, n, what, pw)
	pw.CloseWithError(err)
	r := <-done
	if err != nil || !r.ok {
		return nil, err
	}
	return r.text, nil
}

// writeText stores extracted text as its own sealed file and verifies it.
func (v *Vault) writeText(ctx context.Context, t *tenant, d Digest, text []byte) (*Placement, Digest, error) {
	td := Sum(text)
	var sealed []byte
	var format uint8
	var err error
	if v.legacy {
		sealed, err = seal.Seal(nil, text, t.dataKey, purposeText)
	} else {
		// Bound to the content it was extracted from.
		sealed, err = seal.SealBound(nil, text, t.dataKey, purposeText, seal.Binding{Tenant: t.name, Digest: d})
		format = seal.VersionBound
	}
	if err != nil {
		return nil, Digest{}, err
	}
	name := t.textName(d)
	if err := backend.Save(ctx, v.hot, name, sealed); err != nil {
		return nil, Digest{}, err
	}
	v.stats.durableWrite(false)
	p := &Placement{Name: name, Length: int64(len(sealed)), Format: format, VerifiedAt: v.now()}
	if err := v.verifyPlacement(ctx, v.hot, t, p, purposeText, d, td, int64(len(text)), "extracted text", nil); err != nil {
		return nil, Digest{}, err
	}
	return p, td, nil
}

// setState moves a recorded object through states (skipping those it has
// reached) to the last one, applying change (if not nil) on the way.
func (v *Vault) setState(ctx context.Context, tenant, id string, change func(*Object), path ...State) error {
	return v.meta.Update(ctx, tenant, func(tx MetaTx) error {
		o, err := tx.Object(id)
		if err != nil {
			return err
		}
		for _, to := range path[slices.Index(path, o.State)+1:] {
			if err := transition(&o, to); err != nil {
				return err
			}
		}
		if change != nil {
			change(&o)
		}
		return tx.PutObject(o)
	})
}

// markObjectCorrupt records that an object's content failed verification.
func (v *Vault) markObjectCorrupt(ctx context.Context, tenant, id string, cause error) {
	_ = v.meta.Update(ctx, tenant, func(tx MetaTx) error {
		o, err := tx.Object(id)
		if err != nil {
			return err
		}
		if o.State != StateCorrupt {
			if err := transition(&o, StateCorrupt); err != nil {
				return err
			}
		}
		o.Reason = cause.Error()
		return tx.PutObject(o)
	})
}

// markCopyCorrupt flags a blob's copy (hot or cold) as corrupt, if the
// blob still has that copy.
func (v *Vault) markCopyCorrupt(ctx context.Context, t *tenant, d Digest, name string, offset int64, cold bool) {
	_ = v.meta.Update(ctx, t.name, func(tx MetaTx) error {
		b, err := tx.Blob(d)
		if err != nil {
			return err
		}
		p := b.Hot
		if cold {
			p = b.Cold
		}
		if p == nil || p.Name != name || p.Offset != offset || p.Corrupt {
			return nil
		}
		p.Corrupt = true
		return tx.PutBlob(b)
	})
}
