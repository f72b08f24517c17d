package vaultfs

import (
	"context"
	"fmt"
	"io"
	"path"
	"time"

	"svc.dev/svc/providers"
	"svc.dev/svc/providers/pagetoken"
)

var caps = []providers.Capability{providers.CapWrite, providers.CapQuota}

// Description is the svc_vault provider's description.
var Description = providers.Description{
	Name:             providers.SvcVault,
	ProtocolVersion:  providers.ProtocolVersion,
	DisplayName:      "svc vault",
	OperationClasses: providers.OperationClassesFor(caps),
	Capabilities:     caps,
	ObjectKinds:      providers.Kinds,
	MarkerKinds:      []providers.MarkerKind{providers.MarkerSnapshotHash},
}

// Provider is an svc_vault provider instance.
type Provider struct {
	store Store
}

var (
	_ providers.Provider = (*Provider)(nil)
	_ providers.Writer   = (*Provider)(nil)
	_ providers.Quotaer  = (*Provider)(nil)
)

// New opens the provider over a DirStore at config key "dir". It is a
// providers.Factory.
func New(_ context.Context, cfg providers.Config) (providers.Provider, error) {
	dir := cfg["dir"]
	if dir == "" {
		return nil, fmt.Errorf("vaultfs: config dir is required: %w", providers.ErrInvalidArgument)
	}
	for k := range cfg {
		if k != "dir" {
			return nil, fmt.Errorf("vaultfs: unknown config key %q: %w", k, providers.ErrInvalidArgument)
		}
	}
	s, err := NewDirStore(dir)
	if err != nil {
		return nil, err
	}
	return NewWithStore(s), nil
}

// NewWithStore returns the provider over any Store (the vault's own).
func NewWithStore(s Store) *Provider { return &Provider{store: s} }

// Describe implements providers.Provider.
func (p *Provider) Describe(context.Context) (providers.Description, error) { return Description, nil }

func checkSource(ref string) error {
	if ref != "" && ref != "vault" {
		return fmt.Errorf("vaultfs: source %q (the vault's one source is \"vault\"): %w", ref, providers.ErrNotFound)
	}
	return nil
}

func object(b Blob) providers.Object {
	o := providers.Object{
		ID:        b.Digest,
		Version:   b.Digest,
		Kind:      b.Kind,
		Name:      b.Name,
		SizeBytes: b.Size,
		SHA256:    b.Digest,
		MIMEType:  b.MIMEType,
		CreatedAt: b.CreatedAt,
	}
	if !o.Kind.Valid() {
		o.Kind = providers.KindFile
	}
	return o
}

// List implements providers.Provider, in digest order.
func (p *Provider) List(ctx context.Context, req providers.ListRequest) (providers.Page, error) {
	if err := checkSource(req.SourceRef); err != nil {
		return providers.Page{}, err
	}
	after, snap, err := pagetoken.Decode(req.PageToken)
	if err != nil {
		return providers.Page{}, fmt.Errorf("vaultfs: %w", err)
	}
	start := ""
	if len(after) > 0 {
		start = after[0]
	}
	size := providers.ClampPageSize(req.PageSize)
	blobs, err := p.store.List(ctx, start, size+1)
	if err != nil {
		return providers.Page{}, err
	}
	more := len(blobs) > size
	if more {
		blobs = blobs[:size]
	}
	page := providers.Page{Objects: make([]providers.Object, len(blobs))}
	for i, b := range blobs {
		page.Objects[i] = object(b)
		snap.Add(b.Digest, b.Digest)
	}
	if more {
		page.NextPageToken, err = pagetoken.Encode([]string{blobs[len(blobs)-1].Digest}, snap)
		return page, err
	}
	page.Marker = snap.Marker()
	return page, nil
}

// Changes implements providers.Provider: the current marker gives no
// changes; any other expires.
func (p *Provider) Changes(ctx context.Context, req providers.ChangesRequest) (providers.ChangePage, error) {
	if err := checkSource(req.SourceRef); err != nil {
		return providers.ChangePage{}, err
	}
	if req.Since.Kind != providers.MarkerSnapshotHash {
		return providers.ChangePage{}, fmt.Errorf("vaultfs: marker kind %q: %w", req.Since.Kind, providers.ErrMarkerExpired)
	}
	snap := pagetoken.NewSnapshot()
	after := ""
	for {
		blobs, err := p.store.List(ctx, after, providers.MaxPageSize)
		if err != nil {
			return providers.ChangePage{}, err
		}
		for _, b := range blobs {
			snap.Add(b.Digest, b.Digest)
		}
		if len(blobs) < providers.MaxPageSize {
			break
		}
		after = blobs[len(blobs)-1].Digest
	}
	if m := snap.Marker(); m == req.Since {
		return providers.ChangePage{Marker: m}, nil
	}
	return providers.ChangePage{}, fmt.Errorf("vaultfs: vault changed since the marker: %w", providers.ErrMarkerExpired)
}

// Fetch implements providers.Provider.
func (p *Provider) Fetch(ctx context.Context, req providers.FetchRequest) (*providers.Content, error) {
	if err := checkSource(req.SourceRef); err != nil {
		return nil, err
	}
	if req.ExpectedVersion != "" && req.ExpectedVersion != req.ObjectID {
		// A blob's version is its digest and never changes.
		if _, err := p.store.Stat(ctx, req.ObjectID); err != nil {
			return nil, err
		}
		return nil, &providers.VersionMismatchError{ObjectID: req.ObjectID, Expected: req.ExpectedVersion, Actual: req.ObjectID}
	}
	body, b, err := p.store.Open(ctx, req.ObjectID)
	if err != nil {
		return nil, err
	}
	return &providers.Content{Object: object(b), Body: body}, nil
}

// Write implements providers.Writer: the content is stored under its
// digest; Path's last element becomes the blob's name.
func (p *Provider) Write(ctx context.Context, req providers.WriteRequest, body io.Reader) (providers.Object, error) {
	if err := checkSource(req.SourceRef); err != nil {
		return providers.Object{}, err
	}
	name := ""
	if req.Path != "" {
		name = path.Base(req.Path)
	}
	b, err := p.store.Put(ctx, body, PutMeta{Name: name, MIMEType: req.MIMEType, Kind: req.Kind, SHA256: req.SHA256, Size: req.SizeBytes})
	if err != nil {
		return providers.Object{}, err
	}
	return object(b), nil
}

// Quota implements providers.Quotaer: the bytes stored, with no limit.
func (p *Provider) Quota(ctx context.Context, sourceRef string) (providers.Quota, error) {
	if err := checkSource(sourceRef); err != nil {
		return providers.Quota{}, err
	}
	used, err := p.store.Usage(ctx)
	if err != nil {
		return providers.Quota{}, err
	}
	return providers.Quota{UsedBytes: used, ObservedAt: time.Now().UTC(), Breakdown: map[string]int64{"blobs": used}}, nil
}
