package svc

import (
	"context"

	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/receipt"
	"svc.dev/svc/wire"
)

// ReceiptJSON returns a receipt's exact signed bytes, as issued: what verification covers.
// A receipt lists every object of its execution: under a source grant it is served only when
// the grant reaches every source of its plan (CodeForbidden otherwise).
func (s *Scope) ReceiptJSON(ctx context.Context, id string) ([]byte, error) {
	_, raw, err := s.Receipt(ctx, id)
	return raw, err
}

// Receipt returns a receipt, decoded, and its exact signed bytes (see ReceiptJSON).
func (s *Scope) Receipt(ctx context.Context, id string) (*svcv1.Receipt, []byte, error) {
	raw, err := s.c.store.Receipts().Get(ctx, s.key(), id)
	if err != nil {
		return nil, nil, err
	}
	var r svcv1.Receipt
	if err := wire.Unmarshal(raw, &r); err != nil {
		return nil, nil, err
	}
	if err := s.reachesPlanOf(ctx, r.GetPlanId(), "receipt"); err != nil {
		return nil, nil, err
	}
	return &r, raw, nil
}

// VerifyReceipt verifies a receipt of the tenant as anyone holding the published key set
// would: its hash over its canonical JSON, and its Ed25519 signature by a key of the set.
func (s *Scope) VerifyReceipt(ctx context.Context, id string) (*receipt.Verified, error) {
	raw, err := s.ReceiptJSON(ctx, id)
	if err != nil {
		return nil, err
	}
	return receipt.Verify(raw, s.c.keyring.KeySet())
}
