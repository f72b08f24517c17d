package platformapi

import (
	"context"

	"google.golang.org/protobuf/types/known/timestamppb"

	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/server/internal/rpc"
)

func (a *API) createOrganization(ctx context.Context, req *svcv1.CreateOrganizationRequest) (*svcv1.Organization, error) {
	o, err := a.Accounts.CreateOrg(ctx, rpc.From(ctx).User.ID, req.GetName())
	if err != nil {
		return nil, err
	}
	return &svcv1.Organization{Id: o.ID, Name: o.Name, Status: o.Status, CreatedAt: timestamppb.New(o.CreatedAt)}, nil
}
