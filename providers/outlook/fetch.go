package outlook

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"unicode/utf8"

	"svc.dev/svc/providers"
)

// Fetch implements providers.Provider.
func (p *Provider) Fetch(ctx context.Context, req providers.FetchRequest) (*providers.Content, error) {
	m, err := p.get(ctx, req.ObjectID)
	if err != nil {
		return nil, p.err("fetch", req.ObjectID, err)
	}
	if req.ExpectedVersion != "" && m.ChangeKey != req.ExpectedVersion {
		return nil, &providers.VersionMismatchError{ObjectID: req.ObjectID, Expected: req.ExpectedVersion, Actual: m.ChangeKey}
	}
	folders, trash, err := p.loadFolders(ctx, false)
	if err != nil {
		return nil, p.err("fetch", req.ObjectID, err)
	}
	o := p.object(m, folders, trash)
	o.Message.Snippet = "" // a fetch reports the header block only (docs/providers.md)
	if req.MaxBytes > 0 && o.SizeBytes > req.MaxBytes {
		return nil, p.err("fetch", req.ObjectID, fmt.Errorf("%d bytes: %w", o.SizeBytes, providers.ErrTooLarge))
	}
	resp, err := p.c.Open(ctx, "/me/messages/"+url.PathEscape(req.ObjectID)+"/$value", false)
	if err != nil {
		return nil, p.err("fetch", req.ObjectID, err)
	}
	body := io.ReadCloser(resp.Body)
	if resp.ContentLength >= 0 {
		o.SizeBytes = resp.ContentLength
	} else {
		// No length announced: read it whole (a message is at most 150 MB
		// at Exchange), within what the caller accepts.
		limit := int64(150 << 20)
		if req.MaxBytes > 0 {
			limit = req.MaxBytes
		}
		b, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
		resp.Body.Close()
		if err != nil {
			return nil, p.err("fetch", req.ObjectID, fmt.Errorf("%v: %w", err, providers.ErrTransient))
		}
		if int64(len(b)) > limit {
			return nil, p.err("fetch", req.ObjectID, providers.ErrTooLarge)
		}
		o.SizeBytes, body = int64(len(b)), io.NopCloser(bytes.NewReader(b))
	}
	return &providers.Content{Object: o, Body: &exact{r: bufio.NewReader(body), c: body, left: o.SizeBytes, id: o.ID}}, nil
}

// exact fails a body that ends before, or runs past, its announced size.
type exact struct {
	r    io.Reader
	c    io.Closer
	left int64
	id   string
}

func (e *exact) Read(b []byte) (int, error) {
	n, err := e.r.Read(b)
	e.left -= int64(n)
	switch {
	case e.left < 0:
		return n, fmt.Errorf("outlook: %s: longer than announced: %w", e.id, providers.ErrInvalidData)
	case err == io.EOF && e.left > 0:
		return n, fmt.Errorf("outlook: %s: %d bytes short: %w", e.id, e.left, providers.ErrTransient)
	}
	return n, err
}

func (e *exact) Close() error { return e.c.Close() }

func (p *Provider) move(ctx context.Context, id, dest string) (*message, error) {
	var m message
	_, err := p.c.Do(ctx, http.MethodPost, "/me/messages/"+url.PathEscape(id)+"/move", nil, map[string]string{"destinationId": dest}, &m)
	return &m, err
}

// Trash implements providers.Trasher: a move to Deleted Items, after the
// changeKey check (Graph has no conditional move: a change in between the
// check and the move is not seen).
func (p *Provider) Trash(ctx context.Context, req providers.ActionRequest) (providers.ActionResult, error) {
	m, err := p.get(ctx, req.ObjectID)
	if err != nil {
		return providers.ActionResult{}, p.err("trash", req.ObjectID, err)
	}
	if req.ExpectedVersion != "" && m.ChangeKey != req.ExpectedVersion {
		return providers.ActionResult{}, &providers.VersionMismatchError{ObjectID: req.ObjectID, Expected: req.ExpectedVersion, Actual: m.ChangeKey}
	}
	_, trash, err := p.loadFolders(ctx, false)
	if err != nil {
		return providers.ActionResult{}, p.err("trash", req.ObjectID, err)
	}
	if m.ParentFolderID != trash {
		if _, err := p.move(ctx, req.ObjectID, "deleteditems"); err != nil {
			return providers.ActionResult{}, p.err("trash", req.ObjectID, err)
		}
	}
	return providers.ActionResult{ResultID: m.ParentFolderID, Restorable: true}, nil
}

// Untrash implements providers.Untrasher: a move back to the folder the
// message was trashed from (the result id); a message already there is
// returned as it is.
func (p *Provider) Untrash(ctx context.Context, req providers.UntrashRequest) (providers.Object, error) {
	if req.ResultID == "" {
		return providers.Object{}, fmt.Errorf("outlook: untrash %s: no result id: %w", req.ObjectID, providers.ErrInvalidArgument)
	}
	m, err := p.get(ctx, req.ObjectID)
	if err != nil {
		return providers.Object{}, p.err("untrash", req.ObjectID, err)
	}
	if m.ParentFolderID != req.ResultID {
		if _, err := p.move(ctx, req.ObjectID, req.ResultID); err != nil {
			return providers.Object{}, p.err("untrash", req.ObjectID, err)
		}
		if m, err = p.get(ctx, req.ObjectID); err != nil {
			return providers.Object{}, p.err("untrash", req.ObjectID, err)
		}
	}
	folders, trash, err := p.loadFolders(ctx, false)
	if err != nil {
		return providers.Object{}, p.err("untrash", req.ObjectID, err)
	}
	return p.object(m, folders, trash), nil
}

func (p *Provider) err(op, id string, err error) error {
	return &providers.Error{Op: op, Provider: providers.VendorBMail, ObjectID: id, Err: err}
}

// clip cuts s to at most n bytes on a character boundary.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	s = s[:n]
	for len(s) > 0 && !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return s
}
