package server

import (
	"context"

	"svc.dev/svc"
	svcv1 "svc.dev/svc/gen/svc/v1"
)

// restoreVaultObject builds a draft plan that restores a vault object (spec #19): to its
// original source, at the original path or at path; or, with destination_id, to that
// destination, at path or where the destination's path template puts the original. The plan
// is authorized and executed like any other (svc.Scope.RestoreObject builds it).
func (s *Server) restoreVaultObject(ctx context.Context, req *svcv1.RestoreVaultObjectRequest) (*svcv1.Plan, error) {
	c := callerFrom(ctx)
	o, err := s.vaultObject(ctx, req.GetId())
	if err != nil {
		return nil, err
	}
	if o.SourceID == "" || o.AssetID == "" {
		return nil, invalid("id", "the vault object has no original source to restore to")
	}
	t := s.core.Tenant(c.Tenant)
	if _, err := t.Manifest(ctx, o.AssetID); err != nil {
		return nil, err
	}
	opts := svc.RestoreOptions{Actor: c.Actor(), Grant: c.grant()}
	if req.DestinationId != nil {
		if opts.Destination, err = s.grantedDestination(ctx, c, req.GetDestinationId()); err != nil {
			return nil, err
		}
	}
	if req.Path != nil {
		if err := svc.CheckRestorePath(req.GetPath()); err != nil {
			return nil, err
		}
		opts.Path = req.GetPath()
	}
	if opts.Billing, err = s.planBilling(ctx, c); err != nil {
		return nil, err
	}
	return t.RestoreObject(ctx, o, opts)
}
