package dropbox_test

import (
	"context"
	"testing"

	fake "svc.dev/svc/internal/vendorfake/dropbox"
	"svc.dev/svc/providers"
	"svc.dev/svc/providers/dropbox"
	"svc.dev/svc/providers/providertest"
)

func config(s *fake.Server) providers.Config {
	return providers.Config{
		"api_url": s.URL(), "content_url": s.URL(), "access_token": fake.AccessToken, "refresh_token": fake.RefreshToken,
		"client_id": "svc-test", "token_url": s.TokenURL(), "requests_per_second": "1000", "burst": "100",
	}
}

func TestConformance(t *testing.T) {
	providertest.Run(t, providertest.Harness{
		Open: func(t testing.TB) (providers.Provider, string) {
			s := fake.Seeded(fake.Seed{Seed: 1, Files: 9})
			t.Cleanup(s.Close)
			p, err := dropbox.New(context.Background(), config(s))
			if err != nil {
				t.Fatal(err)
			}
			return p, "default"
		},
		MinObjects: 9,
	})
}
