package main

import (
	"strings"

	"svc.dev/svc/internal/vendorfake/drive"
	"svc.dev/svc/internal/vendorfake/dropbox"
	"svc.dev/svc/internal/vendorfake/gmail"
	"svc.dev/svc/internal/vendorfake/graph"
	"svc.dev/svc/providers"
	"svc.dev/svc/providers/gdrive"
	"svc.dev/svc/server"
	"svc.dev/svc/server/devseed"
)

// startDevVendors starts, on loopback, local fakes of the vendors' APIs (written to their
// documented wire formats, internal/vendorfake) and returns the dev tenant's sources at them,
// one per vendor provider and a second vendor_a_files source over the Drive fake's shared
// drive, so that `svc serve --dev` shows a clean-up over the real-API connectors end to end. The fakes keep their accounts in memory: each start begins from the
// same seeded accounts. stop closes them.
func startDevVendors() (vendors []devseed.Vendor, stop func()) {
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
	// Small accounts: the README tour plans over every source and stays under 1 GB on disk.
	return vendors, func() { gm.Close(); dr.Close(); gr.Close(); db.Close() }
}

// devOAuth adds, for each dev vendor whose fake serves an authorization endpoint and that
// --oauth-config does not configure, an OAuth configuration at the fake, so that on a --dev
// server a user can connect an account there through the connect flow (svc sources connect
// vendor_a_mail) as they would at the vendor. endpoints are the fakes' API roots, which the
// accounts connected that way are opened at.
func devOAuth(oauth map[providers.Name]server.OAuthProvider, vendors []devseed.Vendor) (map[providers.Name]server.OAuthProvider, map[providers.Name]string) {
	out := map[providers.Name]server.OAuthProvider{}
	for k, v := range oauth {
		out[k] = v
	}
	endpoints := map[providers.Name]string{}
	for _, v := range vendors {
		if _, configured := out[v.Provider]; configured || (v.Provider != providers.VendorAMail && v.Provider != providers.VendorAFiles) {
			// Configured by --oauth-config or by an earlier source of the same fake (the
			// shared drive's is the drive's); only the Google fakes serve GET /authorize
			// (vendorfake.Base.Authorize).
			continue
		}
		root := strings.TrimSuffix(v.Config["endpoint"], "/")
		out[v.Provider] = server.OAuthProvider{AuthURL: root + "/authorize", TokenURL: v.Config["token_url"],
			ClientID: v.Config["client_id"], ClientSecret: v.Config["client_secret"],
			DisplayName: strings.TrimSuffix(v.Label, " (local fake)") + " (local fake)"}
		endpoints[v.Provider] = v.Config["endpoint"]
	}
	return out, endpoints
}
