package server

import (
	"context"
	"net/http"

	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/server/internal/rpc"
)

const receiptBlobs = "receipts"

// getReceipt serves a receipt's exact signed bytes (spec #17).
func (s *Server) getReceipt(ctx context.Context, req *svcv1.GetReceiptRequest) (*svcv1.Receipt, error) {
	c := rpc.From(ctx)
	r, raw, err := s.scope(c).Receipt(ctx, req.GetId())
	if err != nil {
		return nil, err
	}
	c.RawJSON = raw
	return r, nil
}

// serveReceiptKeys publishes the receipt signing keys, old ones included.
func (s *Server) serveReceiptKeys(w http.ResponseWriter, r *http.Request) {
	if !s.rateHeaders(w, r) {
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "public, max-age=300")
	w.Write(s.keyring.KeySet())
}
