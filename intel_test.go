package svc_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"svc.dev/svc"
	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/providers"
	"svc.dev/svc/storage"
)

// billingMaildir writes a Maildir of a cloud provider's three receipts, the last with an
// overage (a metered_overage trap), and returns its path.
func billingMaildir(t *testing.T, n int) string {
	t.Helper()
	root := t.TempDir()
	for _, sub := range []string{"cur", "new", "tmp"} {
		os.MkdirAll(filepath.Join(root, sub), 0o700)
	}
	for i := range n {
		overage, total := "", "$20.00"
		if i == n-1 {
			overage, total = "Overage (115 GB over your 500 GB included): $11.50\n", "$31.50"
		}
		raw := fmt.Sprintf("From: Acme Cloud <billing@mail.acme.example>\nTo: ann@example.com\nSubject: Your receipt\nDate: Mon, %d Aug 2026 10:00:00 +0000\nMessage-ID: <r%d@acme.example>\n\nDeveloper plan (monthly): $20.00\n%sAmount charged: %s\n",
			3+i*7, i, overage, total)
		if err := os.WriteFile(filepath.Join(root, "cur", fmt.Sprintf("%d.m%d:2,S", 1000+i, i)), []byte(raw), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// A tenant's connected mail is scanned by the intel detectors through its provider: the
// meter is stored, read, listed, acted on; a rescan updates it in place and keeps the user's
// action; a scope limited to other sources does not see it.
func TestScanIntel(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	now := time.Date(2026, 8, 31, 0, 0, 0, 0, time.UTC)
	sv, err := svc.OpenMemory(ctx, &svc.Options{Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	defer sv.Close()
	src, err := sv.ConnectSource(ctx, svc.SourceSpec{Provider: providers.VendorDLocal, Config: providers.Config{"root": billingMaildir(t, 3)}, Kind: "mail", DisplayName: "Mail"})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := sv.ScanIntel(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Sources != 1 || rep.Messages != 3 || rep.Meters != 1 {
		t.Fatalf("scan: %+v", rep)
	}
	page, err := sv.ListMeters(ctx, "", 50)
	if err != nil || len(page.Items) != 1 {
		t.Fatalf("meters: %d, %v", len(page.Items), err)
	}
	m := page.Items[0]
	if m.GetService() != "Acme Cloud" || m.GetServiceDomain() != "acme.example" || m.GetTrapType() != svcv1.TrapType_TRAP_TYPE_METERED_OVERAGE ||
		m.GetCurrentPeriodCostCents() != 3150 || len(m.GetEvidence()) == 0 || m.GetEvidence()[0].GetSourceId() != src.Id {
		t.Fatalf("meter: %v", m)
	}
	if _, err := sv.ActOnMeter(ctx, m.GetId(), svcv1.MeterAction_METER_ACTION_EXPLAIN, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := sv.ActOnMeter(ctx, m.GetId(), svcv1.MeterAction_METER_ACTION_INTERVENE, nil); !errors.Is(err, svc.ErrInvalidState) {
		t.Fatalf("intervene: %v, want invalid_state (no mechanism)", err)
	}
	if rep, err = sv.ScanIntel(ctx); err != nil || rep.Messages != 0 || rep.Meters != 1 {
		t.Fatalf("rescan from the marker: %+v, %v", rep, err)
	}
	again, err := sv.Meter(ctx, m.GetId())
	if err != nil || again.GetAction() != svcv1.MeterAction_METER_ACTION_EXPLAIN || again.GetExplanation() == "" {
		t.Fatalf("after the rescan: %v, %v (the action and explanation must stay)", again, err)
	}
	if page, _ := sv.ListMeters(ctx, "", 50); len(page.Items) != 1 {
		t.Fatalf("the rescan duplicated the meter: %d", len(page.Items))
	}
	other := sv.As(svc.Access{Sources: []string{"src_01JZ0000000000000000000000"}})
	if _, err := other.Meter(ctx, m.GetId()); !errors.Is(err, svc.ErrForbidden) {
		t.Fatalf("a scope without the source: %v", err)
	}
}

// A remind decision fires once, when its time comes, and survives being stored (it is a field
// of the trial, not a timer).
func TestTrialReminderFiresOnce(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	now := time.Date(2026, 8, 31, 0, 0, 0, 0, time.UTC)
	sv, err := svc.OpenMemory(ctx, &svc.Options{Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	defer sv.Close()
	trials := sv.Store().(storage.Hosted).Resources().Trials()
	tr := &svcv1.Trial{Id: "trl_01JZ0000000000000000000000", Cadence: "monthly", Decision: svcv1.TrialDecision_TRIAL_DECISION_UNDECIDED,
		EvidenceLevel: svcv1.EvidenceLevel_EVIDENCE_LEVEL_DETECTED, WorthIt: &svcv1.WorthIt{Verdict: "unknown"}}
	if err := trials.Put(ctx, svc.DefaultTenant.String(), tr.Id, tr); err != nil {
		t.Fatal(err)
	}
	o, err := sv.DecideTrial(ctx, tr.Id, svcv1.TrialDecision_TRIAL_DECISION_REMIND, now.Add(48*time.Hour))
	if err != nil || o.Action != "remind" || o.Trial.GetRemindAt() == nil {
		t.Fatalf("decide: %+v, %v", o, err)
	}
	if n, err := sv.FireTrialReminders(ctx); err != nil || n != 0 {
		t.Fatalf("before its time: %d, %v", n, err)
	}
	now = now.Add(49 * time.Hour)
	if n, err := sv.FireTrialReminders(ctx); err != nil || n != 1 {
		t.Fatalf("when due: %d, %v", n, err)
	}
	if n, err := sv.FireTrialReminders(ctx); err != nil || n != 0 {
		t.Fatalf("again: %d, %v (a reminder fires once)", n, err)
	}
}
