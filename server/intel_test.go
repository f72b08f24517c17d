package server_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

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
