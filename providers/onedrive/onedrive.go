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
//     SHA-256 before anything is sent (a mismatch uploads nothing). Up to
//     SimpleUploadMax (4 MiB) it goes in one simple upload (PUT
//     root:/path:/content); larger content goes through an upload session
//     (createUploadSession, then fragments of upload_fragment_bytes, default
//     10 MiB, PUT to the session's pre-authenticated URL with Content-Range,
//     resumed from the session's status after a failed fragment). Conflict
//     behaviour fail, or replace with Overwrite. The stored item's
//     quickXorHash and size are checked; a mismatch deletes what was stored.
//
// Config keys: those of providers/graph, and upload_fragment_bytes (a
// multiple of 320 KiB up to 60 MiB).
//
// Pacing: OneDrive is SharePoint underneath, whose documented quota is in
// resource units per app and tenant (1,250 a minute for the smallest
// tenants); a read costs 1 and a write 2. The default is that: 20.8 units
// a second, burst 20.
package onedrive

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"svc.dev/svc/providers"
	"svc.dev/svc/providers/graph"
	"svc.dev/svc/providers/pagetoken"
)

var caps = []providers.Capability{providers.CapTrash, providers.CapUntrash, providers.CapWrite, providers.CapQuota, providers.CapCredentials}

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
	c        *graph.Client
	fragment int64 // upload session fragment size

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
	fragment := int64(DefaultFragment)
	gcfg := providers.Config{}
	for k, v := range cfg {
		switch {
		case k == keyFragment:
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n <= 0 || n%graph.FragmentGranularity != 0 || n > graph.MaxFragment {
				return nil, fmt.Errorf("onedrive: config: %s must be a multiple of %d up to %d: %w", keyFragment, graph.FragmentGranularity, graph.MaxFragment, providers.ErrInvalidArgument)
			}
			fragment = n
		case slices.Contains(graph.ConfigKeys, k):
			gcfg[k] = v
		default:
			return nil, fmt.Errorf("onedrive: unknown config key %q: %w", k, providers.ErrInvalidArgument)
		}
	}
	c, err := graph.New(gcfg, DefaultPacing, base)
	if err != nil {
		return nil, fmt.Errorf("onedrive: %w", err)
	}
	return &Provider{c: c, fragment: fragment, folders: map[string]folder{}}, nil
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
