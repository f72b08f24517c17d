package svc_test

import (
	"svc.dev/svc"
	"svc.dev/svc/receipt"
)

// svcReceiptVerify verifies receipt bytes against the instance's published key set.
func svcReceiptVerify(sv *svc.Instance, raw []byte) (*receipt.Verified, error) {
	return receipt.Verify(raw, sv.ReceiptKeys().KeySet())
}
