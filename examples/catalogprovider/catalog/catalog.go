// Package catalog is an example third-party provider: a read-only
// vendor_c_files connector whose "API" is a JSON catalogue file, standing in
// for the HTTP API a real connector would call. docs/providers.md walks
// through it.
//
// Config: "catalog", the path of a JSON file of the form
//
//	{"revision": 7, "files": [{"id": "f1", "name": "a.txt", "folder": "Docs",
//	  "content": "hello", "modified": "2024-01-02T03:04:05Z"}]}
//
// There is one source, "default". The catalogue's revision is the source's
// revision marker (kind cursor): it moves whenever the catalogue changes.
package catalog

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"svc.dev/svc/providers"
)

// Description says what the provider is and can do. Served as a plugin, the
// host checks every provider instance against it.
var Description = providers.Description{
	Name:             providers.VendorCFiles,
	ProtocolVersion:  providers.ProtocolVersion,
	DisplayName:      "Vendor C files (example catalogue connector)",
	OperationClasses: providers.OperationClassesFor(nil), // read-only: discover, preserve, monitor
	ObjectKinds:      []providers.Kind{providers.KindFile},
	MarkerKinds:      []providers.MarkerKind{providers.MarkerCursor},
}

type file struct {
	ID       string    `json:"id"`
	Name     string    `json:"name"`
	Folder   string    `json:"folder"`
	Content  string    `json:"content"`
	Modified time.Time `json:"modified"`
}

// Provider serves one catalogue file.
type Provider struct {
	path string
}

// New is the provider's factory.
func New(_ context.Context, cfg providers.Config) (providers.Provider, error) {
	if cfg["catalog"] == "" {
		return nil, fmt.Errorf("catalog: config catalog is required: %w", providers.ErrInvalidArgument)
	}
	return &Provider{path: cfg["catalog"]}, nil
}

// Describe implements providers.Provider.
func (p *Provider) Describe(context.Context) (providers.Description, error) { return Description, nil }

// load reads the catalogue: the "API call" of this example.
func (p *Provider) load(source string) (int, []file, error) {
	if source != "default" {
		return 0, nil, fmt.Errorf("catalog: source %q: %w", source, providers.ErrNotFound)
	}
	raw, err := os.ReadFile(p.path)
	if err != nil {
		return 0, nil, fmt.Errorf("catalog: %v: %w", err, providers.ErrTransient)
	}
	var c struct {
		Revision int    `json:"revision"`
		Files    []file `json:"files"`
	}
	if err := json.Unmarshal(raw, &c); err != nil {
		return 0, nil, fmt.Errorf("catalog: %w", err)
	}
	sort.Slice(c.Files, func(i, j int) bool { return c.Files[i].ID < c.Files[j].ID })
	return c.Revision, c.Files, nil
}

func (f file) object() providers.Object {
	sum := sha256.Sum256([]byte(f.Content))
	digest := hex.EncodeToString(sum[:])
	return providers.Object{
		ID: f.ID, Version: digest[:16], Kind: providers.KindFile, Name: f.Name,
		Path: f.Folder + "/" + f.Name, SizeBytes: int64(len(f.Content)), SHA256: digest,
		Containers: []string{f.Folder}, ModifiedAt: f.Modified,
	}
}

// List implements providers.Provider. The page token is the index of the
// next file.
func (p *Provider) List(_ context.Context, req providers.ListRequest) (providers.Page, error) {
	rev, files, err := p.load(req.SourceRef)
	if err != nil {
		return providers.Page{}, err
	}
	start := 0
	if req.PageToken != "" {
		if start, err = strconv.Atoi(req.PageToken); err != nil || start < 0 || start > len(files) {
			return providers.Page{}, fmt.Errorf("catalog: page token: %w", providers.ErrInvalidArgument)
		}
	}
	end := min(start+providers.ClampPageSize(req.PageSize), len(files))
	page := providers.Page{Marker: providers.Marker{Kind: providers.MarkerCursor, Value: strconv.Itoa(rev)}}
	for _, f := range files[start:end] {
		page.Objects = append(page.Objects, f.object())
	}
	if end < len(files) {
		page.NextPageToken = strconv.Itoa(end)
	}
	return page, nil
}

// Changes implements providers.Provider: the catalogue keeps no history,
// so only the current revision is recognised.
func (p *Provider) Changes(_ context.Context, req providers.ChangesRequest) (providers.ChangePage, error) {
	rev, _, err := p.load(req.SourceRef)
	if err != nil {
		return providers.ChangePage{}, err
	}
	current := providers.Marker{Kind: providers.MarkerCursor, Value: strconv.Itoa(rev)}
	if req.Since != current {
		return providers.ChangePage{}, fmt.Errorf("catalog: %w", providers.ErrMarkerExpired)
	}
	return providers.ChangePage{Marker: current}, nil
}

// Fetch implements providers.Provider.
func (p *Provider) Fetch(_ context.Context, req providers.FetchRequest) (*providers.Content, error) {
	_, files, err := p.load(req.SourceRef)
	if err != nil {
		return nil, err
	}
	for _, f := range files {
		if f.ID != req.ObjectID {
			continue
		}
		o := f.object()
		if req.ExpectedVersion != "" && req.ExpectedVersion != o.Version {
			return nil, &providers.VersionMismatchError{ObjectID: o.ID, Expected: req.ExpectedVersion, Actual: o.Version}
		}
		return &providers.Content{Object: o, Body: io.NopCloser(strings.NewReader(f.Content))}, nil
	}
	return nil, fmt.Errorf("catalog: file %q: %w", req.ObjectID, providers.ErrNotFound)
}
