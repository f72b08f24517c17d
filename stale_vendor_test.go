package svc_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"svc.dev/svc"
	svcv1 "svc.dev/svc/gen/svc/v1"
	drivefake "svc.dev/svc/internal/vendorfake/drive"
	dropboxfake "svc.dev/svc/internal/vendorfake/dropbox"
	gmailfake "svc.dev/svc/internal/vendorfake/gmail"
	graphfake "svc.dev/svc/internal/vendorfake/graph"
	"svc.dev/svc/providers"
	"svc.dev/svc/providers/builtin"
)

// TestPlanStaleOnlyWhenItsObjectsMove holds a plan over a live vendor account
// to its own objects: new mail or a new file arriving after the plan (the
// account's revision marker moves) leaves it authorizable, while a change
// to one of the plan's objects makes it stale (409 plan_stale).
func TestPlanStaleOnlyWhenItsObjectsMove(t *testing.T) {
	gm := gmailfake.Start(gmailfake.Options{Messages: 12})
	defer gm.Close()
	dr := drivefake.Start(drivefake.Options{Files: 8, Seed: 3})
	defer dr.Close()
	g := graphfake.Seeded(graphfake.Seed{Seed: 5, Messages: 12, Files: 6})
	defer g.Close()
	db := dropboxfake.Seeded(dropboxfake.Seed{Seed: 5, Files: 6})
	defer db.Close()
	newMail := []byte("From: a@example.com\r\nTo: me@example.com\r\nSubject: arrived later\r\nDate: Thu, 26 Nov 2026 18:00:00 +0000\r\nMessage-ID: <late@example.com>\r\n\r\nhello\r\n")
	cases := []struct {
		name   providers.Name
		ref    string
		cfg    map[string]string
		kind   string
		arrive func()          // something new appears in the account
		touch  func(id string) // one of the plan's objects changes
	}{
		{providers.VendorAMail, "me", gm.Config(), "mail",
			func() { gm.Insert(newMail, "INBOX", "UNREAD") },
			func(id string) {
				if slices.Contains(gm.Labels(id), "STARRED") {
					gm.Relabel(id, nil, []string{"STARRED"})
				} else {
					gm.Relabel(id, []string{"STARRED"}, nil)
				}
			}},
		{providers.VendorAFiles, "root", dr.Config(), "files",
			func() { dr.Add("later.txt", "text/plain", "root", []byte("later")) },
			func(id string) { dr.Rewrite(id, []byte("rewritten")) }},
		{providers.VendorBMail, "default", g.ProviderConfig(), "mail",
			func() { g.AddMessage(g.FolderID("inbox"), newMail, time.Now()) },
			func(id string) { g.EditMessage(id) }},
		{providers.VendorBFiles, "default", g.ProviderConfig(), "files",
			func() { g.AddItem("/", "later.txt", []byte("later"), time.Now()) },
			func(id string) { g.UpdateItem(id, []byte("rewritten")) }},
		{providers.VendorCFiles, "default", db.ProviderConfig(), "files",
			func() { db.AddFile("/later.txt", []byte("later"), time.Now()) },
			func(id string) { db.AddFile(db.DisplayPath(id), []byte("rewritten"), time.Now()) }},
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
			src, err := sv.ConnectSource(ctx, svc.SourceSpec{Provider: tc.name, SourceRef: tc.ref, Config: tc.cfg, Kind: tc.kind})
			if err != nil {
				t.Fatal(err)
			}
			build := func() *svcv1.Plan {
				t.Helper()
				p, err := sv.BuildPlan(ctx, svc.PlanRequest{SourceIDs: []string{src.Id}, Intent: svcv1.PlanIntent_PLAN_INTENT_RESCUE})
				if err != nil {
					t.Fatal(err)
				}
				if len(p.GetObjects()) == 0 {
					t.Fatal("the plan has no objects")
				}
				return p
			}
			p := build()
			tc.arrive()
			if _, err := sv.AuthorizePlan(ctx, p.PlanId, p.Hash, nil); err != nil {
				t.Fatalf("a plan after something new arrived: %v, want it authorized", err)
			}
			p = build()
			tc.touch(p.GetObjects()[0].GetProviderObjectId())
			if _, err := sv.AuthorizePlan(ctx, p.PlanId, p.Hash, nil); !errors.Is(err, svc.ErrPlanStale) {
				t.Fatalf("a plan one of whose objects changed: %v, want plan_stale", err)
			}
		})
	}
}
