package main

import (
	"svc.dev/svc/internal/vendorfake/drive"
	"svc.dev/svc/internal/vendorfake/dropbox"
	"svc.dev/svc/internal/vendorfake/gmail"
	"svc.dev/svc/internal/vendorfake/graph"
	"svc.dev/svc/providers"
	"svc.dev/svc/server/devseed"
)

// startDevVendors starts, on loopback, local fakes of the vendors' APIs (written to their
// documented wire formats, internal/vendorfake) and returns the dev tenant's sources at them,
// one per vendor provider, so that `svc serve --dev` shows a clean-up over the real-API
// connectors end to end. The fakes keep their accounts in memory: each start begins from the
// same seeded accounts. stop closes them.
func startDevVendors() (vendors []devseed.Vendor, stop func()) {
	gm := gmail.Start(gmail.Options{Messages: 80, Seed: 42})
	dr := drive.Start(drive.Options{Files: 8, Seed: 42})
	gr := graph.Seeded(graph.Seed{Seed: 42, Messages: 60, Files: 8})
	db := dropbox.Seeded(dropbox.Seed{Seed: 42, Files: 8})
	vendors = []devseed.Vendor{
		{Provider: providers.VendorAMail, Kind: "mail", Label: "Vendor A mailbox (local fake)", Config: gm.Config()},
		{Provider: providers.VendorAFiles, Kind: "files", Label: "Vendor A drive (local fake)", Config: dr.Config()},
		{Provider: providers.VendorBMail, Kind: "mail", Label: "Vendor B mailbox (local fake)", Config: gr.ProviderConfig()},
		{Provider: providers.VendorBFiles, Kind: "files", Label: "Vendor B drive (local fake)", Config: gr.ProviderConfig()},
		{Provider: providers.VendorCFiles, Kind: "files", Label: "Vendor C files (local fake)", Config: db.ProviderConfig()},
	}
	// Small accounts: the README tour plans over every source and stays under 1 GB on disk.
	return vendors, func() { gm.Close(); dr.Close(); gr.Close(); db.Close() }
}
