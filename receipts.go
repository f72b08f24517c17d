package svc

import (
	"context"

	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/receipt"
	"svc.dev/svc/wire"
)

// ReceiptJSON returns a receipt's exact signed bytes, as issued: what verification covers.
func (s *Scope) ReceiptJSON(ctx context.Context, id string) ([]byte, error) {
	return s.c.store.Receipts().Get(ctx, s.key(), id)
}

// Receipt returns a receipt, decoded, and its exact signed bytes.
func (s *Scope) Receipt(ctx context.Context, id string) (*svcv1.Receipt, []byte, error) {
	raw, err := s.ReceiptJSON(ctx, id)
	if err != nil {
		return nil, nil, err
	}
	var r svcv1.Receipt
	if err := wire.Unmarshal(raw, &r); err != nil {
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
