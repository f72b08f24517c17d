package svc

import (
	"context"
	"io"

	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/manifest"
)

// Manifest returns an asset's manifest: its provenance, vault copy, destinations and lineage.
func (s *Scope) Manifest(ctx context.Context, assetID string) (*svcv1.Manifest, error) {
	return s.c.store.Manifests().Get(ctx, s.key(), assetID)
}

// reachedManifests is keep limited to the manifests of sources the scope's grant reaches.
func (s *Scope) reachedManifests(keep func(*svcv1.Manifest) bool) func(*svcv1.Manifest) bool {
	if !s.access.limited() {
		return keep
	}
	return func(m *svcv1.Manifest) bool {
		return (keep == nil || keep(m)) && s.reachesSource(m.GetSource().GetSourceRef()) == nil
	}
}

// Manifests returns the tenant's manifests that keep accepts (nil: all), in asset id order.
func (s *Scope) Manifests(ctx context.Context, keep func(*svcv1.Manifest) bool) ([]*svcv1.Manifest, error) {
	keep = s.reachedManifests(keep)
	var ms []*svcv1.Manifest
	for m, err := range s.c.store.Manifests().All(ctx, s.key()) {
		if err != nil {
			return nil, err
		}
		if keep == nil || keep(m) {
			ms = append(ms, m)
		}
	}
	return ms, nil
}

// ManifestExport is a bundle of the tenant's manifests, counted and ready to write.
type ManifestExport struct {
	// Header is the bundle's version, time, tenant and count.
	Header manifest.BundleHeader
	s      *Scope
	keep   func(*svcv1.Manifest) bool
}

// PrepareManifestExport counts the tenant's manifests that keep accepts (nil: all): the
// count comes first in a bundle, so a stream can start only once it is known.
func (s *Scope) PrepareManifestExport(ctx context.Context, keep func(*svcv1.Manifest) bool) (*ManifestExport, error) {
	keep = s.reachedManifests(keep)
	n := 0
	for m, err := range s.c.store.Manifests().All(ctx, s.key()) {
		if err != nil {
			return nil, err
		}
		if keep == nil || keep(m) {
			n++
		}
	}
	return &ManifestExport{Header: manifest.BundleHeader{TenantRef: s.key(), GeneratedAt: s.c.now().UTC(), Count: int64(n)}, s: s, keep: keep}, nil
}

// WriteTo writes the bundle (manifest.WriteBundle), one manifest in memory at a time, read in
// short transactions, and returns its hash. Manifests are never deleted, so this pass finds at
// least as many as were counted; when some were added in between, the bundle holds the first
// Count in asset id order, and is still a valid bundle (count, order and hashes agree). On
// error the output is truncated.
func (e *ManifestExport) WriteTo(ctx context.Context, w io.Writer) (string, error) {
	n := int(e.Header.Count)
	seq := func(yield func(*svcv1.Manifest, error) bool) {
		i := 0
		for m, err := range e.s.c.store.Manifests().All(ctx, e.s.key()) {
			if err == nil && e.keep != nil && !e.keep(m) {
				continue
			}
			if i == n && err == nil {
				return // added after the count
			}
			i++
			if !yield(m, err) {
				return
			}
		}
	}
	return manifest.WriteBundle(w, e.Header, seq)
}

// ExportManifests writes the tenant's manifests that keep accepts (nil: all) to w as one
// bundle, in asset id order, with constant memory, and returns its hash.
func (s *Scope) ExportManifests(ctx context.Context, w io.Writer, keep func(*svcv1.Manifest) bool) (string, error) {
	e, err := s.PrepareManifestExport(ctx, keep)
	if err != nil {
		return "", err
	}
	return e.WriteTo(ctx, w)
}
