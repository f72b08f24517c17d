package gdrive

import (
	"context"
	"crypto/md5"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"
	dr "google.golang.org/api/drive/v3"
	"google.golang.org/api/googleapi"
	"google.golang.org/api/option"

	"svc.dev/svc/providers"
	"svc.dev/svc/providers/google"
	"svc.dev/svc/providers/pagetoken"
)

var caps = []providers.Capability{providers.CapTrash, providers.CapUntrash, providers.CapWrite, providers.CapQuota, providers.CapCredentials}

// Description is the vendor_a_files provider's description.
var Description = providers.Description{
	Name:             providers.VendorAFiles,
	ProtocolVersion:  providers.ProtocolVersion,
	DisplayName:      "Vendor A Files (Drive API)",
	OperationClasses: providers.OperationClassesFor(caps),
	Capabilities:     caps,
	ObjectKinds:      []providers.Kind{providers.KindFile, providers.KindPhoto, providers.KindVideo},
	MarkerKinds:      []providers.MarkerKind{providers.MarkerPageToken},
}

// Scopes are the OAuth scopes vendor_a_files needs: drive reads every
// file's content and permissions and trashes and untrashes them
// (docs/providers.md).
var Scopes = []string{dr.DriveScope}

// DefaultEndpoint is the Google APIs root the Drive API is under.
const DefaultEndpoint = "https://www.googleapis.com/"

// QuotaPerMinute is the default pacing in requests per user per minute
// and WritesPerSecond that of trash and untrash (docs/providers.md says
// where they come from).
const (
	QuotaPerMinute  = 12000
	WritesPerSecond = 3
)

const folderType = "application/vnd.google-apps.folder"

// fileFields are the fields svc reads of a file.
const fileFields = "id,name,mimeType,parents,driveId,size,md5Checksum,sha256Checksum,version,createdTime,modifiedTime,starred,shared,trashed,headRevisionId,permissions(id,type,role,emailAddress,domain,allowFileDiscovery)"

// Provider is a vendor_a_files instance.
type Provider struct {
	svc    *dr.Service
	client *google.Client
	writes *rate.Limiter
	chunk  int  // resumable upload chunk size
	docs   bool // list and fetch Google Docs editors files as exports
	sizes  exportSizes

	mu      sync.Mutex
	folders map[string]folder // folder id -> name and parent
}

type folder struct{ name, parent string }

// New opens a vendor_a_files provider from its configuration.
func New(ctx context.Context, cfg providers.Config) (providers.Provider, error) {
	c, err := google.NewClient(cfg, DefaultEndpoint, QuotaPerMinute, func(*http.Request) int { return 1 })
	if err != nil {
		return nil, fmt.Errorf("vendor_a_files: %w", err)
	}
	wps := WritesPerSecond
	var writes *rate.Limiter
	switch v := cfg["writes_per_second"]; {
	case v == "off" || cfg[google.KeyQuota] == "off" && v == "":
	case v == "":
		writes = rate.NewLimiter(rate.Limit(wps), 1)
	default:
		if wps, err = strconv.Atoi(v); err != nil || wps < 1 {
			return nil, fmt.Errorf("vendor_a_files: config: writes_per_second must be a positive integer or \"off\": %w", providers.ErrInvalidArgument)
		}
		writes = rate.NewLimiter(rate.Limit(wps), 1)
	}
	chunk := DefaultUploadChunk
	if v := cfg["upload_chunk_bytes"]; v != "" {
		// Drive takes chunks in multiples of 256 KiB.
		if chunk, err = strconv.Atoi(v); err != nil || chunk < googleapi.MinUploadChunkSize || chunk%googleapi.MinUploadChunkSize != 0 {
			return nil, fmt.Errorf("vendor_a_files: config: upload_chunk_bytes must be a multiple of %d: %w", googleapi.MinUploadChunkSize, providers.ErrInvalidArgument)
		}
	}
	docs := true
	switch cfg["docs"] {
	case "", "export":
	case "skip":
		docs = false
	default:
		return nil, fmt.Errorf("vendor_a_files: config: docs must be \"export\" or \"skip\": %w", providers.ErrInvalidArgument)
	}
	svc, err := dr.NewService(ctx, option.WithHTTPClient(c.HTTP), option.WithEndpoint(c.Endpoint+"drive/v3/"))
	if err != nil {
		return nil, fmt.Errorf("vendor_a_files: %w", err)
	}
	return &Provider{svc: svc, client: c, writes: writes, chunk: chunk, docs: docs, folders: map[string]folder{}}, nil
}

// Describe returns Description.
func (p *Provider) Describe(context.Context) (providers.Description, error) { return Description, nil }

func fail(op, id string, err error) error { return google.Err(providers.VendorAFiles, op, id, err) }

// SharedDrivePrefix starts a source ref that names a shared drive:
// "drive:" and the shared drive's id.
const SharedDrivePrefix = "drive:"

// driveOf returns the shared drive a source ref names, or "" for My Drive
// ("root", "", "default", "me").
func driveOf(ref string) (string, error) {
	switch ref {
	case "", "default", "me", "root":
		return "", nil
	}
	if id, ok := strings.CutPrefix(ref, SharedDrivePrefix); ok && id != "" && !strings.ContainsAny(id, "/' \\") {
		return id, nil
	}
	return "", fmt.Errorf("vendor_a_files: source %q: My Drive (\"root\") or a shared drive (\"drive:ID\"): %w", ref, providers.ErrInvalidArgument)
}

func checkRef(ref string) error {
	_, err := driveOf(ref)
	return err
}

// token is a listing's or a delta's page token: the marker the listing
// carries (a delta's start) and Drive's own page token.
type token struct {
	Marker string `json:"m"`
	Page   string `json:"p"`
}

// Page token kinds (providers/pagetoken).
const (
	listKind    = "gdrive.list"
	changesKind = "gdrive.changes"
)

func encodeToken(kind string, t token) (string, error) {
	return pagetoken.EncodeState(kind, t)
}

// decodeToken reads a page token of kind, or one of the format before
// providers/pagetoken (a listing paused across an upgrade hands one back;
// it served listings and deltas alike).
func decodeToken(kind, s string) (token, error) {
	var t token
	err := pagetoken.DecodeState(kind, s, &t)
	if err != nil {
		t, err = decodeLegacyToken(s)
	}
	if err != nil || t.Marker == "" || t.Page == "" {
		return token{}, fmt.Errorf("page token not issued by vendor_a_files: %w", providers.ErrInvalidArgument)
	}
	return t, nil
}

// decodeLegacyToken reads a token of the hand-made format: base64url of
// {"v":1,"m":MARKER,"p":PAGE}.
func decodeLegacyToken(s string) (token, error) {
	var t struct {
		V int `json:"v"`
		token
	}
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err == nil {
		err = json.Unmarshal(b, &t)
	}
	if err == nil && t.V != 1 {
		err = errors.New("not a version 1 token")
	}
	return t.token, err
}

// downloadable reports whether a file has bytes to fetch (not a folder,
// not a Google Docs editors file or shortcut).
func downloadable(f *dr.File) bool {
	return !strings.HasPrefix(f.MimeType, "application/vnd.google-apps.")
}

// listed reports whether a file is one of svc's objects: a file with bytes,
// or a Google Docs editors file svc exports (unless config docs is skip).
func (p *Provider) listed(f *dr.File) bool {
	_, ok := exportOf(f)
	return downloadable(f) || ok && p.docs
}

// List returns a page of My Drive's files that have content, trashed
// ones left out.
func (p *Provider) List(ctx context.Context, req providers.ListRequest) (providers.Page, error) {
	drive, err := driveOf(req.SourceRef)
	if err != nil {
		return providers.Page{}, err
	}
	var t token
	if req.PageToken != "" {
		if t, err = decodeToken(listKind, req.PageToken); err != nil {
			return providers.Page{}, err
		}
	} else {
		st, err := p.svc.Changes.GetStartPageToken().DriveId(drive).SupportsAllDrives(true).Context(ctx).Do()
		if err != nil {
			return providers.Page{}, fail("list", "", err)
		}
		t.Marker = st.StartPageToken
	}
	call := p.files(drive).Q("trashed = false and mimeType != '" + folderType + "'").
		OrderBy("createdTime").PageSize(int64(providers.ClampPageSize(req.PageSize))).
		Fields(googleapi.Field("nextPageToken,files(" + fileFields + ")")).Context(ctx)
	if t.Page != "" {
		call = call.PageToken(t.Page)
	}
	res, err := call.Do()
	if err != nil {
		return providers.Page{}, fail("list", "", err)
	}
	var page providers.Page
	for _, f := range res.Files {
		if !p.listed(f) {
			continue
		}
		o, err := p.object(ctx, f)
		if errors.Is(err, providers.ErrTooLarge) || errors.Is(err, providers.ErrUnsupported) {
			continue // a document Drive will not export: nothing svc could preserve
		}
		if err != nil {
			return providers.Page{}, fail("list", f.Id, err)
		}
		page.Objects = append(page.Objects, o)
	}
	if res.NextPageToken != "" {
		t.Page = res.NextPageToken
		if page.NextPageToken, err = encodeToken(listKind, t); err != nil {
			return providers.Page{}, fail("list", "", err)
		}
	} else {
		page.Marker = providers.Marker{Kind: providers.MarkerPageToken, Value: t.Marker}
	}
	return page, nil
}

// folderPath returns the path of a folder ("" for My Drive's root),
// reading folders it has not seen.
func (p *Provider) folderPath(ctx context.Context, id string) (string, error) {
	var names []string
	for depth := 0; id != "" && depth < 64; depth++ {
		p.mu.Lock()
		f, ok := p.folders[id]
		p.mu.Unlock()
		if !ok {
			got, err := p.svc.Files.Get(id).SupportsAllDrives(true).Fields("id,name,parents").Context(ctx).Do()
			if err != nil {
				var ge *googleapi.Error
				if errors.As(err, &ge) && ge.Code == http.StatusNotFound {
					break // shared with the user from a folder they cannot see
				}
				return "", err
			}
			f = folder{name: got.Name}
			if len(got.Parents) > 0 {
				f.parent = got.Parents[0]
			} else {
				f.name = "" // My Drive itself
			}
			p.mu.Lock()
			if len(p.folders) > 100000 {
				clear(p.folders)
			}
			p.folders[id] = f
			p.mu.Unlock()
		}
		if f.name != "" {
			names = append(names, f.name)
		}
		id = f.parent
	}
	for i, j := 0, len(names)-1; i < j; i, j = i+1, j-1 {
		names[i], names[j] = names[j], names[i]
	}
	return strings.Join(names, "/"), nil
}

func kindOf(mime string) providers.Kind {
	switch {
	case strings.HasPrefix(mime, "image/"):
		return providers.KindPhoto
	case strings.HasPrefix(mime, "video/"):
		return providers.KindVideo
	}
	return providers.KindFile
}

// object maps a file.
func (p *Provider) object(ctx context.Context, f *dr.File) (providers.Object, error) {
	o := providers.Object{ID: f.Id, Version: strconv.FormatInt(f.Version, 10), Kind: kindOf(f.MimeType), Name: f.Name,
		SizeBytes: f.Size, SHA256: strings.ToLower(f.Sha256Checksum), MIMEType: f.MimeType, Starred: f.Starred, Shared: f.Shared,
		Metadata: map[string]string{}}
	if f.Md5Checksum != "" {
		o.Metadata["drive.md5"] = f.Md5Checksum
	}
	if f.HeadRevisionId != "" {
		o.Metadata["drive.head_revision"] = f.HeadRevisionId
	}
	if f.DriveId != "" {
		o.Metadata["drive.drive_id"] = f.DriveId
	}
	o.CreatedAt, _ = time.Parse(time.RFC3339, f.CreatedTime)
	o.ModifiedAt, _ = time.Parse(time.RFC3339, f.ModifiedTime)
	o.Path = f.Name
	if len(f.Parents) > 0 {
		o.ParentID = f.Parents[0]
		dir, err := p.folderPath(ctx, f.Parents[0])
		if err != nil {
			return providers.Object{}, err
		}
		if dir != "" {
			o.Containers = []string{dir}
			o.Path = dir + "/" + f.Name
		}
	}
	for _, x := range f.Permissions {
		o.Permissions = append(o.Permissions, permission(x))
	}
	if e, ok := exportOf(f); ok && p.docs {
		size, err := p.exportSize(ctx, f, e)
		if err != nil {
			return providers.Object{}, fmt.Errorf("export %s: %w", f.MimeType, err)
		}
		exported(&o, f, e, size)
	}
	return o, nil
}

// permission maps a Drive permission to the manifest's.
func permission(x *dr.Permission) providers.Permission {
	out := providers.Permission{Principal: x.EmailAddress, Role: providers.RoleUnknown, Type: providers.PrincipalUnknown}
	switch x.Role {
	case "owner", "organizer":
		out.Role = providers.RoleOwner
	case "writer", "fileOrganizer":
		out.Role = providers.RoleWriter
	case "commenter":
		out.Role = providers.RoleCommenter
	case "reader":
		out.Role = providers.RoleReader
	}
	switch x.Type {
	case "user":
		out.Type = providers.PrincipalUser
	case "group":
		out.Type = providers.PrincipalGroup
	case "domain":
		out.Type, out.Principal = providers.PrincipalDomain, x.Domain
	case "anyone":
		out.Type, out.Principal = providers.PrincipalAnyone, "anyone"
		if !x.AllowFileDiscovery {
			out.Type = providers.PrincipalLink // anyone with the link
		}
	}
	if out.Principal == "" {
		out.Principal = x.Id
	}
	return out
}

func (p *Provider) meta(ctx context.Context, id string) (*dr.File, error) {
	return p.svc.Files.Get(id).SupportsAllDrives(true).Fields(googleapi.Field(fileFields)).Context(ctx).Do()
}

func checkVersion(f *dr.File, expected string) error {
	if v := strconv.FormatInt(f.Version, 10); expected != "" && v != expected {
		return &providers.VersionMismatchError{ObjectID: f.Id, Expected: expected, Actual: v}
	}
	return nil
}

// Fetch streams a file's content, checked against Drive's checksum and
// size as it is read.
func (p *Provider) Fetch(ctx context.Context, req providers.FetchRequest) (*providers.Content, error) {
	if err := checkRef(req.SourceRef); err != nil {
		return nil, err
	}
	f, err := p.meta(ctx, req.ObjectID)
	if err != nil {
		return nil, fail("fetch", req.ObjectID, err)
	}
	if f.Trashed {
		return nil, fail("fetch", req.ObjectID, fmt.Errorf("in the trash: %w", providers.ErrNotFound))
	}
	if err := checkVersion(f, req.ExpectedVersion); err != nil {
		return nil, err
	}
	if e, ok := exportOf(f); ok && p.docs {
		return p.fetchExport(ctx, f, e, req.MaxBytes)
	}
	if !downloadable(f) {
		return nil, fail("fetch", req.ObjectID, fmt.Errorf("%s has no content to download: %w", f.MimeType, providers.ErrUnsupported))
	}
	if req.MaxBytes > 0 && f.Size > req.MaxBytes {
		return nil, fail("fetch", req.ObjectID, fmt.Errorf("%d bytes: %w", f.Size, providers.ErrTooLarge))
	}
	o, err := p.object(ctx, f)
	if err != nil {
		return nil, fail("fetch", req.ObjectID, err)
	}
	resp, err := p.svc.Files.Get(req.ObjectID).SupportsAllDrives(true).AcknowledgeAbuse(false).Context(ctx).Download()
	if err != nil {
		return nil, fail("fetch", req.ObjectID, refusal(err))
	}
	return &providers.Content{Object: o, Body: newVerifier(resp.Body, f)}, nil
}

// verifier checks content against Drive's checksum and size as it is
// read: a mismatch fails the read that reaches the end.
type verifier struct {
	rc       io.ReadCloser
	id       string
	h        hash.Hash
	want     string
	size, n  int64
	algo     string
	finished bool
}

func newVerifier(rc io.ReadCloser, f *dr.File) *verifier {
	v := &verifier{rc: rc, id: f.Id, size: f.Size}
	switch {
	case f.Sha256Checksum != "":
		v.h, v.want, v.algo = sha256.New(), strings.ToLower(f.Sha256Checksum), "sha256"
	case f.Md5Checksum != "":
		v.h, v.want, v.algo = md5.New(), strings.ToLower(f.Md5Checksum), "md5"
	}
	return v
}

func (v *verifier) Read(b []byte) (int, error) {
	n, err := v.rc.Read(b)
	v.n += int64(n)
	if v.h != nil {
		v.h.Write(b[:n])
	}
	if v.n > v.size {
		return n, fmt.Errorf("vendor_a_files: %s: more than its %d bytes: %w", v.id, v.size, providers.ErrInvalidData)
	}
	if err == io.EOF && !v.finished {
		v.finished = true
		if v.n != v.size {
			return n, fmt.Errorf("vendor_a_files: %s: %d bytes, Drive says %d: %w", v.id, v.n, v.size, providers.ErrInvalidData)
		}
		if v.h != nil {
			if got := hex.EncodeToString(v.h.Sum(nil)); got != v.want {
				return n, fmt.Errorf("vendor_a_files: %s: content %s %s, Drive says %s: %w", v.id, v.algo, got, v.want, providers.ErrInvalidData)
			}
		}
	}
	if err != nil && err != io.EOF {
		err = fail("fetch", v.id, err)
	}
	return n, err
}

func (v *verifier) Close() error { return v.rc.Close() }

func (p *Provider) setTrashed(ctx context.Context, id string, trashed bool) (*dr.File, error) {
	if err := p.wait(ctx); err != nil {
		return nil, err
	}
	return p.svc.Files.Update(id, &dr.File{Trashed: trashed, ForceSendFields: []string{"Trashed"}}).SupportsAllDrives(true).
		Fields(googleapi.Field(fileFields)).Context(ctx).Do()
}

// Trash moves a file to Drive's trash (its trashed flag), from which
// Untrash takes it back; Drive empties it after 30 days.
func (p *Provider) Trash(ctx context.Context, req providers.ActionRequest) (providers.ActionResult, error) {
	if err := checkRef(req.SourceRef); err != nil {
		return providers.ActionResult{}, err
	}
	f, err := p.meta(ctx, req.ObjectID)
	if err != nil {
		return providers.ActionResult{}, fail("trash", req.ObjectID, err)
	}
	if err := checkVersion(f, req.ExpectedVersion); err != nil {
		return providers.ActionResult{}, err
	}
	if _, err := p.setTrashed(ctx, req.ObjectID, true); err != nil {
		return providers.ActionResult{}, fail("trash", req.ObjectID, err)
	}
	return providers.ActionResult{ResultID: req.ObjectID, Restorable: true}, nil
}

// Untrash takes a file out of the trash; one that is not there is
// returned as it is.
func (p *Provider) Untrash(ctx context.Context, req providers.UntrashRequest) (providers.Object, error) {
	id := req.ObjectID
	if req.ResultID != "" {
		id = req.ResultID
	}
	f, err := p.setTrashed(ctx, id, false)
	if err != nil {
		return providers.Object{}, fail("untrash", id, err)
	}
	o, err := p.object(ctx, f)
	if err != nil {
		return providers.Object{}, fail("untrash", id, err)
	}
	return o, nil
}

// Close drops idle connections.
func (p *Provider) Close() error {
	p.client.HTTP.CloseIdleConnections()
	return nil
}
