package tenantapi

import (
	"context"

	"svc.dev/svc"
	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/server/internal/rpc"
)

// restoreReceipt builds a draft restore plan that undoes an execution (POST
// /v1/receipts/{id}/restore): every object the receipt's execution trashed, removed or moved
// comes back, from the vault copy the receipt names (to its original place, or to
// destination_id) or, where the vault holds none, by untrashing it at the provider. Objects
// that can no longer come back are excluded with the reason. The plan is authorized and
// executed like any other.
func (a *API) restoreReceipt(ctx context.Context, req *svcv1.RestoreReceiptRequest) (*svcv1.Plan, error) {
	c := rpc.From(ctx)
	opts := svc.RestoreOptions{DestinationID: req.GetDestinationId()}
	var err error
	if opts.Billing, err = a.Billing(ctx, c); err != nil {
		return nil, err
	}
	return a.Scope(c).UndoReceipt(ctx, req.GetId(), &opts)
}
