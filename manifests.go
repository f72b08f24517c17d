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

// ExportManifests writes the tenant's manifests that keep accepts (nil: all) to w as one
// bundle (manifest.WriteBundle), in asset id order, and returns its hash. The manifests are
// read in one pass before writing (the hosted server streams big exports from the store).
func (s *Scope) ExportManifests(ctx context.Context, w io.Writer, keep func(*svcv1.Manifest) bool) (string, error) {
	var ms []*svcv1.Manifest
	err := s.c.store.Manifests().Scan(ctx, s.key(), func(m *svcv1.Manifest) bool {
		if keep == nil || keep(m) {
			ms = append(ms, m)
		}
		return true
	})
	if err != nil {
		return "", err
	}
	head := manifest.BundleHeader{TenantRef: s.key(), GeneratedAt: s.c.now().UTC(), Count: int64(len(ms))}
	seq := func(yield func(*svcv1.Manifest, error) bool) {
		for _, m := range ms {
			if !yield(m, nil) {
				return
			}
		}
	}
	return manifest.WriteBundle(w, head, seq)
}
