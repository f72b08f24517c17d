package gdrive

import "svc.dev/svc/providers"

var _ providers.CredentialWatcher = (*Provider)(nil)

// WatchCredentials tells fn of each token a refresh brings (providers.CredentialWatcher), so
// the host keeps a rotated refresh token.
func (p *Provider) WatchCredentials(fn func(providers.Config)) {
	p.client.Credentials.WatchCredentials(fn)
}
