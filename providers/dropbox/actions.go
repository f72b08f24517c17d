package dropbox

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"os"
	"path"
	"strings"
	"time"

	"svc.dev/svc/providers"
	"svc.dev/svc/providers/contenthash"
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

// MaxUpload is the most content one files/upload carries.
const MaxUpload = 150 << 20

// Write implements providers.Writer.
func (p *Provider) Write(ctx context.Context, req providers.WriteRequest, body io.Reader) (providers.Object, error) {
	clean := path.Clean("/" + req.Path)
	if req.Path == "" || clean == "/" || strings.Contains(req.Path, "\x00") || clean != "/"+strings.TrimPrefix(req.Path, "/") {
		return providers.Object{}, p.err("write", req.Path, fmt.Errorf("path %q: %w", req.Path, providers.ErrInvalidArgument))
	}
	dest := p.root + clean
	if req.Mode == providers.WriteRestore && strings.HasPrefix(req.Path, "/") {
		dest = clean // an object's id: its whole path, root included
	}
	f, err := os.CreateTemp("", "svc-dropbox-upload-*")
	if err != nil {
		return providers.Object{}, p.err("write", req.Path, err)
	}
	defer os.Remove(f.Name())
	defer f.Close()
	sum, hash := sha256.New(), contenthash.NewDropbox()
	n, err := io.Copy(io.MultiWriter(f, sum, hash), io.LimitReader(body, MaxUpload+1))
	if err != nil {
		return providers.Object{}, p.err("write", req.Path, fmt.Errorf("read content: %w", err))
	}
	switch {
	case n > MaxUpload:
		return providers.Object{}, p.err("write", req.Path, fmt.Errorf("over %d bytes: %w", MaxUpload, providers.ErrTooLarge))
	case req.SizeBytes >= 0 && n != req.SizeBytes:
		return providers.Object{}, p.err("write", req.Path, fmt.Errorf("%d bytes, expected %d: %w", n, req.SizeBytes, providers.ErrInvalidData))
	case req.SHA256 != "" && hex.EncodeToString(sum.Sum(nil)) != req.SHA256:
		return providers.Object{}, p.err("write", req.Path, fmt.Errorf("content does not match its sha256: %w", providers.ErrInvalidData))
	}
	contentHash := hex.EncodeToString(hash.Sum(nil))
	if req.Mode == providers.WriteRestore {
		// A restore to the original place names the file by its id, its
		// lower-case path: put it back under the path as it was displayed.
		var gone metadata
		if err := p.call(ctx, "files/get_metadata", map[string]any{"path": dest, "include_deleted": true}, &gone); err == nil &&
			gone.Tag == "deleted" && strings.EqualFold(gone.PathDisplay, dest) {
			dest = gone.PathDisplay
		}
	}
	mode := "add"
	if req.Overwrite {
		mode = "overwrite"
	}
	arg, _ := json.Marshal(map[string]any{"path": dest, "mode": mode, "autorename": false, "mute": true, "content_hash": contentHash})
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, p.content+"/2/files/upload", io.NewSectionReader(f, 0, n))
	if err != nil {
		return providers.Object{}, p.err("write", req.Path, providers.ErrInvalidArgument)
	}
	hreq.ContentLength = n
	hreq.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(io.NewSectionReader(f, 0, n)), nil }
	hreq.Header.Set("Dropbox-API-Arg", asciiJSON(arg))
	hreq.Header.Set("Content-Type", "application/octet-stream")
	resp, err := p.http.Do(hreq)
	if err != nil {
		return providers.Object{}, p.err("write", req.Path, transportError("files/upload", err))
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return providers.Object{}, p.err("write", req.Path, routeError("files/upload", resp))
	}
	var m metadata
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&m); err != nil {
		return providers.Object{}, p.err("write", req.Path, fmt.Errorf("files/upload: %v: %w", err, providers.ErrTransient))
	}
	if m.ContentHash != contentHash || m.Size != n {
		return providers.Object{}, p.err("write", req.Path, fmt.Errorf("stored content differs from what was sent: %w", providers.ErrInvalidData))
	}
	o := object(&m)
	o.SHA256 = hex.EncodeToString(sum.Sum(nil))
	return o, nil
}
