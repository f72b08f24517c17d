package server

import (
	"context"

	"svc.dev/svc/platform"
)

// DeleteVaultObject deletes a vault object, as account deletion or a tool does.
func (s *Server) DeleteVaultObject(ctx context.Context, tenant platform.Tenant, id string) error {
	_, err := s.vault.Delete(ctx, tenant.String(), id)
	return err
}
