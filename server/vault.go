package server

import (
	"context"
	"crypto/sha256"
	"errors"
	"io"
	"time"

	"github.com/oklog/ulid/v2"

	"svc.dev/svc/execute"
	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/manifest"
	"svc.dev/svc/providers"
	"svc.dev/svc/store"
	"svc.dev/svc/vault"
)

// engineVault preserves content for the engine in the vault, and creates or updates the
// asset's manifest with its verified copy.
type engineVault struct{ s *Server }

var _ execute.Vault = engineVault{}

// vaultObjectID derives the vault object of an asset in an execution, so that a write
// interrupted by a crash is redone into the same object.
func vaultObjectID(executionID, assetID string) string {
	sum := sha256.Sum256([]byte("svc/vault-object/v1\x00" + executionID + "\x00" + assetID))
	var u ulid.ULID
	copy(u[:], sum[:16])
	return "vlt_" + u.String()
}

func (v engineVault) Store(ctx context.Context, tenant string, a execute.Asset, body io.Reader, _ func() error) (execute.VaultRef, error) {
	s := v.s
	o := a.Object
	m, err := s.assetManifest(ctx, tenant, o, a.Content)
	if err != nil {
		return execute.VaultRef{}, err
	}
	req := vault.PutRequest{ID: vaultObjectID(a.ExecutionID, o.GetAssetId()), AssetID: o.GetAssetId(), Name: a.Content.Name,
		Provider: o.GetProvider(), SourceID: o.GetSourceId(), MIMEType: a.Content.MIMEType, Kind: string(a.Content.Kind),
		ManifestID: m.GetManifestId(), SizeBytes: -1}
	if o.ExpectedSha256 != nil {
		if d, err := vault.ParseDigest(o.GetExpectedSha256()); err == nil {
			req.SHA256 = d
		}
	}
	obj, err := s.vault.Put(ctx, tenant, req, body)
	if err != nil {
		return execute.VaultRef{}, err
	}
	observed := a.Content
	err = s.manifests.Update(ctx, tenant, o.GetAssetId(), func(m *svcv1.Manifest) error {
		return manifest.Apply(m, &manifest.Update{ExecutionID: a.ExecutionID, At: s.cfg.Now().UTC(), Observed: &observed,
			Vault: &manifest.Vault{VaultObjectID: obj.ID, StorageKey: obj.StorageKey(), SHA256: obj.SHA256.String(), SizeBytes: obj.SizeBytes,
				CommittedAt: obj.CommittedAt, VerifiedAt: obj.VerifiedAt}})
	})
	if err != nil {
		return execute.VaultRef{}, err
	}
	return execute.VaultRef{ID: obj.ID, SHA256: obj.SHA256.String(), Size: obj.SizeBytes}, nil
}

// assetManifest returns an asset's manifest, creating it from the provider's metadata the
// first time the asset is preserved.
func (s *Server) assetManifest(ctx context.Context, tenant string, o *svcv1.PlanObject, meta providers.Object) (*svcv1.Manifest, error) {
	m, err := s.manifests.Get(ctx, tenant, o.GetAssetId())
	if err == nil {
		return m, nil
	}
	if !errors.Is(err, store.ErrNotFound) {
		return nil, err
	}
	m, err = manifest.New(&manifest.Asset{AssetID: o.GetAssetId(), TenantRef: tenant, Provider: o.GetProvider(), SourceRef: o.GetSourceId(),
		Object: meta, ObservedAt: s.cfg.Now().UTC()})
	if err != nil {
		return nil, err
	}
	return m, s.manifests.Put(ctx, tenant, o.GetAssetId(), m)
}

var _ = time.Now
