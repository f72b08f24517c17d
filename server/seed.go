package server

import (
	"context"

	"svc.dev/svc/server/devseed"
)

// Seed prepares a --dev server (devseed.Seed): unless dev-credentials.json already holds
// working credentials, it seeds a developer account and its test tenant and writes the file.
func (s *Server) Seed(ctx context.Context, baseURL string, opts *devseed.Options) (*devseed.Credentials, error) {
	return devseed.Seed(ctx, devseed.Deps{DataDir: s.cfg.DataDir, Instance: s.core, Accounts: s.accounts, Developers: s.devs,
		Jobs: s.jobRunner, Export: s.writeExport}, baseURL, opts)
}
