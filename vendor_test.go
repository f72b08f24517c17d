package svc_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"svc.dev/svc"
	svcv1 "svc.dev/svc/gen/svc/v1"
	dropboxfake "svc.dev/svc/internal/vendorfake/dropbox"
	graphfake "svc.dev/svc/internal/vendorfake/graph"
	"svc.dev/svc/providers"
	"svc.dev/svc/providers/builtin"
)

// TestVendorCleanUpAndUndo runs the whole loop over each vendor connector
// against its fake: connect, plan a clean-up of what is older than 30 days,
// authorize, execute (preserve in the vault, then trash at the vendor),
// verify the receipt, then undo it (untrash at the vendor). What the plan
// trashed is in the vendor's trash after the execution and back after the
// undo.
func TestVendorCleanUpAndUndo(t *testing.T) {
	g := graphfake.Seeded(graphfake.Seed{Seed: 21, Messages: 40, Files: 6})
	defer g.Close()
	d := dropboxfake.Seeded(dropboxfake.Seed{Seed: 21, Files: 6})
	defer d.Close()
	folders := map[string]string{}   // message id -> its folder before the clean-up
	displayed := map[string]string{} // Dropbox path_lower -> path_display, as seeded
	for _, p := range d.Paths() {
		displayed[strings.ToLower(p)] = p
	}
	cases := []struct {
		name    providers.Name
		cfg     providers.Config
		kind    string
		trashed func(id string) bool
		back    func(id string) bool // the object is back as it was (name, place)
	}{
		{providers.VendorBMail, g.ProviderConfig(), "mail", func(id string) bool { return g.MessageFolder(id) == g.FolderID("deleteditems") },
			func(id string) bool { return g.MessageFolder(id) == folders[id] }},
		{providers.VendorBFiles, g.ProviderConfig(), "files", g.ItemDeleted, nil},
		{providers.VendorCFiles, d.ProviderConfig(), "files", func(id string) bool { return !d.Exists(id) }, func(id string) bool { return d.DisplayPath(id) == displayed[id] }},
	}
	for _, tc := range cases {
		t.Run(string(tc.name), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			reg, err := builtin.Registry(builtin.Options{Vendors: true})
			if err != nil {
				t.Fatal(err)
			}
			defer reg.Close()
			sv, err := svc.OpenMemory(ctx, &svc.Options{Providers: reg})
			if err != nil {
				t.Fatal(err)
			}
			defer sv.Close()
			src, err := sv.ConnectSource(ctx, svc.SourceSpec{Provider: tc.name, SourceRef: "default", Config: tc.cfg, Kind: tc.kind})
			if err != nil {
				t.Fatal(err)
			}
			run := func(p *svcv1.Plan, err error) *svcv1.Execution {
				t.Helper()
				if err == nil {
					p, err = sv.AuthorizePlan(ctx, p.PlanId, p.Hash, nil)
				}
				var x *svcv1.Execution
				if err == nil {
					x, err = sv.Execute(ctx, p.PlanId, nil)
				}
				if err == nil {
					x, err = sv.Wait(ctx, x.Id)
				}
				if err != nil || x.GetStatus() != svcv1.ExecutionStatus_EXECUTION_STATUS_COMPLETED {
					t.Fatalf("execution: %v (%v, errors %v)", err, x.GetStatus(), x.GetErrors())
				}
				return x
			}
			minAge := int64(30)
			p, err := sv.BuildPlan(ctx, svc.PlanRequest{SourceIDs: []string{src.Id}, Intent: svcv1.PlanIntent_PLAN_INTENT_SVC,
				Policy: &svcv1.SourcePolicy{MinAgeDays: &minAge}})
			if err != nil {
				t.Fatal(err)
			}
			var trash []string
			for _, o := range p.GetObjects() {
				for _, a := range o.GetActions() {
					if a == svcv1.PlanAction_PLAN_ACTION_TRASH {
						trash = append(trash, o.GetProviderObjectId())
					}
				}
			}
			if len(trash) == 0 {
				t.Fatalf("the clean-up plan trashes nothing (%d objects planned)", len(p.GetObjects()))
			}
			for _, id := range trash {
				folders[id] = g.MessageFolder(id)
			}
			x := run(p, nil)
			if x.GetBytesPreserved() == 0 {
				t.Errorf("nothing preserved")
			}
			for _, id := range trash {
				if !tc.trashed(id) {
					t.Errorf("%s is not in the vendor's trash after the clean-up", id)
				}
			}
			if _, err := sv.VerifyReceipt(ctx, x.GetReceiptId()); err != nil {
				t.Errorf("receipt: %v", err)
			}
			run(sv.UndoReceipt(ctx, x.GetReceiptId(), nil))
			for _, id := range trash {
				if tc.trashed(id) {
					t.Errorf("%s is not back in its place after the undo", id)
				}
				if tc.back != nil && !tc.back(id) {
					t.Errorf("%s is not back as it was after the undo", id)
				}
			}
			t.Logf("%s: %d objects planned, %d trashed and restored, %d bytes preserved", tc.name, len(p.GetObjects()), len(trash), x.GetBytesPreserved())
		})
	}
}

// TestMigrateIntoAMailboxThatRenders: mail migrated into an Outlook mailbox whose server keeps
// messages in a form of its own (the Graph fake serving back MIME of its own rendering, as
// Exchange does) completes: each message's vault copy is committed and verified, the
// destination holds the message under its Message-ID, and the manifest records the write as
// not verified byte for byte, with mime_rerendered among its lossiness.
func TestMigrateIntoAMailboxThatRenders(t *testing.T) {
	g := graphfake.Seeded(graphfake.Seed{Seed: 3, Messages: 4})
	defer g.Close()
	g.Rerenders(true)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	reg, err := builtin.Registry(builtin.Options{Vendors: true})
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Close()
	sv, err := svc.OpenMemory(ctx, &svc.Options{Providers: reg})
	if err != nil {
		t.Fatal(err)
	}
	defer sv.Close()
	src, err := sv.ConnectSource(ctx, svc.SourceSpec{Provider: providers.Simulated, SourceRef: "mail", Config: providers.Config{"objects": "6", "seed": "3"}, Kind: "mail"})
	if err != nil {
		t.Fatal(err)
	}
	dst, err := sv.AddDestination(ctx, svc.DestinationSpec{Provider: providers.VendorBMail, SourceRef: "default", Config: g.ProviderConfig(),
		Label: "Outlook", PathTemplate: "Migrated/{name}"})
	if err != nil {
		t.Fatal(err)
	}
	before := g.MessageCount()
	p, err := sv.BuildPlan(ctx, svc.PlanRequest{SourceIDs: []string{src.Id}, Intent: svcv1.PlanIntent_PLAN_INTENT_MIGRATE, Destination: dst})
	if err == nil {
		p, err = sv.AuthorizePlan(ctx, p.PlanId, p.Hash, nil)
	}
	var x *svcv1.Execution
	if err == nil {
		x, err = sv.Execute(ctx, p.PlanId, nil)
	}
	if err == nil {
		x, err = sv.Wait(ctx, x.Id)
	}
	if err != nil || x.GetStatus() != svcv1.ExecutionStatus_EXECUTION_STATUS_COMPLETED {
		t.Fatalf("migrate: %v (%v, errors %v)", err, x.GetStatus(), x.GetErrors())
	}
	moved, stored := 0, map[string]bool{}
	for _, o := range p.GetObjects() {
		m, err := sv.Manifest(ctx, o.GetAssetId())
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range m.GetDestinations() {
			moved++
			stored[d.GetObjectId()] = true
			if d.GetVerified() || !slices.Contains(d.GetLossiness(), "mime_rerendered") {
				t.Errorf("%s: destination recorded verified=%v, lossiness %v", o.GetAssetId(), d.GetVerified(), d.GetLossiness())
			}
		}
		if m.GetVault().GetSha256() == "" {
			t.Errorf("%s: no verified vault copy", o.GetAssetId())
		}
	}
	// Messages sharing a Message-ID (the simulated mailbox has duplicates) are one message
	// at the destination.
	if moved == 0 || g.MessageCount() != before+len(stored) {
		t.Fatalf("%d messages moved as %d, the mailbox went from %d to %d", moved, len(stored), before, g.MessageCount())
	}
}
