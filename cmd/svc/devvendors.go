package main

import (
	"slices"
	"strings"

	"svc.dev/svc/internal/vendorfake/drive"
	"svc.dev/svc/internal/vendorfake/dropbox"
	"svc.dev/svc/internal/vendorfake/gmail"
	"svc.dev/svc/internal/vendorfake/graph"
	"svc.dev/svc/providers"
	"svc.dev/svc/providers/gdrive"
	"svc.dev/svc/providers/vendorhttp"
	"svc.dev/svc/server"
	"svc.dev/svc/server/devseed"
)

// startDevVendors starts, on loopback, local fakes of the vendors' APIs (written to their
// documented wire formats, internal/vendorfake) and returns the dev tenant's sources at them,
// one per vendor provider and a second vendor_a_files source over the Drive fake's shared
// drive, so that `svc serve --dev` shows a clean-up over the real-API connectors end to end,
// and each fake's authorization endpoint, where devOAuth sends a user who connects another
// account there. The fakes keep their accounts in memory: each start begins from the same
// seeded accounts. stop closes them.
func startDevVendors() (vendors []devseed.Vendor, authURLs map[providers.Name]string, stop func()) {
	gm := gmail.Start(gmail.Options{Messages: 80, Seed: 42})
	dr := drive.Start(drive.Options{Files: 8, SharedFiles: 6, Seed: 42})
	gr := graph.Seeded(graph.Seed{Seed: 42, Messages: 60, Files: 8})
	db := dropbox.Seeded(dropbox.Seed{Seed: 42, Files: 8})
	vendors = []devseed.Vendor{
		{Provider: providers.VendorAMail, Kind: "mail", Label: "Vendor A mailbox (local fake)", Config: gm.Config()},
		{Provider: providers.VendorAFiles, Kind: "files", Label: "Vendor A drive (local fake)", Config: dr.Config()},
		{Provider: providers.VendorAFiles, Kind: "files", Label: "Vendor A shared drive (local fake)", Config: dr.Config(),
			SourceRef: gdrive.SharedDrivePrefix + drive.SharedDriveID},
		{Provider: providers.VendorBMail, Kind: "mail", Label: "Vendor B mailbox (local fake)", Config: gr.ProviderConfig()},
		{Provider: providers.VendorBFiles, Kind: "files", Label: "Vendor B drive (local fake)", Config: gr.ProviderConfig()},
		{Provider: providers.VendorCFiles, Kind: "files", Label: "Vendor C files (local fake)", Config: db.ProviderConfig()},
	}
	authURLs = map[providers.Name]string{
		providers.VendorAMail:  gm.URL() + "/authorize", // vendorfake.Base serves it for the Google fakes
		providers.VendorAFiles: dr.URL() + "/authorize",
		providers.VendorBMail:  gr.AuthURL(),
		providers.VendorBFiles: gr.AuthURL(),
		providers.VendorCFiles: db.AuthURL(),
	}
	// Small accounts: the README tour plans over every source and stays under 1 GB on disk.
	return vendors, authURLs, func() { gm.Close(); dr.Close(); gr.Close(); db.Close() }
}

// grantKeys are the configuration keys of a source's own grant (the connect flow writes
// them) and of svc's client at the vendor (the OAuth configuration adds them at each open).
var grantKeys = []string{vendorhttp.KeyAccessToken, vendorhttp.KeyRefreshToken, vendorhttp.KeyTokenType, vendorhttp.KeyExpiry,
	vendorhttp.KeyClientID, vendorhttp.KeyClientSecret, vendorhttp.KeyTokenURL}

// devOAuth adds, for each dev vendor that --oauth-config does not configure, an OAuth
// configuration at its fake (authURLs, and the token endpoint and client of the fake's
// configuration), so that on a --dev server a user can connect an account there through the
// connect flow (svc sources connect vendor_b_mail) as they would at the vendor. defaults are,
// per vendor, the rest of the fake's configuration (its endpoints and pacing, in the keys
// that vendor's connector takes: endpoint and quota_per_minute for Google's, endpoint,
// requests_per_second and burst for Graph's, api_url, content_url, requests_per_second and
// burst for Dropbox's), which the accounts connected that way are opened with.
func devOAuth(oauth map[providers.Name]server.OAuthProvider, vendors []devseed.Vendor, authURLs map[providers.Name]string) (map[providers.Name]server.OAuthProvider, map[providers.Name]providers.Config) {
	out := map[providers.Name]server.OAuthProvider{}
	for k, v := range oauth {
		out[k] = v
	}
	defaults := map[providers.Name]providers.Config{}
	for _, v := range vendors {
		authURL, served := authURLs[v.Provider]
		if _, configured := out[v.Provider]; configured || !served {
			// Configured by --oauth-config or by an earlier source of the same fake (the
			// shared drive's is the drive's).
			continue
		}
		out[v.Provider] = server.OAuthProvider{AuthURL: authURL, TokenURL: v.Config[vendorhttp.KeyTokenURL],
			ClientID: v.Config[vendorhttp.KeyClientID], ClientSecret: v.Config[vendorhttp.KeyClientSecret],
			DisplayName: strings.TrimSuffix(v.Label, " (local fake)") + " (local fake)"}
		cfg := providers.Config{}
		for k, val := range v.Config {
			if !slices.Contains(grantKeys, k) {
				cfg[k] = val
			}
		}
		defaults[v.Provider] = cfg
	}
	return out, defaults
}
