package execute

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"

	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/providers"
)

// writeOut writes an object to the plan's destination, for a copy or a move: from its vault
// copy when it was preserved (read and verified), else fetched from the source against the
// planned version. RESTORE_QUEUED, with the path, is journaled before the write; the write
// never replaces an object already at the path unless that object holds the same content (a
// write redone after a crash, or an earlier export); and the written object is read back from
// the destination and its SHA-256 checked before RESTORED is journaled. It reports whether the
// object is written (the caller's state is then RESTORED).
func (r *runner) writeOut(ctx context.Context, o *svcv1.PlanObject, state svcv1.StepState, last Transition, src providers.Provider, ref string,
	step func(svcv1.StepState, string, string, func(*Transition)) bool, fail func(string, error), skip func(string, string)) bool {
	work := r.work
	name, mode := "copy", providers.WriteCopy
	if has(o, svcv1.PlanAction_PLAN_ACTION_MOVE) {
		name, mode = "move", providers.WriteMove
	}
	dest := r.plan.GetDestination()
	if dest == nil {
		fail(name, errors.New("the plan has no destination"))
		return false
	}
	preserved := has(o, svcv1.PlanAction_PLAN_ACTION_PRESERVE)
	if preserved && state == selected {
		fail(name, fmt.Errorf("refusing to %s %s without its committed vault copy", name, o.GetAssetId()))
		return false
	}
	path := DestinationPath(dest.GetPathTemplate(), o)
	if state == restoreQueued && last.Path != "" {
		path = last.Path
	}
	if state != restoreQueued {
		if ctx.Err() != nil {
			return false
		}
		if !step(restoreQueued, name, "ok", func(t *Transition) { t.Path = path }) {
			return false
		}
	}
	dst, dref, err := r.e.sources.Source(work, r.tenant, dest.GetDestinationId())
	if err != nil {
		fail(name, fmt.Errorf("open the destination: %w", err))
		return false
	}
	w, ok := providers.AsWriter(dst)
	if !ok {
		fail(name, fmt.Errorf("the destination cannot be written to: %w", providers.ErrUnsupported))
		return false
	}
	var out writeResult
	err = r.retry(work, r.e.limiter(providers.Name(enumName(dest.GetProvider()))), func() error {
		var body io.ReadCloser
		var want string
		size := int64(-1)
		if preserved {
			rc, v, err := r.e.vault.Read(work, r.tenant, o.GetAssetId())
			if err != nil {
				return err
			}
			body, want, size, out.vault = rc, v.SHA256, v.Size, v
		} else {
			limit := FetchLimit(o.GetExpectedSizeBytes())
			c, err := src.Fetch(work, providers.FetchRequest{SourceRef: ref, ObjectID: o.GetProviderObjectId(), ExpectedVersion: o.GetExpectedVersion(), MaxBytes: limit})
			if err != nil {
				return err
			}
			if c, err = bounded(c, limit); err != nil {
				return err
			}
			body, want, size = c.Body, o.GetExpectedSha256(), c.Object.SizeBytes
		}
		defer body.Close()
		out, err = writeVerified(work, dst, w, providers.WriteRequest{SourceRef: dref, Path: path, SizeBytes: size, SHA256: want, Mode: mode}, body, out.vault)
		return err
	})
	switch {
	case errors.Is(err, providers.ErrVersionMismatch):
		skip(name, "the object's version changed since the plan: "+err.Error())
		return false
	case errors.Is(err, providers.ErrNotFound):
		skip(name, "the object is no longer at the source")
		return false
	case errors.Is(err, providers.ErrAlreadyExists):
		skip(name, "another object is already at "+path+" at the destination; it was left as it is")
		return false
	case errors.Is(err, providers.ErrInvalidData) && !preserved:
		skip(name, "the content differs from the planned content; nothing was left at the destination: "+err.Error())
		return false
	case err != nil:
		fail(name, err)
		return false
	}
	if !step(restored, name, "ok", func(t *Transition) {
		t.ResultID, t.Bytes, t.Path, t.VaultID, t.VaultSHA256 = out.obj.ID, out.size, path, out.vault.ID, out.vault.SHA256
		t.Rendered = out.rendered
	}) {
		return false
	}
	r.bytes.Add(out.size)
	return true
}

// writeResult is a verified write to a destination.
type writeResult struct {
	obj      providers.Object // as the destination reports it
	size     int64
	vault    VaultRef // the vault copy it was written from, if any
	rendered string   // what the destination changed, when it keeps a form of its own
}

// writeVerified writes body with w and reads the written object back from dst, checking that
// it holds exactly the bytes written (and req.SHA256, when set). When an object is already at
// the path, it is accepted only if it holds the same content; otherwise the error wraps
// providers.ErrAlreadyExists and nothing is changed.
func writeVerified(ctx context.Context, dst providers.Provider, w providers.Writer, req providers.WriteRequest, body io.Reader, v VaultRef) (writeResult, error) {
	h := sha256.New()
	cr := &countingReader{r: io.TeeReader(body, h)}
	obj, err := w.Write(ctx, req, cr)
	if errors.Is(err, providers.ErrAlreadyExists) {
		// Hash the rest, then compare with what is there.
		if _, cerr := io.Copy(io.Discard, cr); cerr != nil {
			return writeResult{}, cerr
		}
		sum := hex.EncodeToString(h.Sum(nil))
		there, n, rerr := readBack(ctx, dst, req.SourceRef, req.Path)
		if rerr != nil || there != sum || (req.SHA256 != "" && sum != req.SHA256) {
			return writeResult{}, err // someone else's object: leave it
		}
		return writeResult{obj: providers.Object{ID: req.Path, SizeBytes: n}, size: n, vault: v}, nil
	}
	if err != nil {
		return writeResult{}, err
	}
	sum := hex.EncodeToString(h.Sum(nil))
	if req.SHA256 != "" && sum != req.SHA256 {
		return writeResult{}, fmt.Errorf("wrote sha256 %s, want %s: %w", sum, req.SHA256, providers.ErrInvalidData)
	}
	id := cmp.Or(obj.ID, req.Path)
	there, n, err := readBack(ctx, dst, req.SourceRef, id)
	if err != nil {
		return writeResult{}, fmt.Errorf("read back %s from the destination: %w", id, err)
	}
	if there != sum || n != cr.n {
		// A destination that keeps its own form of the content (providers.MetaRendered) is
		// taken at its word only when the vault holds the exact bytes: the asset stays whole.
		if r := obj.Metadata[providers.MetaRendered]; r != "" && v.ID != "" {
			obj.ID = id
			return writeResult{obj: obj, size: cr.n, vault: v, rendered: r}, nil
		}
		return writeResult{}, fmt.Errorf("the destination holds sha256 %s (%d bytes) at %s, written %s (%d bytes): %w", there, n, id, sum, cr.n, providers.ErrInvalidData)
	}
	obj.ID = id
	return writeResult{obj: obj, size: n, vault: v}, nil
}

// readBack fetches an object and returns its SHA-256 and size.
func readBack(ctx context.Context, p providers.Provider, ref, id string) (string, int64, error) {
	c, err := p.Fetch(ctx, providers.FetchRequest{SourceRef: ref, ObjectID: id})
	if err != nil {
		return "", 0, err
	}
	defer c.Body.Close()
	h := sha256.New()
	n, err := io.Copy(h, c.Body)
	if err != nil {
		return "", 0, err
	}
	return hex.EncodeToString(h.Sum(nil)), n, nil
}

type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}
