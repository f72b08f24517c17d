// Package onedrive is the vendor_b_files provider: a OneDrive drive over
// Microsoft Graph v1.0 (providers/graph).
//
// Config keys: those of providers/graph (endpoint, the OAuth token and
// client, pacing). The source ref names the account and is not sent: the
// provider acts on the signed-in user's drive (/me/drive).
//
//   - Listing is the drive's delta query from scratch (GET
//     /me/drive/root/delta): every file, parents before children; folders
//     are not listed as objects but are each file's parent and container
//     (its folder path). The revision marker is the round's
//     @odata.deltaLink (kind delta_token, as a path under the endpoint);
//     Changes follows it, reports deleted items as deletes, and answers
//     ErrMarkerExpired when Graph says the token is gone (410).
//   - An object's version is its eTag; SHA256 is set when Graph reports a
//     sha256Hash (OneDrive personal; OneDrive for Business reports only
//     quickXorHash). Fetch checks the eTag, then streams the content from
//     the item's pre-authenticated download URL and verifies it, as it is
//     read, against quickXorHash and sha256Hash and the size: a mismatch
//     fails the read with ErrInvalidData.
//   - Trash deletes the item to the recycle bin with If-Match: the expected
//     eTag (412 is a version mismatch); Untrash restores it from the
//     recycle bin (driveItem: restore) and is idempotent. Quota reads the
//     drive's quota (total, used, deleted: the recycle bin).
//   - Write spools the content to a temporary file and checks its size and
//     SHA-256 before anything is sent (a mismatch uploads nothing), then
//     uploads it in one simple upload (PUT root:/path:/content, conflict
//     behaviour fail, or replace with Overwrite) and checks the stored
//     item's quickXorHash and size; a mismatch deletes what was stored. At
//     most 250 MB (upload sessions are not implemented: larger is
//     ErrTooLarge).
//
// Pacing: OneDrive is SharePoint underneath, whose documented quota is in
// resource units per app and tenant (1,250 a minute for the smallest
// tenants); a read costs 1 and a write 2. The default is that: 20.8 units
// a second, burst 20.
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
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"svc.dev/svc/providers"
	"svc.dev/svc/providers/contenthash"
	"svc.dev/svc/providers/graph"
	"svc.dev/svc/providers/pagetoken"
)

var caps = []providers.Capability{providers.CapTrash, providers.CapUntrash, providers.CapWrite, providers.CapQuota}

// Description is the vendor_b_files provider's description.
var Description = providers.Description{
	Name:             providers.VendorBFiles,
	ProtocolVersion:  providers.ProtocolVersion,
	DisplayName:      "OneDrive (Microsoft Graph)",
	OperationClasses: providers.OperationClassesFor(caps),
	Capabilities:     caps,
	ObjectKinds:      []providers.Kind{providers.KindFile, providers.KindPhoto, providers.KindVideo},
	MarkerKinds:      []providers.MarkerKind{providers.MarkerDeltaToken},
}

// DefaultPacing is SharePoint's resource-unit quota for the smallest
// tenants: 1,250 units a minute, a read 1 unit and a write 2.
var DefaultPacing = graph.Pacing{
	Rate:  rate.Limit(1250.0 / 60),
	Burst: 20,
	Cost: func(r *http.Request) int {
		if r.Method == http.MethodGet || r.Method == http.MethodHead {
			return 1
		}
		return 2
	},
}

// Provider is a vendor_b_files instance.
type Provider struct {
	c *graph.Client

	mu      sync.Mutex
	folders map[string]folder // folder id -> name and parent, learnt from listings
}

type folder struct {
	name, parent string
	root         bool
}

var (
	_ providers.Provider  = (*Provider)(nil)
	_ providers.Trasher   = (*Provider)(nil)
	_ providers.Untrasher = (*Provider)(nil)
	_ providers.Quotaer   = (*Provider)(nil)
	_ providers.Writer    = (*Provider)(nil)
)

// New opens a vendor_b_files provider. It is a providers.Factory; it does
// not contact Graph.
func New(_ context.Context, cfg providers.Config) (providers.Provider, error) {
	return Open(cfg, nil)
}

// Open is New with the transport the client sends through (nil: the
// default), for tests.
func Open(cfg providers.Config, base http.RoundTripper) (*Provider, error) {
	for k := range cfg {
		if !slices.Contains(graph.ConfigKeys, k) {
			return nil, fmt.Errorf("onedrive: unknown config key %q: %w", k, providers.ErrInvalidArgument)
		}
	}
	c, err := graph.New(cfg, DefaultPacing, base)
	if err != nil {
		return nil, fmt.Errorf("onedrive: %w", err)
	}
	return &Provider{c: c, folders: map[string]folder{}}, nil
}

// Describe implements providers.Provider.
func (p *Provider) Describe(context.Context) (providers.Description, error) { return Description, nil }

// item is a driveItem as Graph sends it.
type item struct {
	ID              string `json:"id"`
	Name            string `json:"name"`
	Size            int64  `json:"size"`
	ETag            string `json:"eTag"`
	Created         string `json:"createdDateTime"`
	Modified        string `json:"lastModifiedDateTime"`
	ParentReference *struct {
		ID   string `json:"id"`
		Path string `json:"path"`
	} `json:"parentReference"`
	File *struct {
		MimeType string `json:"mimeType"`
		Hashes   struct {
			QuickXorHash string `json:"quickXorHash"`
			SHA256Hash   string `json:"sha256Hash"`
		} `json:"hashes"`
	} `json:"file"`
	Folder      *struct{} `json:"folder"`
	Root        *struct{} `json:"root"`
	Deleted     *struct{} `json:"deleted"`
	Shared      *struct{} `json:"shared"`
	DownloadURL string    `json:"@microsoft.graph.downloadUrl"`
}

func (it *item) parentID() string {
	if it.ParentReference == nil {
		return ""
	}
	return it.ParentReference.ID
}

// learn remembers the folders of a listing page, for the paths of files.
func (p *Provider) learn(items []item) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, it := range items {
		if (it.Folder != nil || it.Root != nil) && it.Deleted == nil {
			p.folders[it.ID] = folder{name: it.Name, parent: it.parentID(), root: it.Root != nil}
		}
	}
}

// folderPath returns a folder's path from the root ("Documents/Taxes"; ""
// for the root), asking Graph for folders no listing showed this instance.
func (p *Provider) folderPath(ctx context.Context, id string) (string, error) {
	var segs []string
	for range 64 {
		if id == "" {
			break
		}
		p.mu.Lock()
		f, ok := p.folders[id]
		p.mu.Unlock()
		if !ok {
			var it item
			if _, err := p.c.Do(ctx, http.MethodGet, "/me/drive/items/"+url.PathEscape(id)+"?$select=id,name,parentReference,root,folder", nil, nil, &it); err != nil {
				return "", err
			}
			f = folder{name: it.Name, parent: it.parentID(), root: it.Root != nil}
			p.mu.Lock()
			p.folders[id] = f
			p.mu.Unlock()
		}
		if f.root {
			break
		}
		segs = append(segs, f.name)
		id = f.parent
	}
	slices.Reverse(segs)
	return strings.Join(segs, "/"), nil
}

func (p *Provider) object(ctx context.Context, it *item) (providers.Object, error) {
	dir, err := p.folderPath(ctx, it.parentID())
	if err != nil {
		return providers.Object{}, err
	}
	o := providers.Object{
		ID:        it.ID,
		ParentID:  it.parentID(),
		Version:   it.ETag,
		Kind:      providers.KindFile,
		Name:      it.Name,
		Path:      path.Join(dir, it.Name),
		SizeBytes: max(it.Size, 0),
		Shared:    it.Shared != nil,
		Metadata:  map[string]string{},
	}
	if dir != "" {
		o.Containers = []string{dir}
	}
	o.CreatedAt, _ = time.Parse(time.RFC3339, it.Created)
	o.ModifiedAt, _ = time.Parse(time.RFC3339, it.Modified)
	if it.File != nil {
		o.MIMEType = it.File.MimeType
		switch {
		case strings.HasPrefix(o.MIMEType, "image/"):
			o.Kind = providers.KindPhoto
		case strings.HasPrefix(o.MIMEType, "video/"):
			o.Kind = providers.KindVideo
		}
		if h := it.File.Hashes.SHA256Hash; len(h) == 64 {
			o.SHA256 = strings.ToLower(h)
		}
		if h := it.File.Hashes.QuickXorHash; h != "" {
			o.Metadata["onedrive.quick_xor_hash"] = h
		}
	}
	return o, nil
}

const (
	listKind    = "onedrive.list"
	changesKind = "onedrive.changes"
)

// isDriveDelta reports whether a path is a drive delta link, in the form
// svc builds or in Graph's (/drives/{id}/root/delta(token='...')).
func isDriveDelta(link string) bool {
	return (strings.HasPrefix(link, "/me/drive") || strings.HasPrefix(link, "/drives/")) && strings.Contains(link, "/root/delta")
}

// List implements providers.Provider: the drive's delta query from
// scratch, files only.
func (p *Provider) List(ctx context.Context, req providers.ListRequest) (providers.Page, error) {
	n := providers.ClampPageSize(req.PageSize)
	cur := graph.Cursor{Link: fmt.Sprintf("/me/drive/root/delta?$top=%d", n)}
	if req.PageToken != "" {
		if err := pagetoken.DecodeState(listKind, req.PageToken, &cur); err != nil || !isDriveDelta(cur.Link) {
			return providers.Page{}, fmt.Errorf("onedrive: list: bad page token: %w", providers.ErrInvalidArgument)
		}
	}
	items, next, done, delta, err := graph.Step[item](ctx, p.c, nil, cur, n)
	if err != nil {
		return providers.Page{}, p.err("list", "", err)
	}
	p.learn(items)
	var page providers.Page
	for i := range items {
		it := &items[i]
		if it.File == nil || it.Deleted != nil {
			continue
		}
		o, err := p.object(ctx, it)
		if err != nil {
			return providers.Page{}, p.err("list", it.ID, err)
		}
		page.Objects = append(page.Objects, o)
	}
	if done {
		if !isDriveDelta(delta) {
			return providers.Page{}, p.err("list", "", fmt.Errorf("no deltaLink at the end of the delta: %w", providers.ErrTransient))
		}
		page.Marker = providers.Marker{Kind: providers.MarkerDeltaToken, Value: delta}
		return page, nil
	}
	page.NextPageToken, err = pagetoken.EncodeState(listKind, next)
	return page, err
}

// changesState is the position of a Changes listing: the vendor cursor
// and whether the round found any change so far.
type changesState struct {
	graph.Cursor
	Any bool `json:"a,omitempty"`
}

// maxEmptySteps bounds how many vendor pages one Changes call reads past
// while they hold no change.
const maxEmptySteps = 50

// Changes implements providers.Provider: the delta query from the marker's
// deltaLink. Pages without a change are read past within the call, and a
// round that found no change ends with the marker it started from, so
// "nothing changed" reads as nothing changed (Graph may issue a new token
// each round).
func (p *Provider) Changes(ctx context.Context, req providers.ChangesRequest) (providers.ChangePage, error) {
	n := providers.ClampPageSize(req.PageSize)
	if req.Since.Kind != providers.MarkerDeltaToken || !isDriveDelta(req.Since.Value) {
		return providers.ChangePage{}, fmt.Errorf("onedrive: changes: not a vendor_b_files marker: %w", providers.ErrMarkerExpired)
	}
	st := changesState{Cursor: graph.Cursor{Link: req.Since.Value}}
	if req.PageToken != "" {
		if err := pagetoken.DecodeState(changesKind, req.PageToken, &st); err != nil || !isDriveDelta(st.Link) {
			return providers.ChangePage{}, fmt.Errorf("onedrive: changes: bad page token: %w", providers.ErrInvalidArgument)
		}
	}
	var page providers.ChangePage
	for step := 0; ; step++ {
		items, next, done, delta, err := graph.Step[item](ctx, p.c, nil, st.Cursor, n-len(page.Changes))
		if err != nil {
			return providers.ChangePage{}, p.err("changes", "", err)
		}
		p.learn(items)
		for i := range items {
			it := &items[i]
			switch {
			case it.Deleted != nil:
				page.Changes = append(page.Changes, providers.Change{Type: providers.ChangeDelete, ObjectID: it.ID})
			case it.File != nil:
				o, err := p.object(ctx, it)
				if err != nil {
					return providers.ChangePage{}, p.err("changes", it.ID, err)
				}
				page.Changes = append(page.Changes, providers.Change{Type: providers.ChangeUpsert, ObjectID: it.ID, Object: &o})
			}
		}
		st.Any = st.Any || len(page.Changes) > 0
		if done {
			page.Marker = req.Since
			if st.Any {
				page.Marker = providers.Marker{Kind: providers.MarkerDeltaToken, Value: delta}
			}
			return page, nil
		}
		st.Cursor = next
		if len(page.Changes) > 0 || step >= maxEmptySteps || len(page.Changes) >= n {
			page.NextPageToken, err = pagetoken.EncodeState(changesKind, st)
			return page, err
		}
	}
}

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

// MaxUpload is the most content one simple upload carries.
const MaxUpload = 250 << 20

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
	n, err := io.Copy(io.MultiWriter(f, sum, qx), io.LimitReader(body, MaxUpload+1))
	if err != nil {
		return providers.Object{}, p.err("write", req.Path, fmt.Errorf("read content: %w", err))
	}
	digest := hex.EncodeToString(sum.Sum(nil))
	switch {
	case n > MaxUpload:
		return providers.Object{}, p.err("write", req.Path, fmt.Errorf("over %d bytes: %w", MaxUpload, providers.ErrTooLarge))
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
	it, err := p.c.Upload(ctx, "/me/drive/root:/"+strings.Join(segs, "/")+":/content?@microsoft.graph.conflictBehavior="+conflict, f, n)
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
