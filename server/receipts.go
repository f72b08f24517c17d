package server

import (
	"net/http"
)

const receiptBlobs = "receipts"

// serveReceiptKeys publishes the receipt signing keys, old ones included.
func (s *Server) serveReceiptKeys(w http.ResponseWriter, r *http.Request) {
	if !s.rateHeaders(w, r) {
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "public, max-age=300")
	w.Write(s.keyring.KeySet())
}
