package onedrive

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"net/http"
	"net/url"
	"os"
	"path"
	"regexp"
	"strings"
	"time"

	"svc.dev/svc/providers"
	"svc.dev/svc/providers/contenthash"
	"svc.dev/svc/providers/graph"
)

func (p *Provider) get(ctx context.Context, id string) (*item, error) {
	var it item
	if _, err := p.c.Do(ctx, http.MethodGet, "/me/drive/items/"+url.PathEscape(id), nil, nil, &it); err != nil {
		return nil, err
	}
	return &it, nil
}

// Fetch implements providers.Provider.
func (p *Provider) Fetch(ctx context.Context, req providers.FetchRequest) (*providers.Content, error) {
	it, err := p.get(ctx, req.ObjectID)
	if err != nil {
		return nil, p.err("fetch", req.ObjectID, err)
	}
	if it.File == nil {
		return nil, p.err("fetch", req.ObjectID, fmt.Errorf("not a file: %w", providers.ErrUnsupported))
	}
	if req.ExpectedVersion != "" && it.ETag != req.ExpectedVersion {
		return nil, &providers.VersionMismatchError{ObjectID: req.ObjectID, Expected: req.ExpectedVersion, Actual: it.ETag}
	}
	if req.MaxBytes > 0 && it.Size > req.MaxBytes {
		return nil, p.err("fetch", req.ObjectID, fmt.Errorf("%d bytes: %w", it.Size, providers.ErrTooLarge))
	}
	o, err := p.object(ctx, it)
	if err != nil {
		return nil, p.err("fetch", req.ObjectID, err)
	}
	var resp *http.Response
	if it.DownloadURL != "" {
		resp, err = p.c.Open(ctx, it.DownloadURL, true)
	} else {
		resp, err = p.c.Open(ctx, "/me/drive/items/"+url.PathEscape(it.ID)+"/content", false)
	}
	if err != nil {
		return nil, p.err("fetch", req.ObjectID, err)
	}
	return &providers.Content{Object: o, Body: newVerifier(resp.Body, it)}, nil
}

// verifier checks content against the item's size and hashes as it is
// read; the read that reaches the end reports a mismatch.
type verifier struct {
	r      io.ReadCloser
	id     string
	size   int64
	n      int64
	qx     hash.Hash
	wantQX string
	sha    hash.Hash
	wantSH string
}

func newVerifier(r io.ReadCloser, it *item) *verifier {
	v := &verifier{r: r, id: it.ID, size: it.Size}
	if it.File != nil {
		if v.wantQX = it.File.Hashes.QuickXorHash; v.wantQX != "" {
			v.qx = contenthash.NewQuickXor()
		}
		if v.wantSH = strings.ToLower(it.File.Hashes.SHA256Hash); v.wantSH != "" {
			v.sha = sha256.New()
		}
	}
	return v
}

func (v *verifier) Read(b []byte) (int, error) {
	n, err := v.r.Read(b)
	v.n += int64(n)
	if v.qx != nil {
		v.qx.Write(b[:n])
	}
	if v.sha != nil {
		v.sha.Write(b[:n])
	}
	if v.n > v.size {
		return n, fmt.Errorf("onedrive: %s: more than the %d bytes listed: %w", v.id, v.size, providers.ErrInvalidData)
	}
	if err == io.EOF {
		switch {
		case v.n != v.size:
			return n, fmt.Errorf("onedrive: %s: %d bytes, listed %d: %w", v.id, v.n, v.size, providers.ErrInvalidData)
		case v.qx != nil && base64.StdEncoding.EncodeToString(v.qx.Sum(nil)) != v.wantQX:
			return n, fmt.Errorf("onedrive: %s: content does not match its quickXorHash: %w", v.id, providers.ErrInvalidData)
		case v.sha != nil && hex.EncodeToString(v.sha.Sum(nil)) != v.wantSH:
			return n, fmt.Errorf("onedrive: %s: content does not match its sha256Hash: %w", v.id, providers.ErrInvalidData)
		}
	}
	return n, err
}

func (v *verifier) Close() error { return v.r.Close() }

// Trash implements providers.Trasher: DELETE to the recycle bin, with
// If-Match when a version is expected.
func (p *Provider) Trash(ctx context.Context, req providers.ActionRequest) (providers.ActionResult, error) {
	hdr := http.Header{}
	if req.ExpectedVersion != "" {
		hdr.Set("If-Match", req.ExpectedVersion)
	}
	_, err := p.c.Do(ctx, http.MethodDelete, "/me/drive/items/"+url.PathEscape(req.ObjectID), hdr, nil, nil)
	if errors.Is(err, providers.ErrVersionMismatch) {
		return providers.ActionResult{}, &providers.VersionMismatchError{ObjectID: req.ObjectID, Expected: req.ExpectedVersion}
	}
	if err != nil {
		return providers.ActionResult{}, p.err("trash", req.ObjectID, err)
	}
	return providers.ActionResult{ResultID: req.ObjectID, Restorable: true}, nil
}

// Untrash implements providers.Untrasher: restore from the recycle bin.
// An item that is already back is returned as it is.
func (p *Provider) Untrash(ctx context.Context, req providers.UntrashRequest) (providers.Object, error) {
	if it, err := p.get(ctx, req.ObjectID); err == nil && it.File != nil {
		return p.object(ctx, it)
	} else if err != nil && !errors.Is(err, providers.ErrNotFound) {
		return providers.Object{}, p.err("untrash", req.ObjectID, err)
	}
	var it item
	if _, err := p.c.Do(ctx, http.MethodPost, "/me/drive/items/"+url.PathEscape(req.ObjectID)+"/restore", nil, struct{}{}, &it); err != nil {
		return providers.Object{}, p.err("untrash", req.ObjectID, err)
	}
	o, err := p.object(ctx, &it)
	if err != nil {
		return providers.Object{}, p.err("untrash", req.ObjectID, err)
	}
	return o, nil
}

// Quota implements providers.Quotaer.
func (p *Provider) Quota(ctx context.Context, _ string) (providers.Quota, error) {
	var d struct {
		Quota struct {
			Total   int64 `json:"total"`
			Used    int64 `json:"used"`
			Deleted int64 `json:"deleted"`
		} `json:"quota"`
	}
	if _, err := p.c.Do(ctx, http.MethodGet, "/me/drive?$select=id,quota", nil, nil, &d); err != nil {
		return providers.Quota{}, p.err("quota", "", err)
	}
	return providers.Quota{
		UsedBytes: max(d.Quota.Used, 0), LimitBytes: max(d.Quota.Total, 0), TrashBytes: max(d.Quota.Deleted, 0),
		ObservedAt: time.Now().UTC(),
	}, nil
}

func (p *Provider) err(op, id string, err error) error {
	return &providers.Error{Op: op, Provider: providers.VendorBFiles, ObjectID: id, Err: err}
}

// MaxUpload is the most content one simple upload carries (Graph's
// documented 250 MB). Write sends content over SimpleUploadMax through an
// upload session instead, which has no such bound.
const MaxUpload = 250 << 20

// SimpleUploadMax is the most content Write sends in one simple upload;
// larger content goes through an upload session, as Microsoft advises for
// files over 4 MB.
const SimpleUploadMax = 4 << 20

// DefaultFragment is an upload session's default fragment size (config
// upload_fragment_bytes): 32 times Graph's 320 KiB granularity.
const DefaultFragment = 32 * graph.FragmentGranularity

const keyFragment = "upload_fragment_bytes"

// itemID matches OneDrive item ids: personal ("HEX!N") and business
// (34 characters starting "01").
var itemID = regexp.MustCompile(`^(?:[0-9A-Fa-f]+![0-9]+|01[A-Z0-9]{32})$`)

// Write implements providers.Writer.
//
// A restore to an object's original place (mode restore) names the object
// by its id, as svc's engine does for every provider; OneDrive's ids are
// not paths, so such a write brings the item back from the recycle bin and
// checks that its content is the content given (size, quickXorHash, and
// sha256Hash when Graph reports it). An item no longer in the recycle bin
// cannot be put back where it was (its path went with it): that is
// ErrNotFound, and the content stays wherever the caller has it.
func (p *Provider) Write(ctx context.Context, req providers.WriteRequest, body io.Reader) (providers.Object, error) {
	if req.Mode == providers.WriteRestore && itemID.MatchString(req.Path) {
		return p.restoreByID(ctx, req, body)
	}
	clean := path.Clean("/" + req.Path)
	if req.Path == "" || clean == "/" || clean != "/"+strings.TrimPrefix(req.Path, "/") || strings.ContainsAny(req.Path, ":\\\x00") {
		return providers.Object{}, p.err("write", req.Path, fmt.Errorf("path %q: %w", req.Path, providers.ErrInvalidArgument))
	}
	f, err := os.CreateTemp("", "svc-onedrive-upload-*")
	if err != nil {
		return providers.Object{}, p.err("write", req.Path, err)
	}
	defer os.Remove(f.Name())
	defer f.Close()
	sum, qx := sha256.New(), contenthash.NewQuickXor()
	n, err := io.Copy(io.MultiWriter(f, sum, qx), body)
	if err != nil {
		return providers.Object{}, p.err("write", req.Path, fmt.Errorf("read content: %w", err))
	}
	digest := hex.EncodeToString(sum.Sum(nil))
	switch {
	case req.SizeBytes >= 0 && n != req.SizeBytes:
		return providers.Object{}, p.err("write", req.Path, fmt.Errorf("%d bytes, expected %d: %w", n, req.SizeBytes, providers.ErrInvalidData))
	case req.SHA256 != "" && digest != req.SHA256:
		return providers.Object{}, p.err("write", req.Path, fmt.Errorf("content does not match its sha256: %w", providers.ErrInvalidData))
	}
	var segs []string
	for _, s := range strings.Split(strings.Trim(clean, "/"), "/") {
		segs = append(segs, url.PathEscape(s))
	}
	conflict := "fail"
	if req.Overwrite {
		conflict = "replace"
	}
	var it []byte
	if n > min(SimpleUploadMax, p.fragment) {
		it, err = p.c.UploadSession(ctx, "/me/drive/root:/"+strings.Join(segs, "/")+":/createUploadSession", conflict, f, n, p.fragment)
	} else {
		it, err = p.c.Upload(ctx, "/me/drive/root:/"+strings.Join(segs, "/")+":/content?@microsoft.graph.conflictBehavior="+conflict, f, n)
	}
	if err != nil {
		return providers.Object{}, p.err("write", req.Path, err)
	}
	var stored item
	if err := json.Unmarshal(it, &stored); err != nil || stored.ID == "" {
		return providers.Object{}, p.err("write", req.Path, fmt.Errorf("upload answer: %w", providers.ErrTransient))
	}
	if stored.Size != n || stored.File == nil || (stored.File.Hashes.QuickXorHash != "" && stored.File.Hashes.QuickXorHash != base64.StdEncoding.EncodeToString(qx.Sum(nil))) {
		_, _ = p.c.Do(ctx, http.MethodDelete, "/me/drive/items/"+url.PathEscape(stored.ID), nil, nil, nil)
		return providers.Object{}, p.err("write", req.Path, fmt.Errorf("stored content differs from what was sent: %w", providers.ErrInvalidData))
	}
	o, err := p.object(ctx, &stored)
	if err != nil {
		return providers.Object{}, p.err("write", req.Path, err)
	}
	o.SHA256 = digest
	return o, nil
}

// restoreByID is Write of a restore to an item's original place.
func (p *Provider) restoreByID(ctx context.Context, req providers.WriteRequest, body io.Reader) (providers.Object, error) {
	sum, qx := sha256.New(), contenthash.NewQuickXor()
	n, err := io.Copy(io.MultiWriter(sum, qx), body)
	if err != nil {
		return providers.Object{}, p.err("write", req.Path, fmt.Errorf("read content: %w", err))
	}
	digest := hex.EncodeToString(sum.Sum(nil))
	if (req.SizeBytes >= 0 && n != req.SizeBytes) || (req.SHA256 != "" && digest != req.SHA256) {
		return providers.Object{}, p.err("write", req.Path, fmt.Errorf("content does not match its size or sha256: %w", providers.ErrInvalidData))
	}
	it, err := p.get(ctx, req.Path)
	if errors.Is(err, providers.ErrNotFound) {
		var restored item
		if _, err = p.c.Do(ctx, http.MethodPost, "/me/drive/items/"+url.PathEscape(req.Path)+"/restore", nil, struct{}{}, &restored); err == nil {
			it = &restored
		}
	}
	if errors.Is(err, providers.ErrNotFound) {
		return providers.Object{}, p.err("write", req.Path, fmt.Errorf("the item is no longer in the recycle bin and its original path is unknown; restore it to a destination: %w", providers.ErrNotFound))
	}
	if err != nil {
		return providers.Object{}, p.err("write", req.Path, err)
	}
	if it.File == nil || it.Size != n || (it.File.Hashes.QuickXorHash != "" && it.File.Hashes.QuickXorHash != base64.StdEncoding.EncodeToString(qx.Sum(nil))) ||
		(it.File.Hashes.SHA256Hash != "" && strings.ToLower(it.File.Hashes.SHA256Hash) != digest) {
		return providers.Object{}, p.err("write", req.Path, fmt.Errorf("the item at its original place is not the content to restore: %w", providers.ErrAlreadyExists))
	}
	o, err := p.object(ctx, it)
	if err != nil {
		return providers.Object{}, p.err("write", req.Path, err)
	}
	o.SHA256 = digest
	return o, nil
}
