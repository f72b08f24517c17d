package main

import (
	"context"
	"testing"

	"svc.dev/svc/providers"
	"svc.dev/svc/providers/builtin"
	"svc.dev/svc/providers/vendorhttp"
	"svc.dev/svc/server"
)

// devOAuth configures the connect flow at every vendor's fake that --oauth-config does not
// configure, and its defaults are, per vendor, the keys that vendor's connector takes (each
// refuses unknown keys): a source holding only a token opens and lists with them, as an
// account connected on a --dev server does.
func TestDevOAuthEveryVendor(t *testing.T) {
	vendors, authURLs, stop := startDevVendors()
	defer stop()
	mine := server.OAuthProvider{AuthURL: "https://accounts.example/auth", TokenURL: "https://accounts.example/token", ClientID: "mine"}
	oauth, defaults := devOAuth(map[providers.Name]server.OAuthProvider{providers.VendorAMail: mine}, vendors, authURLs)
	if oauth[providers.VendorAMail].ClientID != "mine" || defaults[providers.VendorAMail] != nil {
		t.Errorf("a vendor --oauth-config configures: %+v, defaults %v", oauth[providers.VendorAMail], defaults[providers.VendorAMail])
	}
	reg, err := builtin.Registry(builtin.Options{Vendors: true})
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Close()
	for _, v := range vendors[1:] {
		o := oauth[v.Provider]
		if o.AuthURL != authURLs[v.Provider] || o.TokenURL != v.Config[vendorhttp.KeyTokenURL] || o.ClientID == "" {
			t.Errorf("%s: OAuth configuration %+v", v.Provider, o)
		}
		// The source as the connect flow stores it, under what the host adds at each open.
		cfg := providers.Config{vendorhttp.KeyClientID: o.ClientID, vendorhttp.KeyClientSecret: o.ClientSecret, vendorhttp.KeyTokenURL: o.TokenURL}
		for k, val := range defaults[v.Provider] {
			if k == vendorhttp.KeyAccessToken || k == vendorhttp.KeyRefreshToken {
				t.Errorf("%s: the defaults hold the fake's %s", v.Provider, k)
			}
			cfg[k] = val
		}
		cfg[vendorhttp.KeyAccessToken], cfg[vendorhttp.KeyRefreshToken] = v.Config[vendorhttp.KeyAccessToken], v.Config[vendorhttp.KeyRefreshToken]
		p, err := reg.Open(context.Background(), v.Provider, cfg)
		if err != nil {
			t.Errorf("%s: open with the dev defaults: %v", v.Provider, err)
			continue
		}
		ref := "default"
		if v.Provider == providers.VendorAFiles {
			ref = "root"
		}
		if page, err := p.List(context.Background(), providers.ListRequest{SourceRef: ref, PageSize: 5}); err != nil || len(page.Objects) == 0 {
			t.Errorf("%s: list: %d objects, %v", v.Provider, len(page.Objects), err)
		}
	}
}
