package builtin_test

import (
	"context"
	"maps"
	"testing"
	"time"

	"svc.dev/svc/providers"
)

// TestVendorRotatedCredentials: each vendor connector, in process and through the plugin,
// reports the tokens a refresh brings (providers.CredentialWatcher); with a vendor that
// rotates refresh tokens, an instance opened later with the reported configuration works
// where one opened with the first refresh token is refused.
func TestVendorRotatedCredentials(t *testing.T) {
	for mode, reg := range registries(t) {
		for _, env := range vendorEnvs(t) {
			t.Run(mode+"/"+string(env.name), func(t *testing.T) {
				ctx := context.Background()
				env.rotate()
				p := openFrom(t, reg, env.name, env.cfg)
				w, ok := providers.AsCredentialWatcher(p)
				if !ok {
					t.Fatal("not a CredentialWatcher")
				}
				got := make(chan providers.Config, 4)
				w.WatchCredentials(func(cfg providers.Config) { got <- cfg })
				env.expire()
				if _, err := p.List(ctx, providers.ListRequest{SourceRef: "default", PageSize: 3}); err != nil {
					t.Fatalf("list with an expired access token: %v", err)
				}
				var creds providers.Config
				select {
				case creds = <-got:
				case <-time.After(10 * time.Second):
					t.Fatal("the refresh was not reported")
				}
				if creds[providers.KeyRefreshToken] == "" || creds[providers.KeyRefreshToken] == env.cfg[providers.KeyRefreshToken] || creds[providers.KeyAccessToken] == "" {
					t.Fatalf("reported %d entries without a new refresh and access token", len(creds))
				}
				for k := range creds {
					if k != providers.KeyAccessToken && k != providers.KeyRefreshToken && k != providers.KeyTokenType && k != providers.KeyExpiry {
						t.Errorf("reported %q, which is not a credential", k)
					}
				}
				// The instance may refresh again (a page read ahead): the newest report counts.
				providers.CloseProvider(p)
				for more := true; more; {
					select {
					case creds = <-got:
					case <-time.After(200 * time.Millisecond):
						more = false
					}
				}
				env.expire()
				kept := maps.Clone(env.cfg)
				maps.Copy(kept, creds)
				if _, err := openFrom(t, reg, env.name, kept).List(ctx, providers.ListRequest{SourceRef: "default", PageSize: 3}); err != nil {
					t.Errorf("an instance opened with the reported credentials: %v", err)
				}
			})
		}
	}
}
