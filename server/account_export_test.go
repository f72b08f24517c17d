package server

import "svc.dev/svc/vault"

// Vault exposes the server's vault to the black-box tests and benchmarks.
func (s *Server) Vault() *vault.Vault { return s.vault }
