package svc_test

import (
	"context"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"svc.dev/svc"
	"svc.dev/svc/creator"
	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/providers"
)

// Creator revenue through the layer: a statement source, an upload (a bad one refused and
// changing nothing), a reconciliation, its items and anomalies, dismiss and reopen; the
// credentials of a source are never returned; a scope limited to some sources reaches none.
func TestCreatorRevenue(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	now := time.Date(2026, 8, 20, 0, 0, 0, 0, time.UTC)
	sv, err := svc.OpenMemory(ctx, &svc.Options{Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	defer sv.Close()
	src, err := sv.CreateCreatorSource(ctx, creator.CreateRequest{Kind: creator.KindStatement, Label: "Patreonish"})
	if err != nil {
		t.Fatal(err)
	}
	csv, err := os.ReadFile("creator/testdata/handwritten/statements/patreonish.csv")
	if err != nil {
		t.Fatal(err)
	}
	if err := sv.UploadStatement(ctx, src.ID, "patreonish.csv", csv); err != nil {
		t.Fatal(err)
	}
	bad := strings.Replace(string(csv), "5.120,40", "-5.120,40", 1)
	if err := sv.UploadStatement(ctx, src.ID, "patreonish.csv", []byte(bad)); !errors.Is(err, svc.ErrInvalidArgument) {
		t.Fatalf("a negative gross: %v, want a refusal", err)
	}
	rep, err := sv.ReconcileCreator(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	items, err := sv.RevenueItems(ctx, creator.ItemFilter{})
	if err != nil || len(items) < 6 || len(rep.Result.Items) != len(items) {
		t.Fatalf("items: %d, %v (report %d)", len(items), err, len(rep.Result.Items))
	}
	jan := ""
	for _, it := range items {
		if it.GetPeriod().GetLabel() == "2026-01" {
			jan = it.GetId()
			if it.GetGrossCents() != 512040 || it.GetCreatorSourceId() != src.ID {
				t.Fatalf("January: %v (the good upload stands, the bad one changed nothing)", it)
			}
		}
	}
	if _, err := sv.RevenueItem(ctx, jan); err != nil {
		t.Fatal(err)
	}
	as, err := sv.Anomalies(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(as) > 0 {
		a, err := sv.DismissAnomaly(ctx, as[0].GetId())
		if err != nil || a.GetStatus() != svcv1.AnomalyStatus_ANOMALY_STATUS_DISMISSED {
			t.Fatalf("dismiss: %v, %v", a, err)
		}
		if a, err = sv.ReopenAnomaly(ctx, a.GetId()); err != nil || a.GetStatus() != svcv1.AnomalyStatus_ANOMALY_STATUS_OPEN {
			t.Fatalf("reopen: %v, %v", a, err)
		}
	}
	limited := sv.As(svc.Access{Sources: []string{"src_01JZ0000000000000000000000"}})
	if _, err := limited.CreatorSources(ctx); !errors.Is(err, svc.ErrForbidden) {
		t.Fatalf("a limited scope: %v", err)
	}
	if err := sv.DeleteCreatorSource(ctx, src.ID); err != nil {
		t.Fatal(err)
	}
	if items, _ := sv.RevenueItems(ctx, creator.ItemFilter{}); len(items) != 0 {
		t.Fatalf("%d items left after the source was deleted", len(items))
	}
}

// The tenants a host reconciles on a schedule are those with revenue sources: a tenant is
// listed once it has one, and dropped once it has none left.
func TestCreatorTenants(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	sv, err := svc.OpenMemory(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer sv.Close()
	if ts, err := sv.CreatorTenants(ctx); err != nil || len(ts) != 0 {
		t.Fatalf("before any source: %v, %v", ts, err)
	}
	src, err := sv.CreateCreatorSource(ctx, creator.CreateRequest{Kind: creator.KindStatement, Label: "Patreonish"})
	if err != nil {
		t.Fatal(err)
	}
	other := svc.Tenant{Owner: "usr_01JZ0000000000000000000001", Mode: "test"}
	if _, err := sv.Tenant(other).CreateCreatorSource(ctx, creator.CreateRequest{Kind: creator.KindStatement, Label: "Other"}); err != nil {
		t.Fatal(err)
	}
	ts, err := sv.CreatorTenants(ctx)
	if err != nil || len(ts) != 2 || !slices.Contains(ts, svc.DefaultTenant) || !slices.Contains(ts, other) {
		t.Fatalf("with sources: %v, %v", ts, err)
	}
	if err := sv.DeleteCreatorSource(ctx, src.ID); err != nil {
		t.Fatal(err)
	}
	if ts, err := sv.CreatorTenants(ctx); err != nil || len(ts) != 1 || ts[0] != other {
		t.Fatalf("after the default tenant's source went: %v, %v", ts, err)
	}
}

// The simulated mailbox (test mode, the dev seed) has real billing, trial and payout mail: a
// scan finds meters of several trap types and pending trials (one whose sender offers
// one-click unsubscribe), and an inbox revenue source over it (ConnectCreatorInbox, what the
// dev seed calls) reconciles the payouts and opens a late payout and a missing payout period.
func TestSimulatedMailboxBillingAndPayouts(t *testing.T) {
	if testing.Short() {
		t.Skip("reads a simulated mailbox of 1,000 messages twice")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	now := time.Date(2026, 11, 5, 0, 0, 0, 0, time.UTC)
	sv, err := svc.OpenMemory(ctx, &svc.Options{Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	defer sv.Close()
	src, err := sv.ConnectSource(ctx, svc.SourceSpec{Provider: providers.Simulated, SourceRef: "mail/dev", Kind: "mail", DisplayName: "Simulated mailbox",
		Config: providers.Config{"seed": "42", "objects": "1000"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sv.ScanIntel(ctx); err != nil {
		t.Fatal(err)
	}
	page, err := sv.ListMeters(ctx, "", 200)
	if err != nil {
		t.Fatal(err)
	}
	traps := map[string]string{}
	for _, m := range page.Items {
		traps[m.GetServiceDomain()] = m.GetTrapType().String()
	}
	for domain, trap := range map[string]string{"cloudhost.example": "TRAP_TYPE_METERED_OVERAGE", "viewly.example": "TRAP_TYPE_RENEWAL_JUMP",
		"musicbox.example": "TRAP_TYPE_TEASER_EXPIRATION", "saasdesk.example": "TRAP_TYPE_SEAT_GROWTH", "freshbox.example": "TRAP_TYPE_SURCHARGE"} {
		if traps[domain] != trap {
			t.Errorf("%s: trap %q, want %s (meters: %v)", domain, traps[domain], trap, traps)
		}
	}
	trials, err := sv.ListTrials(ctx, "", 200)
	if err != nil {
		t.Fatal(err)
	}
	pending := map[string]string{}
	for _, tr := range trials.Items {
		pending[tr.GetServiceDomain()] = tr.GetStatus()
	}
	if pending["fitly.example"] != "pending" || pending["penly.example"] != "pending" {
		t.Errorf("trials: %v, want Fitly's and Penly's pending", pending)
	}

	inbox, err := sv.ConnectCreatorInbox(ctx, src.Id, "Simulated mailbox payouts")
	if err != nil {
		t.Fatal(err)
	}
	if again, err := sv.ConnectCreatorInbox(ctx, src.Id, "again"); err != nil || again.ID != inbox.ID {
		t.Fatalf("connecting the same inbox again: %v, %v", again, err)
	}
	rep, err := sv.ReconcileCreator(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Problems) != 0 {
		t.Errorf("problems: %v", rep.Problems)
	}
	items, err := sv.RevenueItems(ctx, creator.ItemFilter{CreatorSourceID: inbox.ID})
	if err != nil {
		t.Fatal(err)
	}
	reconciled := 0
	for _, it := range items {
		if it.GetState() == svcv1.RevenueItemState_REVENUE_ITEM_STATE_RECONCILED {
			reconciled++
		}
	}
	if reconciled < 3 {
		t.Errorf("%d of %d items reconciled, want 3 at least", reconciled, len(items))
	}
	as, err := sv.Anomalies(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[svcv1.AnomalyKind]int{}
	for _, a := range as {
		kinds[a.GetKind()]++
	}
	if kinds[svcv1.AnomalyKind_ANOMALY_KIND_LATE_PAYOUT] != 1 || kinds[svcv1.AnomalyKind_ANOMALY_KIND_MISSING_PAYOUT_PERIOD] != 1 ||
		kinds[svcv1.AnomalyKind_ANOMALY_KIND_SPONSOR_OVERDUE] != 1 || len(as) != 3 {
		t.Errorf("anomalies: %v, want one late payout, one missing payout period and one overdue sponsor invoice (the mailbox's noise makes none)", kinds)
	}
}
