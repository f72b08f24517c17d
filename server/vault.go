package server

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"path"
	"slices"
	"strings"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/oklog/ulid/v2"

	"svc.dev/svc/execute"
	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/id"
	"svc.dev/svc/manifest"
	"svc.dev/svc/plan"
	"svc.dev/svc/platform/event"
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

// manifestIDOf derives the manifest of an asset that the engine creates when it first
// preserves it, so that a copy redone after a crash (the vault object written, its manifest
// not yet) names the same manifest.
func manifestIDOf(tenant, assetID string) string {
	sum := sha256.Sum256([]byte("svc/manifest/v1\x00" + tenant + "\x00" + assetID))
	var u ulid.ULID
	copy(u[:], sum[:16])
	return "mfs_" + u.String()
}

// Store writes the content to the vault, then records the verified copy in the asset's
// manifest (creating it the first time the asset is preserved) together with the
// svc.vault.object.committed event, in one transaction group-committed with the other assets'.
func (v engineVault) Store(ctx context.Context, tenant string, a execute.Asset, body io.Reader, _ func() error) (execute.VaultRef, error) {
	s := v.s
	o := a.Object
	m, err := s.manifests.Get(ctx, tenant, o.GetAssetId())
	if errors.Is(err, store.ErrNotFound) {
		m, err = manifest.New(&manifest.Asset{ManifestID: manifestIDOf(tenant, o.GetAssetId()), AssetID: o.GetAssetId(), TenantRef: tenant,
			Provider: o.GetProvider(), SourceRef: o.GetSourceId(), Object: a.Content, ObservedAt: s.cfg.Now().UTC()})
	}
	if err != nil {
		return execute.VaultRef{}, err
	}
	fresh := m // stored as is when the asset has no manifest yet
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
	var pe preparedEvent
	var extras []store.Extra
	t, err := parseTenant(tenant)
	if err == nil {
		pe, err = s.prepareEvent(context.WithoutCancel(ctx), t, id.New("evt"), s.cfg.Now(), event.VaultObjectCommitted, "/v1/vault/objects", obj.ID,
			map[string]any{"vault_object_id": obj.ID, "asset_id": o.GetAssetId(), "execution_id": a.ExecutionID, "sha256": obj.SHA256.String(),
				"size_bytes": float64(obj.SizeBytes)})
	}
	if err != nil {
		return execute.VaultRef{}, fmt.Errorf("vault event: %w", err)
	}
	// The manifest's transaction announces the object to the search index (the vault's
	// commit left that to it, as the object names a manifest): it is indexed once, complete.
	extras = append(extras, pe.extra, s.db.VaultChanges().Extra(tenant, obj.ID))
	err = s.manifests.UpsertBatched(ctx, tenant, o.GetAssetId(), func() (*svcv1.Manifest, error) { return proto.Clone(fresh).(*svcv1.Manifest), nil },
		func(m *svcv1.Manifest) error {
			return manifest.Apply(m, &manifest.Update{ExecutionID: a.ExecutionID, At: s.cfg.Now().UTC(), Observed: &observed,
				Vault: &manifest.Vault{VaultObjectID: obj.ID, StorageKey: obj.StorageKey(), SHA256: obj.SHA256.String(), SizeBytes: obj.SizeBytes,
					CommittedAt: obj.CommittedAt, VerifiedAt: obj.VerifiedAt}})
		}, extras...)
	if err != nil {
		return execute.VaultRef{}, err
	}
	if s.search != nil {
		s.search.changed(ctx, tenant, obj)
	}
	s.wake(pe)
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

// Read implements execute.Vault: the asset's committed copy, found through its manifest.
func (v engineVault) Read(ctx context.Context, tenant, assetID string) (io.ReadCloser, execute.VaultRef, error) {
	m, err := v.s.manifests.Get(ctx, tenant, assetID)
	if err != nil {
		return nil, execute.VaultRef{}, fmt.Errorf("asset %s has no manifest: %w", assetID, err)
	}
	vid := m.GetVault().GetVaultObjectId()
	if vid == "" {
		return nil, execute.VaultRef{}, fmt.Errorf("asset %s has no vault copy: %w", assetID, vault.ErrNotFound)
	}
	rc, o, err := v.s.vault.Open(ctx, tenant, vid)
	if err != nil {
		return nil, execute.VaultRef{}, err
	}
	return rc, execute.VaultRef{ID: o.ID, SHA256: o.SHA256.String(), Size: o.SizeBytes}, nil
}

// restoreVaultObject builds a draft plan that restores a vault object (spec #19): to its
// original source, at the original path or at path; or, with destination_id, to that
// destination, at path or where the destination's path template puts the original. The plan
// is authorized and executed like any other.
func (s *Server) restoreVaultObject(ctx context.Context, req *svcv1.RestoreVaultObjectRequest) (*svcv1.Plan, error) {
	c := callerFrom(ctx)
	o, err := s.vaultObject(ctx, req.GetId())
	if err != nil {
		return nil, err
	}
	if o.SourceID == "" || o.AssetID == "" {
		return nil, invalid("id", "the vault object has no original source to restore to")
	}
	m, err := s.manifests.Get(ctx, c.Tenant.String(), o.AssetID)
	if err != nil {
		return nil, err
	}
	var dst *svcv1.Destination
	if req.DestinationId != nil {
		if dst, err = s.grantedDestination(ctx, c, req.GetDestinationId()); err != nil {
			return nil, err
		}
	}
	if req.Path != nil {
		if err := checkRestorePath(req.GetPath()); err != nil {
			return nil, err
		}
	}
	target := m.GetSource().GetObjectId()
	switch {
	case req.Path != nil:
		target = req.GetPath()
	case dst != nil && target != "": // where the destination puts a copy of the original
		target = execute.DestinationPath(dst.GetPathTemplate(), &svcv1.PlanObject{AssetId: o.AssetID, SourceId: o.SourceID,
			Provider: o.Provider, ProviderObjectId: target})
	}
	if target == "" {
		return nil, invalid("path", "is required: the original location is not known")
	}
	ops := []svcv1.OperationClass{svcv1.OperationClass_OPERATION_CLASS_DISCOVER, svcv1.OperationClass_OPERATION_CLASS_RESTORE}
	if dst != nil {
		ops = append(ops, svcv1.OperationClass_OPERATION_CLASS_WRITE)
		slices.Sort(ops)
	}
	now := s.cfg.Now().UTC().Truncate(time.Millisecond)
	p := &svcv1.Plan{
		PlanId: id.NewAt("pln", now), PlanVersion: plan.Version, TenantId: c.Tenant.String(), UserId: c.Tenant.Owner, Actor: c.Actor(),
		Intent: svcv1.PlanIntent_PLAN_INTENT_RESTORE, Simulated: c.Tenant.Simulated(),
		OperationClasses: ops, Destination: dst,
		CreatedAt: timestamppb.New(now), ExpiresAt: timestamppb.New(now.Add(plan.DefaultTTL)),
		SourceMarkers: []*svcv1.SourceMarker{{Provider: o.Provider, SourceId: o.SourceID, Kind: svcv1.SourceMarkerKind_SOURCE_MARKER_KIND_NONE,
			Value: "restore", ObservedAt: timestamppb.New(now)}},
		Objects: []*svcv1.PlanObject{{AssetId: o.AssetID, SourceId: o.SourceID, Provider: o.Provider, ProviderObjectId: target,
			ExpectedSizeBytes: o.SizeBytes, ExpectedSha256: proto.String(o.SHA256.String()), StorageClass: svcv1.StorageClass_STORAGE_CLASS_PRESERVE,
			Actions: []svcv1.PlanAction{svcv1.PlanAction_PLAN_ACTION_RESTORE}}},
		Excluded:             []*svcv1.Exclusion{},
		PreservationRequired: true,
		Projection:           &svcv1.Projection{ObjectCount: 1, BytesToTransfer: o.SizeBytes, ProjectedQuota: []*svcv1.ProjectedQuota{}},
		State:                svcv1.PlanState_PLAN_STATE_DRAFT,
	}
	if p.Meter, err = s.restoreMeter(ctx, c, p); err != nil {
		return nil, err
	}
	src, err := s.sources.Get(ctx, c.Tenant.String(), o.SourceID)
	if err != nil {
		return nil, err
	}
	p.Policy = plan.Decide(p, plan.Decision{SourceStatus: map[string]svcv1.SourceStatus{src.Id: src.GetStatus()}, Grant: c.grant()})
	if p.Hash, err = plan.Hash(p); err != nil {
		return nil, err
	}
	if err := s.putPlan(ctx, c.Tenant, p); err != nil {
		return nil, err
	}
	return p, nil
}

// restoreMeter estimates a live restore on the rate card.
func (s *Server) restoreMeter(ctx context.Context, c *Caller, p *svcv1.Plan) (*svcv1.PlanMeter, error) {
	b, err := s.planBilling(ctx, c)
	if err != nil || b == nil {
		return nil, err
	}
	return plan.Estimate(p.Projection, b), nil
}

// maxRestorePath bounds a restore path, in bytes.
const maxRestorePath = 1024

// checkRestorePath refuses, when the request is made rather than when the execution runs, a
// restore path that could not name a place inside the source: empty, absolute, not clean,
// climbing out with "..", ending in "/", or inside a trash folder (".Trash..."). Control
// characters are refused for every field by the edge.
func checkRestorePath(p string) error {
	switch {
	case p == "" || len(p) > maxRestorePath:
		return invalid("path", fmt.Sprintf("must be 1 to %d bytes", maxRestorePath))
	case strings.HasPrefix(p, "/") || strings.Contains(p, "\\"):
		return invalid("path", "must be a relative path with / separators")
	case path.Clean(p) != p || p == "." || p == ".." || strings.HasPrefix(p, "../"):
		return invalid("path", "must be a clean relative path that stays inside the source (no . or .. segments, no //)")
	}
	for _, part := range strings.Split(p, "/") {
		if strings.HasPrefix(part, ".Trash") {
			return invalid("path", "must not be inside a trash folder")
		}
	}
	return nil
}
