package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// svc intel scan reads an mbox and a folder of .eml files, prints the spec's JSON with --json
// and a table without, and reports skipped messages on stderr.
func TestIntelScan(t *testing.T) {
	dir := t.TempDir()
	box := "From billing@acme.example Mon Sep  7 09:00:00 2026\n" +
		"From: Acme <billing@acme.example>\nSubject: Receipt\nDate: Mon, 7 Sep 2026 09:00:00 +0000\nMessage-ID: <a1@acme.example>\n\nPro plan (monthly)\nAmount paid: $20.00\n\n" +
		"From billing@acme.example Wed Oct  7 09:00:00 2026\n" +
		"From: Acme <billing@acme.example>\nSubject: Receipt\nDate: Wed, 7 Oct 2026 09:00:00 +0000\nMessage-ID: <a2@acme.example>\n\nPro plan (monthly)\nOverage (300 GB over 1,000 GB included): $15.00\nAmount paid: $35.00\n>From the team\n\n" +
		"From nobody Thu Oct  8 09:00:00 2026\n" +
		"Content-Type: text/plain; charset=x-unknown-cs\n\nQapla'\n"
	if err := os.WriteFile(filepath.Join(dir, "inbox.mbox"), []byte(box), 0o644); err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(filepath.Join(dir, "eml"), 0o755)
	os.WriteFile(filepath.Join(dir, "eml", "trial.eml"), []byte("From: Fitly <hello@fitly.example>\nSubject: Welcome\nDate: Mon, 2 Nov 2026 10:00:00 +0000\nMessage-ID: <f1@fitly.example>\n\nYour 14-day free trial has started. After your trial, you'll be charged $12.00/month.\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "eml", "empty.eml"), nil, 0o644)

	var out, errb bytes.Buffer
	if err := run(context.Background(), []string{"intel", "scan", filepath.Join(dir, "inbox.mbox"), filepath.Join(dir, "eml"), "--as-of", "2026-11-20T12:00:00Z", "--json"}, &out, &errb); err != nil {
		t.Fatal(err)
	}
	var res struct {
		AsOf   string           `json:"asOf"`
		Meters []map[string]any `json:"meters"`
		Trials []map[string]any `json:"trials"`
	}
	if err := json.Unmarshal(out.Bytes(), &res); err != nil {
		t.Fatalf("%v: %s", err, out.String())
	}
	if res.AsOf != "2026-11-20T12:00:00Z" || len(res.Meters) != 1 || len(res.Trials) != 1 {
		t.Fatalf("%s", out.String())
	}
	m := res.Meters[0]
	if m["trapType"] != "metered_overage" || m["currentPeriodCostCents"] != float64(3500) || m["serviceDomain"] != "acme.example" || m["billingPeriod"] != "monthly" {
		t.Errorf("meter %v", m)
	}
	for _, k := range []string{"id", "cadence", "startedAt", "endsAt", "priceAfterTrialCents", "status", "decision", "evidenceLevel", "evidence", "worthIt", "service", "serviceDomain"} {
		if _, ok := res.Trials[0][k]; !ok {
			t.Errorf("trial lacks %q: %v", k, res.Trials[0])
		}
	}
	if !strings.Contains(errb.String(), "skipped 2 of") || !strings.Contains(errb.String(), "empty") || !strings.Contains(errb.String(), "unknown charset") {
		t.Errorf("stderr %q", errb.String())
	}
	out.Reset()
	if err := run(context.Background(), []string{"intel", "scan", dir, "--as-of", "2026-11-20T12:00:00Z"}, &out, &errb); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "metered_overage") || !strings.Contains(out.String(), "Fitly") {
		t.Errorf("table %s", out.String())
	}
}
