package server_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"svc.dev/svc/platform"
	"svc.dev/svc/providers"
	"svc.dev/svc/server"
)

// The intel surface over REST: a scan job of the user's connected mail stores the meter it
// finds; the meter is listed, read and acted on through a connection; an intervention svc has
// no mechanism for is a 409; the trials list answers.
func TestIntelMetersOverREST(t *testing.T) {
	e := newEnv(t, func(c *server.Config) { c.IntelScanEvery = -1 })
	root := t.TempDir()
	for _, sub := range []string{"cur", "new", "tmp"} {
		os.MkdirAll(filepath.Join(root, sub), 0o700)
	}
	for i := range 3 {
		overage, total := "", "$20.00"
		if i == 2 {
			overage, total = "Overage (115 GB over your 500 GB included): $11.50\n", "$31.50"
		}
		raw := fmt.Sprintf("From: Acme Cloud <billing@mail.acme.example>\nTo: ann@example.com\nSubject: Your receipt\nDate: Mon, %d Aug 2026 10:00:00 +0000\nMessage-ID: <r%d@acme.example>\n\nDeveloper plan (monthly): $20.00\n%sAmount charged: %s\n",
			3+i*7, i, overage, total)
		os.WriteFile(filepath.Join(root, "cur", fmt.Sprintf("%d.m:2,S", i)), []byte(raw), 0o600)
	}
	ctx := context.Background()
	if _, err := e.srv.ConnectSource(ctx, e.userTestTenant(), server.SourceSpec{Provider: providers.VendorDLocal,
		Config: providers.Config{"root": root}, Kind: "mail", DisplayName: "Mail"}); err != nil {
		t.Fatal(err)
	}
	j, err := e.srv.ScanIntel(ctx, e.userTestTenant())
	if err != nil || j.GetStatus().String() != "JOB_STATUS_SUCCEEDED" {
		t.Fatalf("scan job: %v, %v", j, err)
	}
	cx := "?connection_id=" + e.creds.ConnectionID
	r := e.do("GET", "/v1/intel/meters"+cx, "", e.key()...)
	if r.status != 200 {
		t.Fatalf("meters: %d %s", r.status, r.body)
	}
	var acme map[string]any
	for _, m := range r.json(t)["data"].([]any) {
		if m := m.(map[string]any); m["serviceDomain"] == "acme.example" {
			acme = m
		}
	}
	if acme == nil || acme["trapType"] != "metered_overage" || acme["currentPeriodCostCents"] != float64(3150) {
		t.Fatalf("no Acme meter in %s", r.body)
	}
	id := acme["id"].(string)
	if r := e.do("GET", "/v1/intel/meters/"+id+cx, "", e.key()...); r.status != 200 || r.json(t)["id"] != id {
		t.Fatalf("meter: %d %s", r.status, r.body)
	}
	r = e.do("POST", "/v1/intel/meters/"+id+"/action"+cx, `{"action":"explain"}`, e.key()...)
	if r.status != 200 {
		t.Fatalf("explain: %d %s", r.status, r.body)
	}
	res := r.json(t)
	if m := res["meter"].(map[string]any); m["explanation"] == nil || m["explanation"] == "" || res["metered"] != false {
		t.Fatalf("explain: %s", r.body)
	}
	checkProblem(t, e.do("POST", "/v1/intel/meters/"+id+"/action"+cx, `{"action":"intervene"}`, e.key()...), 409, "invalid_state")
	if r := e.do("GET", "/v1/intel/trials"+cx, "", e.key()...); r.status != 200 {
		t.Fatalf("trials: %d %s", r.status, r.body)
	}
}

// A stop decision over REST answers the plan_id of a plan of intent unsubscribe: over the
// trial's message when the sender offers one-click unsubscribe, else a plan excluding it with
// unsupported_capability and what the user must do.
func TestTrialStopOverREST(t *testing.T) {
	e := newEnv(t, func(c *server.Config) { c.IntelScanEvery = -1 })
	root := t.TempDir()
	for _, sub := range []string{"cur", "new", "tmp"} {
		os.MkdirAll(filepath.Join(root, sub), 0o700)
	}
	os.WriteFile(filepath.Join(root, "cur", "1.fitly:2,S"), []byte("From: Fitly <hello@fitly.example>\nTo: ann@example.com\nSubject: Your trial\n"+
		"Date: Mon, 24 Aug 2026 10:00:00 +0000\nMessage-ID: <t1@fitly.example>\nList-Unsubscribe: <https://fitly.example/u/1>\n"+
		"List-Unsubscribe-Post: List-Unsubscribe=One-Click\n\nWelcome! Your 14-day free trial has started. After your trial, you'll be charged $12.00/month.\n"), 0o600)
	os.WriteFile(filepath.Join(root, "cur", "2.penly:2,S"), []byte("From: Penly <hello@penly.example>\nTo: ann@example.com\nSubject: Your trial\n"+
		"Date: Tue, 25 Aug 2026 10:00:00 +0000\nMessage-ID: <t2@penly.example>\n\nWelcome! Your 30-day free trial has started. After your trial, you'll be charged $8.00/month.\n"), 0o600)
	ctx := context.Background()
	if _, err := e.srv.ConnectSource(ctx, e.userTestTenant(), server.SourceSpec{Provider: providers.VendorDLocal,
		Config: providers.Config{"root": root}, Kind: "mail", DisplayName: "Mail"}); err != nil {
		t.Fatal(err)
	}
	if j, err := e.srv.ScanIntel(ctx, e.userTestTenant()); err != nil || j.GetStatus().String() != "JOB_STATUS_SUCCEEDED" {
		t.Fatalf("scan job: %v, %v", j, err)
	}
	cx := "?connection_id=" + e.creds.ConnectionID
	r := e.do("GET", "/v1/intel/trials"+cx, "", e.key()...)
	if r.status != 200 {
		t.Fatalf("trials: %d %s", r.status, r.body)
	}
	ids := map[string]string{}
	for _, tr := range r.json(t)["data"].([]any) {
		tr := tr.(map[string]any)
		ids[tr["service"].(string)] = tr["id"].(string)
	}
	if ids["Fitly"] == "" || ids["Penly"] == "" { // the test tenant's simulated mailbox has trials of its own
		t.Fatalf("trials: %s", r.body)
	}
	stop := func(service string) map[string]any {
		t.Helper()
		r := e.do("POST", "/v1/intel/trials/"+ids[service]+"/decision"+cx, `{"decision":"stop"}`, e.key()...)
		if r.status != 200 {
			t.Fatalf("stop %s: %d %s", service, r.status, r.body)
		}
		res := r.json(t)
		id, _ := res["plan_id"].(string)
		if res["trial"].(map[string]any)["decision"] != "stop" || id == "" {
			t.Fatalf("stop %s: %s", service, r.body)
		}
		p := e.do("GET", "/v1/plans/"+id+cx, "", e.key()...)
		if p.status != 200 {
			t.Fatalf("plan: %d %s", p.status, p.body)
		}
		plan := p.json(t)
		if plan["intent"] != "unsubscribe" {
			t.Fatalf("plan of %s: %s", service, p.body)
		}
		plan["action"] = res["action"]
		return plan
	}
	fitly := stop("Fitly")
	if objs := fitly["objects"].([]any); fitly["action"] != "unsubscribe" || len(objs) != 1 || objs[0].(map[string]any)["actions"].([]any)[0] != "unsubscribe" {
		t.Fatalf("Fitly's plan: %v", fitly)
	}
	penly := stop("Penly")
	ex, _ := penly["excluded"].([]any)
	if objs, _ := penly["objects"].([]any); penly["action"] != "instructions" || len(objs) != 0 || len(ex) != 1 ||
		ex[0].(map[string]any)["reason"] != "unsupported_capability" || !strings.Contains(ex[0].(map[string]any)["detail"].(string), "cancel the trial in your Penly account") {
		t.Fatalf("Penly's plan: %v", penly)
	}
	checkProblem(t, e.do("POST", "/v1/intel/trials/"+ids["Penly"]+"/decision"+cx, `{"decision":"remind"}`, e.key()...), 400, "validation_failed")
}

// A live tenant's scan that read mail is metered: one intelligence operation for each
// application whose live connection to the user grants monitor; a test tenant's scan, or one
// that read nothing new, is not.
func TestIntelScanMeteredInLiveMode(t *testing.T) {
	e := newEnv(t, func(c *server.Config) { c.IntelScanEvery = -1 })
	ctx := context.Background()
	live := platform.Tenant{Owner: e.creds.UserID, Mode: platform.ModeLive}
	if _, err := e.srv.Developers().Connect(ctx, e.creds.ApplicationID, e.creds.UserID, platform.ModeLive,
		platform.Grant{OperationClasses: []string{"discover", "monitor"}}); err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	for _, sub := range []string{"cur", "new", "tmp"} {
		os.MkdirAll(filepath.Join(root, sub), 0o700)
	}
	os.WriteFile(filepath.Join(root, "cur", "1.r:2,S"), []byte("From: Acme Cloud <billing@mail.acme.example>\nTo: ann@example.com\nSubject: Your receipt\n"+
		"Date: Mon, 3 Aug 2026 10:00:00 +0000\nMessage-ID: <r1@acme.example>\n\nDeveloper plan (monthly): $20.00\nAmount charged: $20.00\n"), 0o600)
	if _, err := e.srv.ConnectSource(ctx, live, server.SourceSpec{Provider: providers.VendorDLocal,
		Config: providers.Config{"root": root}, Kind: "mail", DisplayName: "Mail"}); err != nil {
		t.Fatal(err)
	}
	metered := func(tn platform.Tenant) float64 {
		t.Helper()
		j, err := e.srv.ScanIntel(ctx, tn)
		if err != nil || j.GetStatus().String() != "JOB_STATUS_SUCCEEDED" {
			t.Fatalf("scan job: %v, %v", j, err)
		}
		return j.GetResult().GetFields()["metered"].GetNumberValue()
	}
	if n := metered(live); n != 1 {
		t.Fatalf("live scan: %v operations metered, want 1", n)
	}
	if n := metered(live); n != 0 {
		t.Fatalf("a live rescan with nothing new: %v operations metered, want 0", n)
	}
	if n := metered(e.userTestTenant()); n != 0 {
		t.Fatalf("test scan: %v operations metered, want 0", n)
	}
}
