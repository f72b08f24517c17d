package svc_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
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

// trialMaildir writes a Maildir of two pending trials: Fitly's mail offers RFC 8058 one-click
// unsubscribe, Penly's only a mailto.
func trialMaildir(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	for _, sub := range []string{"cur", "new", "tmp"} {
		os.MkdirAll(filepath.Join(root, sub), 0o700)
	}
	msgs := map[string]string{
		"1.fitly:2,S": "From: Fitly <hello@fitly.example>\nTo: ann@example.com\nSubject: Your trial\nDate: Mon, 24 Aug 2026 10:00:00 +0000\nMessage-ID: <t1@fitly.example>\n" +
			"List-Unsubscribe: <https://fitly.example/u/1>, <mailto:u@fitly.example>\nList-Unsubscribe-Post: List-Unsubscribe=One-Click\n\n" +
			"Welcome! Your 14-day free trial has started. After your trial, you'll be charged $12.00/month.\n",
		"2.penly:2,S": "From: Penly <hello@penly.example>\nTo: ann@example.com\nSubject: Your trial\nDate: Tue, 25 Aug 2026 10:00:00 +0000\nMessage-ID: <t2@penly.example>\n" +
			"List-Unsubscribe: <mailto:u@penly.example>\n\n" +
			"Welcome! Your 30-day free trial has started. After your trial, you'll be charged $8.00/month.\n",
	}
	for name, raw := range msgs {
		if err := os.WriteFile(filepath.Join(root, "cur", name), []byte(raw), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// Stopping a trial makes a plan of intent unsubscribe: over the trial's message when its sender
// offers one-click unsubscribe (and the plan runs: the executor's one-click POST, simulated in
// a test tenant), else one that holds nothing and excludes the message with
// unsupported_capability, saying what the user must do.
func TestDecideTrialStopPlans(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	now := time.Date(2026, 8, 31, 0, 0, 0, 0, time.UTC)
	var posted []string
	sv, err := svc.OpenMemory(ctx, &svc.Options{Now: func() time.Time { return now },
		Unsubscribe: func(_ context.Context, url string) error { posted = append(posted, url); return nil }})
	if err != nil {
		t.Fatal(err)
	}
	defer sv.Close()
	src, err := sv.ConnectSource(ctx, svc.SourceSpec{Provider: providers.VendorDLocal, Config: providers.Config{"root": trialMaildir(t)}, Kind: "mail", DisplayName: "Mail"})
	if err != nil {
		t.Fatal(err)
	}
	if rep, err := sv.ScanIntel(ctx); err != nil || rep.Trials != 2 {
		t.Fatalf("scan: %+v, %v", rep, err)
	}
	page, err := sv.ListTrials(ctx, "", 50)
	if err != nil || len(page.Items) != 2 {
		t.Fatalf("trials: %d, %v", len(page.Items), err)
	}
	byService := map[string]*svcv1.Trial{}
	for _, tr := range page.Items {
		byService[tr.GetService()] = tr
	}

	o, err := sv.DecideTrial(ctx, byService["Fitly"].GetId(), svcv1.TrialDecision_TRIAL_DECISION_STOP, time.Time{})
	if err != nil || o.Action != "unsubscribe" || o.PlanID == "" || o.Trial.GetDecision() != svcv1.TrialDecision_TRIAL_DECISION_STOP {
		t.Fatalf("stop Fitly: %+v, %v", o, err)
	}
	p, err := sv.Plan(ctx, o.PlanID)
	if err != nil {
		t.Fatal(err)
	}
	if p.GetIntent() != svcv1.PlanIntent_PLAN_INTENT_UNSUBSCRIBE || p.GetState() != svcv1.PlanState_PLAN_STATE_VALIDATED || len(p.GetObjects()) != 1 ||
		len(p.GetExcluded()) != 0 || p.GetObjects()[0].GetSourceId() != src.Id || p.GetObjects()[0].GetActions()[0] != svcv1.PlanAction_PLAN_ACTION_UNSUBSCRIBE {
		t.Fatalf("Fitly's plan: %v", p)
	}
	if !strings.Contains(o.Instructions, "does not stop its billing") {
		t.Fatalf("instructions: %q", o.Instructions)
	}
	p, err = sv.AuthorizePlan(ctx, p.GetPlanId(), p.GetHash(), nil)
	if err != nil {
		t.Fatal(err)
	}
	exe, err := sv.Execute(ctx, p.GetPlanId(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if exe, err = sv.Wait(ctx, exe.GetId()); err != nil || exe.GetStatus() != svcv1.ExecutionStatus_EXECUTION_STATUS_COMPLETED {
		t.Fatalf("execution: %v, %v", exe, err)
	}
	if len(posted) != 1 || posted[0] != "https://fitly.example/u/1" {
		t.Fatalf("one-click POSTs: %v", posted)
	}

	o, err = sv.DecideTrial(ctx, byService["Penly"].GetId(), svcv1.TrialDecision_TRIAL_DECISION_STOP, time.Time{})
	if err != nil || o.Action != "instructions" || o.PlanID == "" {
		t.Fatalf("stop Penly: %+v, %v", o, err)
	}
	p, err = sv.Plan(ctx, o.PlanID)
	if err != nil {
		t.Fatal(err)
	}
	if p.GetIntent() != svcv1.PlanIntent_PLAN_INTENT_UNSUBSCRIBE || len(p.GetObjects()) != 0 || len(p.GetExcluded()) != 1 ||
		p.GetExcluded()[0].GetReason() != svcv1.ExclusionReason_EXCLUSION_REASON_UNSUPPORTED_CAPABILITY ||
		!strings.Contains(p.GetExcluded()[0].GetDetail(), "cancel the trial in your Penly account at penly.example before September 24, 2026") {
		t.Fatalf("Penly's plan: %v", p)
	}
	if o.Instructions != p.GetExcluded()[0].GetDetail() {
		t.Fatalf("instructions %q, plan %q", o.Instructions, p.GetExcluded()[0].GetDetail())
	}
	// keep makes no plan.
	if o, err := sv.DecideTrial(ctx, byService["Penly"].GetId(), svcv1.TrialDecision_TRIAL_DECISION_KEEP, time.Time{}); err != nil || o.PlanID != "" || o.Action != "none" {
		t.Fatalf("keep: %+v, %v", o, err)
	}
}
