// Package dropbox is the vendor_c_files provider: a Dropbox account over
// the Dropbox API v2, in plain HTTP over providers/vendorhttp (OAuth 2.0
// with refresh, retries of 429 and 5xx honouring Retry-After, pacing).
//
// Config keys:
//
//	api_url              the RPC endpoint (default https://api.dropboxapi.com)
//	content_url          the content endpoint (default https://content.dropboxapi.com)
//	root                 the folder to list ("" for the whole account, or "/Photos")
//	access_token, refresh_token, token_type, expiry
//	                     from the connect flow
//	client_id, client_secret
//	                     svc's app (the --oauth-config entry); a refresh needs them
//	token_url            default https://api.dropboxapi.com/oauth2/token
//	requests_per_second  pacing (default 10)
//	burst                pacing burst (default 10)
//	upload_chunk_bytes   content up to this goes in one files/upload, larger
//	                     content through an upload session in chunks of it
//	                     (a multiple of 4 MiB up to 148 MiB; default 48 MiB)
//
// The source ref names the account and is not sent.
//
//   - Listing is files/list_folder (recursive) and list_folder/continue;
//     the revision marker is the listing's final cursor (kind cursor), which
//     Changes continues from (a "reset" answer is ErrMarkerExpired). Folders
//     are not listed as objects; each file's folder is its container.
//   - An object's id is its lower-case path (what the API reports for a
//     deleted entry, so a delete can name it), its version the file's rev;
//     the file id ("id:...") and content_hash are in its metadata. A rename
//     is a delete and a new object.
//   - Fetch downloads the file and checks the rev that the API reports with
//     the content (Dropbox-API-Result) before handing anything over; the
//     content is verified, as it is read, against content_hash and the size.
//   - Trash is files/delete_v2 with parent_rev (a moved rev is refused by
//     the API); the result id carries the deleted rev, its content_hash and
//     the path, and Untrash is files/restore of that rev to that path,
//     idempotent, refusing to replace a different file that took the path
//     since (ErrAlreadyExists). Deleted files stay restorable for the
//     account's version-history period (30 days to a year, by plan).
//   - Write spools the content to a temporary file, checks its size and
//     SHA-256 before anything is sent (a mismatch uploads nothing), then
//     uploads it (mode add, or overwrite with Overwrite): up to
//     upload_chunk_bytes with one files/upload and its content_hash;
//     larger through an upload session (upload_session/start, append_v2
//     per chunk with the chunk's content_hash, finish with the commit),
//     resumed at the offset Dropbox reports when an append's answer was
//     lost. Dropbox checks each content_hash on arrival, and the stored
//     file's size and content_hash are checked after. No size bound of
//     svc's own (Dropbox's is its upload-session limit). A restore to
//     the original place (named by the lower-case path, the id) goes
//     back under the path as Dropbox last displayed it.
//   - Quota is users/get_space_usage.
//
// Dropbox publishes no numeric rate limit (it answers 429 with
// Retry-After when a user's apps go too fast); the default pace is 10
// requests a second.
package dropbox

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/time/rate"

	"svc.dev/svc/providers"
	"svc.dev/svc/providers/pagetoken"
	"svc.dev/svc/providers/vendorhttp"
)

var caps = []providers.Capability{providers.CapTrash, providers.CapUntrash, providers.CapWrite, providers.CapQuota, providers.CapCredentials}

// Description is the vendor_c_files provider's description.
var Description = providers.Description{
	Name:             providers.VendorCFiles,
	ProtocolVersion:  providers.ProtocolVersion,
	DisplayName:      "Dropbox",
	OperationClasses: providers.OperationClassesFor(caps),
	Capabilities:     caps,
	ObjectKinds:      []providers.Kind{providers.KindFile, providers.KindPhoto, providers.KindVideo},
	MarkerKinds:      []providers.MarkerKind{providers.MarkerCursor},
}

// Defaults.
const (
	DefaultAPIURL     = "https://api.dropboxapi.com"
	DefaultContentURL = "https://content.dropboxapi.com"
	DefaultTokenURL   = "https://api.dropboxapi.com/oauth2/token"
	DefaultRate       = 10
)

var configKeys = []string{
	"api_url", "content_url", "root", vendorhttp.KeyAccessToken, vendorhttp.KeyRefreshToken, vendorhttp.KeyTokenType,
	vendorhttp.KeyExpiry, vendorhttp.KeyClientID, vendorhttp.KeyClientSecret, vendorhttp.KeyTokenURL, "requests_per_second", "burst",
	"upload_chunk_bytes",
}

// Provider is a vendor_c_files instance.
type Provider struct {
	http         *http.Client
	creds        *vendorhttp.Credentials
	api, content string
	root         string
	chunk        int64 // upload_chunk_bytes
}

var (
	_ providers.Provider  = (*Provider)(nil)
	_ providers.Trasher   = (*Provider)(nil)
	_ providers.Untrasher = (*Provider)(nil)
	_ providers.Quotaer   = (*Provider)(nil)
	_ providers.Writer    = (*Provider)(nil)
)

// New opens a vendor_c_files provider. It is a providers.Factory; it does
// not contact Dropbox.
func New(_ context.Context, cfg providers.Config) (providers.Provider, error) {
	return Open(cfg, nil)
}

// Open is New with the transport requests go through (nil: the default).
func Open(cfg providers.Config, base http.RoundTripper) (*Provider, error) {
	c := providers.Config{}
	for k, v := range cfg {
		if !slices.Contains(configKeys, k) {
			return nil, fmt.Errorf("dropbox: unknown config key %q: %w", k, providers.ErrInvalidArgument)
		}
		c[k] = v
	}
	p := &Provider{api: strings.TrimSuffix(c["api_url"], "/"), content: strings.TrimSuffix(c["content_url"], "/"), root: strings.TrimSuffix(c["root"], "/"),
		chunk: DefaultChunk}
	if p.api == "" {
		p.api = DefaultAPIURL
	}
	if p.content == "" {
		p.content = DefaultContentURL
	}
	for _, u := range []string{p.api, p.content} {
		if !strings.HasPrefix(u, "https://") && !strings.HasPrefix(u, "http://") {
			return nil, fmt.Errorf("dropbox: api_url and content_url must be http(s) URLs: %w", providers.ErrInvalidArgument)
		}
	}
	if p.root != "" && !strings.HasPrefix(p.root, "/") {
		return nil, fmt.Errorf("dropbox: root must start with /: %w", providers.ErrInvalidArgument)
	}
	if c[vendorhttp.KeyTokenURL] == "" {
		c[vendorhttp.KeyTokenURL] = DefaultTokenURL
	}
	if base == nil {
		base = http.DefaultTransport
	}
	creds, err := vendorhttp.CredentialsFromConfig(c, &http.Client{Transport: base})
	if err != nil {
		return nil, fmt.Errorf("dropbox: %w", err)
	}
	r, burst := rate.Limit(DefaultRate), DefaultRate
	if v := c["requests_per_second"]; v != "" {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || f <= 0 {
			return nil, fmt.Errorf("dropbox: requests_per_second must be a positive number: %w", providers.ErrInvalidArgument)
		}
		r = rate.Limit(f)
	}
	if v := c["burst"]; v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return nil, fmt.Errorf("dropbox: burst must be a positive integer: %w", providers.ErrInvalidArgument)
		}
		burst = n
	}
	p.creds = creds
	if v := c["upload_chunk_bytes"]; v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < ChunkUnit || n > MaxChunk || n%ChunkUnit != 0 {
			return nil, fmt.Errorf("dropbox: upload_chunk_bytes must be a multiple of %d up to %d: %w", ChunkUnit, MaxChunk, providers.ErrInvalidArgument)
		}
		p.chunk = n
	}
	p.http = vendorhttp.NewClient(vendorhttp.Options{
		Base: base, Credentials: creds, Limiter: rate.NewLimiter(r, burst),
		// Every route but those that change the account may be sent
		// again. An upload session's start (a new, empty session) and
		// append_v2 (Dropbox answers a repeated append with incorrect_offset
		// and the offset it holds) may be too; its finish may not.
		Idempotent: func(req *http.Request) bool {
			switch path.Base(req.URL.Path) {
			case "delete_v2", "restore", "upload", "finish":
				return false
			}
			return true
		},
	})
	return p, nil
}

// Describe implements providers.Provider.
func (p *Provider) Describe(context.Context) (providers.Description, error) { return Description, nil }

// call posts arg to an RPC route and decodes the result into out.
func (p *Provider) call(ctx context.Context, route string, arg, out any) error {
	var body io.Reader
	if arg != nil {
		b, err := json.Marshal(arg)
		if err != nil {
			return err
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.api+"/2/"+route, body)
	if err != nil {
		return fmt.Errorf("%s: %w", route, providers.ErrInvalidArgument)
	}
	if arg != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := p.http.Do(req)
	if err != nil {
		return transportError(route, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return routeError(route, resp)
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 64<<20)).Decode(out); err != nil {
		return fmt.Errorf("%s: decode: %v: %w", route, err, providers.ErrTransient)
	}
	return nil
}

func transportError(route string, err error) error {
	if errors.Is(err, providers.ErrReauthRequired) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("%s: %w", route, err)
	}
	return fmt.Errorf("%s: %v: %w", route, err, providers.ErrTransient)
}

// routeErr is an answer other than 200: the route, the error_summary (or
// the HTTP status), the "error" value of a route error (HTTP 409), and
// the providers sentinel it maps to (nil: none).
type routeErr struct {
	route, summary string
	detail         json.RawMessage
	sentinel       error
}

func (e *routeErr) Error() string {
	if e.sentinel == nil {
		return e.route + ": " + e.summary
	}
	return e.route + ": " + e.summary + ": " + e.sentinel.Error()
}

func (e *routeErr) Unwrap() error { return e.sentinel }

// tag returns the route error's union tag and the object that carries it
// (an upload session's {".tag":"incorrect_offset","correct_offset":N}).
func (e *routeErr) tag() (string, json.RawMessage) {
	var u struct {
		Tag string `json:".tag"`
	}
	if json.Unmarshal(e.detail, &u) != nil {
		return "", nil
	}
	return u.Tag, e.detail
}

// sessionTags are the ways an upload session is not where the client
// thinks it is (UploadSessionLookupError): the upload may start or resume
// again, so they are transient, never the object's ErrNotFound.
var sessionTags = []string{"lookup_failed", "not_found", "incorrect_offset", "closed", "not_closed"}

// routeError maps an answer other than 200 onto the providers' sentinels,
// by status and by the error_summary's tags ("path/not_found/...").
func routeError(route string, resp *http.Response) error {
	var e struct {
		Summary string          `json:"error_summary"`
		Error   json.RawMessage `json:"error"`
	}
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	_ = json.Unmarshal(b, &e)
	tags := strings.Split(strings.TrimSuffix(e.Summary, "."), "/")
	has := func(t string) bool { return slices.Contains(tags, t) }
	var sentinel error
	switch s := resp.StatusCode; {
	case s == http.StatusConflict && strings.HasPrefix(route, "files/upload_session/") && slices.Contains(sessionTags, tags[0]):
		sentinel = providers.ErrTransient
	case s == http.StatusConflict && has("reset"):
		sentinel = providers.ErrMarkerExpired
	case s == http.StatusConflict && has("not_found"):
		sentinel = providers.ErrNotFound
	case s == http.StatusConflict && has("conflict"):
		sentinel = providers.ErrAlreadyExists
	case s == http.StatusConflict && (has("too_many_write_operations") || has("in_progress")):
		sentinel = providers.ErrTransient
	case s == http.StatusConflict && has("unsupported_file"):
		sentinel = providers.ErrUnsupported // not downloadable: Paper docs and the like, exported only
	case s == http.StatusConflict && (has("malformed_path") || has("invalid_revision") || has("not_file")):
		sentinel = providers.ErrInvalidArgument
	case s == http.StatusConflict && (has("no_write_permission") || has("restricted_content") || has("access_restricted")):
		sentinel = providers.ErrPermission
	case s == http.StatusConflict && has("content_hash_mismatch"):
		sentinel = providers.ErrTransient // what arrived is not what was checked before sending: send it again
	case s == http.StatusUnauthorized:
		sentinel = providers.ErrReauthRequired
	case s == http.StatusForbidden:
		sentinel = providers.ErrPermission
	case s == http.StatusTooManyRequests || s >= 500:
		sentinel = providers.ErrTransient
	case s == http.StatusBadRequest:
		sentinel = providers.ErrInvalidArgument
	}
	summary := e.Summary
	if summary == "" {
		summary = resp.Status
	}
	out := &routeErr{route: route, summary: summary, sentinel: sentinel}
	if resp.StatusCode == http.StatusConflict {
		out.detail = e.Error
	}
	return out
}

// metadata is a Metadata union member as the API sends it.
type metadata struct {
	Tag            string `json:".tag"`
	Name           string `json:"name"`
	PathLower      string `json:"path_lower"`
	PathDisplay    string `json:"path_display"`
	ID             string `json:"id"`
	Rev            string `json:"rev"`
	Size           int64  `json:"size"`
	ClientModified string `json:"client_modified"`
	ServerModified string `json:"server_modified"`
	ContentHash    string `json:"content_hash"`
	IsDownloadable *bool  `json:"is_downloadable"`
	SharingInfo    *struct {
		ParentSharedFolderID string `json:"parent_shared_folder_id"`
	} `json:"sharing_info"`
}

type listResult struct {
	Entries []metadata `json:"entries"`
	Cursor  string     `json:"cursor"`
	HasMore bool       `json:"has_more"`
}

func object(m *metadata) providers.Object {
	o := providers.Object{
		ID:        m.PathLower,
		ParentID:  path.Dir(m.PathLower),
		Version:   m.Rev,
		Kind:      providers.KindFile,
		Name:      m.Name,
		Path:      strings.TrimPrefix(m.PathDisplay, "/"),
		SizeBytes: max(m.Size, 0),
		Shared:    m.SharingInfo != nil,
		Metadata:  map[string]string{"dropbox.id": m.ID, "dropbox.content_hash": m.ContentHash},
	}
	if dir := strings.TrimPrefix(path.Dir(m.PathDisplay), "/"); dir != "" {
		o.Containers = []string{dir}
	}
	o.ModifiedAt, _ = time.Parse(time.RFC3339, m.ServerModified)
	o.CreatedAt, _ = time.Parse(time.RFC3339, m.ClientModified)
	if t := mimeType(m.Name); t != "" {
		o.MIMEType = t
		switch {
		case strings.HasPrefix(t, "image/"):
			o.Kind = providers.KindPhoto
		case strings.HasPrefix(t, "video/"):
			o.Kind = providers.KindVideo
		}
	}
	return o
}

// state is a listing's position: the vendor cursor ("" before the first
// list_folder), and how many entries of that cursor's page were handed out
// (Dropbox's limit is a hint), and (changes) whether any change was found.
type state struct {
	Cursor string `json:"c,omitempty"`
	Skip   int    `json:"s,omitempty"`
	Any    bool   `json:"a,omitempty"`
	// Limit is the list_folder limit of the first page, asked again with
	// the same limit while Cursor is empty, so Skip counts in the same page.
	Limit int `json:"l,omitempty"`
}

const (
	listKind    = "dropbox.list"
	changesKind = "dropbox.changes"
	maxSteps    = 50
)

// step reads the vendor page at st and returns up to n of its entries from
// st.Skip, the state after them, and whether the listing is at its end
// (then the state's cursor is the marker).
func (p *Provider) step(ctx context.Context, st state, n int) ([]metadata, state, bool, error) {
	var res listResult
	var err error
	if st.Cursor == "" {
		if st.Limit == 0 {
			st.Limit = n
		}
		err = p.call(ctx, "files/list_folder", map[string]any{"path": p.root, "recursive": true, "limit": st.Limit}, &res)
	} else {
		err = p.call(ctx, "files/list_folder/continue", map[string]any{"cursor": st.Cursor}, &res)
	}
	if err != nil {
		return nil, state{}, false, err
	}
	if st.Skip > len(res.Entries) {
		return nil, state{}, false, fmt.Errorf("page token past its page: %w", providers.ErrInvalidArgument)
	}
	end := min(len(res.Entries), st.Skip+n)
	out := res.Entries[st.Skip:end]
	if end < len(res.Entries) {
		return out, state{Cursor: st.Cursor, Skip: end, Any: st.Any, Limit: st.Limit}, false, nil
	}
	return out, state{Cursor: res.Cursor, Any: st.Any}, !res.HasMore, nil
}

// List implements providers.Provider.
func (p *Provider) List(ctx context.Context, req providers.ListRequest) (providers.Page, error) {
	n := providers.ClampPageSize(req.PageSize)
	var st state
	if req.PageToken != "" {
		if err := pagetoken.DecodeState(listKind, req.PageToken, &st); err != nil {
			return providers.Page{}, p.err("list", "", err)
		}
	}
	var page providers.Page
	for step := 0; ; step++ {
		entries, next, done, err := p.step(ctx, st, n-len(page.Objects))
		if err != nil {
			return providers.Page{}, p.err("list", "", err)
		}
		for i := range entries {
			if entries[i].Tag == "file" {
				page.Objects = append(page.Objects, object(&entries[i]))
			}
		}
		st = next
		if done {
			page.Marker = providers.Marker{Kind: providers.MarkerCursor, Value: st.Cursor}
			return page, nil
		}
		if len(page.Objects) >= n || step >= maxSteps {
			page.NextPageToken, err = pagetoken.EncodeState(listKind, st)
			return page, err
		}
	}
}

// Changes implements providers.Provider: list_folder/continue from the
// marker's cursor. A round without a change keeps the marker.
func (p *Provider) Changes(ctx context.Context, req providers.ChangesRequest) (providers.ChangePage, error) {
	n := providers.ClampPageSize(req.PageSize)
	if req.Since.Kind != providers.MarkerCursor || req.Since.Value == "" {
		return providers.ChangePage{}, p.err("changes", "", fmt.Errorf("not a vendor_c_files marker: %w", providers.ErrMarkerExpired))
	}
	st := state{Cursor: req.Since.Value}
	if req.PageToken != "" {
		if err := pagetoken.DecodeState(changesKind, req.PageToken, &st); err != nil || st.Cursor == "" {
			return providers.ChangePage{}, p.err("changes", "", fmt.Errorf("bad page token: %w", providers.ErrInvalidArgument))
		}
	}
	var page providers.ChangePage
	for step := 0; ; step++ {
		entries, next, done, err := p.step(ctx, st, n-len(page.Changes))
		if err != nil {
			return providers.ChangePage{}, p.err("changes", "", err)
		}
		for i := range entries {
			switch m := &entries[i]; m.Tag {
			case "file":
				o := object(m)
				page.Changes = append(page.Changes, providers.Change{Type: providers.ChangeUpsert, ObjectID: o.ID, Object: &o})
			case "deleted":
				page.Changes = append(page.Changes, providers.Change{Type: providers.ChangeDelete, ObjectID: m.PathLower})
			}
		}
		st = next
		st.Any = st.Any || len(page.Changes) > 0
		if done {
			page.Marker = req.Since
			if st.Any {
				page.Marker = providers.Marker{Kind: providers.MarkerCursor, Value: st.Cursor}
			}
			return page, nil
		}
		if len(page.Changes) > 0 || step >= maxSteps {
			page.NextPageToken, err = pagetoken.EncodeState(changesKind, st)
			return page, err
		}
	}
}
