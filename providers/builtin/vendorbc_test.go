package builtin_test

import (
	"testing"

	dropboxfake "svc.dev/svc/internal/vendorfake/dropbox"
	graphfake "svc.dev/svc/internal/vendorfake/graph"
	"svc.dev/svc/providers"
	"svc.dev/svc/providers/providertest"
)

// TestVendorBCConformance runs providertest for the vendor_b and vendor_c connectors
// against the fakes of their APIs, in process and through the plugin
// boundary (the plugin process reaches the fake over loopback, as it would
// the vendor).
func TestVendorBCConformance(t *testing.T) {
	graphConfig := func(s *graphfake.Server) providers.Config {
		return providers.Config{
			"endpoint": s.Endpoint(), "access_token": graphfake.AccessToken, "refresh_token": graphfake.RefreshToken,
			"client_id": "svc-test", "token_url": s.TokenURL(), "requests_per_second": "1000", "burst": "100",
		}
	}
	for mode, reg := range registries(t) {
		t.Run(mode, func(t *testing.T) {
			t.Run("vendor_b_mail", func(t *testing.T) {
				providertest.Run(t, providertest.Harness{
					Open: func(t testing.TB) (providers.Provider, string) {
						s := graphfake.Seeded(graphfake.Seed{Seed: 4, Messages: 24, Files: 1})
						t.Cleanup(s.Close)
						return openFrom(t, reg, providers.VendorBMail, graphConfig(s)), "default"
					},
					MinObjects: 24,
				})
			})
			t.Run("vendor_b_files", func(t *testing.T) {
				providertest.Run(t, providertest.Harness{
					Open: func(t testing.TB) (providers.Provider, string) {
						s := graphfake.Seeded(graphfake.Seed{Seed: 4, Messages: 1, Files: 8})
						t.Cleanup(s.Close)
						return openFrom(t, reg, providers.VendorBFiles, graphConfig(s)), "default"
					},
					MinObjects: 8,
				})
			})
			t.Run("vendor_c_files", func(t *testing.T) {
				providertest.Run(t, providertest.Harness{
					Open: func(t testing.TB) (providers.Provider, string) {
						s := dropboxfake.Seeded(dropboxfake.Seed{Seed: 4, Files: 8})
						t.Cleanup(s.Close)
						return openFrom(t, reg, providers.VendorCFiles, providers.Config{
							"api_url": s.URL(), "content_url": s.URL(), "access_token": dropboxfake.AccessToken,
							"refresh_token": dropboxfake.RefreshToken, "client_id": "svc-test", "token_url": s.TokenURL(),
							"requests_per_second": "1000", "burst": "100",
						}), "default"
					},
					MinObjects: 8,
				})
			})
		})
	}
}
