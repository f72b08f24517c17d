package svc

import (
	"context"
	"fmt"
	"io"
	"iter"
	"path"
	"slices"
	"strings"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"svc.dev/svc/execute"
	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/id"
	"svc.dev/svc/plan"
	"svc.dev/svc/platform/event"
	"svc.dev/svc/vault"
)

// VaultObject returns a vault object of the tenant (its metadata); one from a source outside
// the scope's grant is refused (CodeForbidden).
func (s *Scope) VaultObject(ctx context.Context, id string) (vault.Object, error) {
	o, err := s.c.vault.Get(ctx, s.key(), id)
	if err != nil {
		return vault.Object{}, err
	}
	return o, s.reachesVaultObject(o)
}

func (s *Scope) reachesVaultObject(o vault.Object) error {
	if o.SourceID == "" {
		return nil
	}
	return s.reachesSource(o.SourceID)
}

// VaultFilter selects vault objects in ListVaultObjects; zero fields select all.
type VaultFilter struct {
	SourceID *string
	State    *svcv1.VaultObjectState
}

// ListVaultObjects returns up to limit of the tenant's vault objects the scope reaches, after
// the object id after, and whether more follow.
func (s *Scope) ListVaultObjects(ctx context.Context, f VaultFilter, after string, limit int) ([]vault.Object, bool, error) {
	return s.c.vault.List(ctx, s.key(), after, limit, func(o vault.Object) bool {
		return (f.SourceID == nil || o.SourceID == *f.SourceID) && (f.State == nil || o.Proto().GetState() == *f.State) &&
			s.reachesVaultObject(o) == nil
	})
}

// OpenVaultObject opens a vault object's content (VaultObject's checks first); reading it
// verifies it, and anything but io.EOF at its end means it failed verification.
func (s *Scope) OpenVaultObject(ctx context.Context, id string) (io.ReadCloser, vault.Object, error) {
	if _, err := s.VaultObject(ctx, id); err != nil {
		return nil, vault.Object{}, err
	}
	return s.c.vault.Open(ctx, s.key(), id)
}

// RestoreOptions say where a vault object is restored to.
type RestoreOptions struct {
	// Path is where, inside the source (or destination), the object is written; empty: its
	// original place (or where the destination's path template puts the original).
	Path string
	// PathSet says Path was given even when empty (an empty path is refused, not ignored).
	PathSet bool
	// Destination, when set, receives the object instead of its original source.
	Destination *svcv1.Destination
	// DestinationID names the destination instead of Destination: the scope reads it, with
	// Destination's checks, once the object or receipt itself passed its own.
	DestinationID string
	// Actor is who asks (default: the tenant's owner, as a user).
	Actor *svcv1.Actor
	// Grant limits the operation classes (zero: all).
	Grant plan.Grant
	// Billing is a live developer's commercial context (nil: not billed).
	Billing *plan.Billing
}

// maxRestorePath bounds a restore path, in bytes.
const maxRestorePath = 1024

// CheckRestorePath refuses a restore path that could not name a place inside the source:
// empty, absolute, not clean, climbing out with "..", or inside a trash folder (".Trash...").
func CheckRestorePath(p string) error {
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

// RestoreVaultObject builds and stores a draft plan that restores a vault object: to its
// original source, at the original path or at opts.Path; or to opts.Destination. The plan is
// authorized and executed like any other.
func (s *Scope) RestoreVaultObject(ctx context.Context, vaultID string, opts *RestoreOptions) (*svcv1.Plan, error) {
	var ro RestoreOptions
	if opts != nil {
		ro = *opts
	}
	o, err := s.VaultObject(ctx, vaultID)
	if err != nil {
		return nil, err
	}
	return s.RestoreObject(ctx, o, ro)
}

// RestoreObject is RestoreVaultObject for an object already read (the server checks it is
// visible to the caller first).
func (s *Scope) RestoreObject(ctx context.Context, o vault.Object, ro RestoreOptions) (*svcv1.Plan, error) {
	if err := s.reachesVaultObject(o); err != nil {
		return nil, err
	}
	if o.SourceID == "" || o.AssetID == "" {
		return nil, invalid("id", "the vault object has no original source to restore to")
	}
	m, err := s.Manifest(ctx, o.AssetID)
	if err != nil {
		return nil, err
	}
	if err := s.restoreDestination(ctx, &ro); err != nil {
		return nil, err
	}
	dst := ro.Destination
	if ro.Path != "" || ro.PathSet {
		if err := CheckRestorePath(ro.Path); err != nil {
			return nil, err
		}
	}
	target := m.GetSource().GetObjectId()
	switch {
	case ro.Path != "":
		target = ro.Path
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
	now := s.c.now().UTC().Truncate(time.Millisecond)
	p := &svcv1.Plan{
		PlanId: id.NewAt("pln", now), PlanVersion: plan.Version, TenantId: s.key(), UserId: s.t.Owner, Actor: s.actorOr(ro.Actor),
		Intent: svcv1.PlanIntent_PLAN_INTENT_RESTORE, Simulated: s.t.Simulated(),
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
	if ro.Billing != nil {
		p.Meter = plan.Estimate(p.Projection, ro.Billing)
	}
	src, err := s.Source(ctx, o.SourceID)
	if err != nil {
		return nil, err
	}
	p.Policy = plan.Decide(p, plan.Decision{SourceStatus: map[string]svcv1.SourceStatus{src.Id: src.GetStatus()}, Grant: s.grantOr(ro.Grant)})
	if p.Hash, err = plan.Hash(p); err != nil {
		return nil, err
	}
	if err := s.PutPlan(ctx, p); err != nil {
		return nil, err
	}
	return p, nil
}

// VaultObjects yields the tenant's vault objects in id order, read 200 at a time.
func (s *Scope) VaultObjects(ctx context.Context) iter.Seq2[vault.Object, error] {
	return func(yield func(vault.Object, error) bool) {
		after := ""
		for {
			objs, more, err := s.c.vault.List(ctx, s.key(), after, 200, nil)
			if err != nil {
				yield(vault.Object{}, err)
				return
			}
			for _, o := range objs {
				after = o.ID
				if !yield(o, nil) {
					return
				}
			}
			if !more || len(objs) == 0 {
				return
			}
		}
	}
}

// ColdDue returns the tenant's committed vault objects that are due for the cold tier: in the
// hot tier and committed more than coldAfter ago.
func (s *Scope) ColdDue(ctx context.Context, coldAfter time.Duration) ([]string, error) {
	cutoff := s.c.now().Add(-coldAfter)
	var due []string
	for o, err := range s.VaultObjects(ctx) {
		if err != nil {
			return nil, err
		}
		if o.State == vault.StateCommitted && o.ColdSince.IsZero() && !o.CommittedAt.IsZero() && o.CommittedAt.Before(cutoff) {
			due = append(due, o.ID)
		}
	}
	return due, nil
}

// MoveCold moves vault objects to the cold tier (vault.Cold: the content is copied to the
// cold backend and verified there before the hot copy is dropped), telling progress after
// each. It returns how many moved before an error.
func (s *Scope) MoveCold(ctx context.Context, ids []string, progress func(moved, total int)) (int, error) {
	moved := 0
	for _, id := range ids {
		if _, err := s.c.vault.Cold(ctx, s.key(), id); err != nil {
			return moved, fmt.Errorf("cold %s: %w", id, err)
		}
		moved++
		if progress != nil {
			progress(moved, len(ids))
		}
	}
	return moved, nil
}

// ScrubVault re-reads and re-hashes every stored copy of the tenant's vault objects
// (vault.Scrub): a copy that no longer matches is marked corrupt and repaired from the other
// tier where possible. Every object left corrupt is announced (svc.vault.object.corrupt).
func (s *Scope) ScrubVault(ctx context.Context, opts *vault.ScrubOptions) (vault.ScrubReport, error) {
	r, err := s.c.vault.Scrub(ctx, s.key(), opts)
	for _, vid := range r.Corrupt {
		s.emit(ctx, event.VaultObjectCorrupt, "/v1/vault/objects", vid, map[string]any{"vault_object_id": vid, "found_by": "scrub"})
	}
	return r, err
}

// VerifyScheduled re-reads from the storage medium and verifies the vault objects of every
// tenant whose last verification is oldest, within a budget (vault.ScrubScheduled), so that every
// object is verified once per opts.VerifyEvery when the budget allows it. Run it every
// opts.Interval. Every object found corrupt is announced (svc.vault.object.corrupt).
func (sv *Instance) VerifyScheduled(ctx context.Context, opts *vault.ScheduleOptions) (vault.ScheduleReport, error) {
	c := sv.core
	tenants, err := c.store.VaultMeta().Tenants(ctx)
	if err != nil {
		return vault.ScheduleReport{}, err
	}
	r, err := c.vault.ScrubScheduled(ctx, tenants, opts)
	for _, ref := range r.Corrupt {
		if t, perr := parseTenant(ref.Tenant); perr == nil {
			sv.Tenant(t).emit(ctx, event.VaultObjectCorrupt, "/v1/vault/objects", ref.ID,
				map[string]any{"vault_object_id": ref.ID, "found_by": "scheduled_verification"})
		}
	}
	return r, err
}

// restoreDestination reads the destination a restore names (ro.DestinationID, or
// ro.Destination again), refusing one outside the scope's grant.
func (s *Scope) restoreDestination(ctx context.Context, ro *RestoreOptions) error {
	id := ro.DestinationID
	if id == "" && ro.Destination != nil {
		id = ro.Destination.GetDestinationId()
	}
	if id == "" {
		return nil
	}
	d, err := s.Destination(ctx, id)
	if err != nil {
		return err
	}
	ro.Destination = d
	return nil
}

// VaultCoverage says how much of the tenant's vault was re-read from its storage medium and
// verified within 7, 30 and 90 days. It concerns the whole vault, so a scope limited to some
// sources is refused (CodeForbidden).
func (s *Scope) VaultCoverage(ctx context.Context) (vault.Coverage, error) {
	if s.access.limited() {
		return vault.Coverage{}, refused(CodeForbidden, "The connection's grant is limited to sources; coverage concerns the whole vault.")
	}
	return s.c.vault.Coverage(ctx, s.key())
}
