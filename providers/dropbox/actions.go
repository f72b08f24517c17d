package dropbox

import (
	"context"
	"errors"
	"fmt"
	"mime"
	"path"
	"strings"
	"time"

	"svc.dev/svc/providers"
)

// resultID is what Untrash needs: the deleted rev, its content hash and
// the path, "REV:HASH:PATH" (a rev and a hash have no colon; a path
// starts with a slash).
func resultID(m *metadata) string { return m.Rev + ":" + m.ContentHash + ":" + m.PathDisplay }

func parseResultID(s string) (rev, hash, p string, ok bool) {
	rev, rest, ok1 := strings.Cut(s, ":")
	hash, p, ok2 := strings.Cut(rest, ":")
	return rev, hash, p, ok1 && ok2 && rev != "" && strings.HasPrefix(p, "/")
}

// Trash implements providers.Trasher: files/delete_v2, with parent_rev
// when a version is expected.
func (p *Provider) Trash(ctx context.Context, req providers.ActionRequest) (providers.ActionResult, error) {
	arg := map[string]string{"path": req.ObjectID}
	if req.ExpectedVersion != "" {
		arg["parent_rev"] = req.ExpectedVersion
	}
	var res struct {
		Metadata metadata `json:"metadata"`
	}
	err := p.call(ctx, "files/delete_v2", arg, &res)
	if req.ExpectedVersion != "" && errors.Is(err, providers.ErrAlreadyExists) {
		// path_write/conflict: the file's rev is not parent_rev.
		return providers.ActionResult{}, &providers.VersionMismatchError{ObjectID: req.ObjectID, Expected: req.ExpectedVersion}
	}
	if err != nil {
		return providers.ActionResult{}, p.err("trash", req.ObjectID, err)
	}
	if res.Metadata.Tag != "file" || res.Metadata.Rev == "" {
		return providers.ActionResult{ResultID: res.Metadata.PathDisplay}, nil // a folder: not restorable by rev
	}
	return providers.ActionResult{ResultID: resultID(&res.Metadata), Restorable: true}, nil
}

// Untrash implements providers.Untrasher: files/restore of the trashed rev.
func (p *Provider) Untrash(ctx context.Context, req providers.UntrashRequest) (providers.Object, error) {
	rev, hash, to, ok := parseResultID(req.ResultID)
	if !ok {
		return providers.Object{}, p.err("untrash", req.ObjectID, fmt.Errorf("result id %q is not a trashed file's: %w", req.ResultID, providers.ErrInvalidArgument))
	}
	var cur metadata
	err := p.call(ctx, "files/get_metadata", map[string]string{"path": to}, &cur)
	switch {
	case err == nil && cur.Tag == "file" && (cur.Rev == rev || (hash != "" && cur.ContentHash == hash)):
		return object(&cur), nil // already back
	case err == nil:
		return providers.Object{}, p.err("untrash", req.ObjectID, fmt.Errorf("another file is at %s now: %w", to, providers.ErrAlreadyExists))
	case !errors.Is(err, providers.ErrNotFound):
		return providers.Object{}, p.err("untrash", req.ObjectID, err)
	}
	var m metadata
	if err := p.call(ctx, "files/restore", map[string]string{"path": to, "rev": rev}, &m); err != nil {
		return providers.Object{}, p.err("untrash", req.ObjectID, err)
	}
	return object(&m), nil
}

// Quota implements providers.Quotaer.
func (p *Provider) Quota(ctx context.Context, _ string) (providers.Quota, error) {
	var u struct {
		Used       int64 `json:"used"`
		Allocation struct {
			Tag       string `json:".tag"`
			Allocated int64  `json:"allocated"`
		} `json:"allocation"`
	}
	if err := p.call(ctx, "users/get_space_usage", nil, &u); err != nil {
		return providers.Quota{}, p.err("quota", "", err)
	}
	return providers.Quota{UsedBytes: max(u.Used, 0), LimitBytes: max(u.Allocation.Allocated, 0), ObservedAt: time.Now().UTC()}, nil
}

func (p *Provider) err(op, id string, err error) error {
	return &providers.Error{Op: op, Provider: providers.VendorCFiles, ObjectID: id, Err: err}
}

// mimeType guesses a file's type from its name (Dropbox reports none).
func mimeType(name string) string {
	t := mime.TypeByExtension(path.Ext(name))
	if i := strings.IndexByte(t, ';'); i >= 0 {
		t = t[:i]
	}
	return t
}
