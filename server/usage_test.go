package server_test

import (
	"context"
	"testing"
	"time"

	"svc.dev/svc/platform"
	"svc.dev/svc/providers"
	"svc.dev/svc/server"

	"svc.dev/svc/storage/bolt"
)

func usageLine(t *testing.T, u map[string]any, meter string) float64 {
	t.Helper()
	for _, l := range u["lines"].([]any) {
		if l := l.(map[string]any); l["meter"] == meter {
			return l["quantity"].(float64)
		}
	}
	t.Fatalf("no %s line in %v", meter, u)
	return 0
}

func TestUsageMeteringAndCeiling(t *testing.T) {
	e := newPlanEnv(t, 5)
	ctx := context.Background()
	live := platform.Tenant{Owner: e.creds.UserID, Mode: platform.ModeLive}
	src, err := e.srv.ConnectSource(ctx, live, server.SourceSpec{Provider: providers.VendorAMail, SourceRef: "live-inbox", Kind: "mail"})
	if err != nil {
		t.Fatal(err)
	}
	conn, err := e.srv.Developers().Connect(ctx, e.creds.ApplicationID, e.creds.UserID, platform.ModeLive, platform.Grant{OperationClasses: platform.OperationClasses})
	if err != nil {
		t.Fatal(err)
	}
	lcx := "?connection_id=" + conn.ID

	// Test mode is never metered; live calls are, each once.
	for range 3 {
		e.do("GET", e.plansPath(), "", e.key()...)
	}
	for range 4 {
		e.do("GET", "/v1/plans"+lcx, "", e.liveKey()...)
	}
	r := e.do("POST", "/v1/plans"+lcx, `{"intent":"rescue","source_ids":["`+src.Id+`"]}`, e.liveKey()...)
	p := r.json(t)
	meter, _ := p["meter"].(map[string]any)
	if r.status != 201 || meter == nil || meter["rateCardVersion"] != "developer-2026-09" {
		t.Fatalf("live plan without a meter: %d %s", r.status, r.body)
	}
	u := e.do("GET", "/v1/usage", "", e.liveKey()...).json(t)
	if got := usageLine(t, u, "api_operations"); got != 5 {
		t.Fatalf("api_operations %v, want 5 (4 lists and the plan)", got)
	}
	if usageLine(t, u, "plans") != 1 || usageLine(t, u, "connected_end_users") != 1 || u["total_cents"] != float64(1900+25) {
		t.Fatalf("usage: %v", u)
	}
	// The application's view and the owner's view agree; test keys see the live bill too (it is
	// the organization's), and no test-mode usage is in it.
	app := e.do("GET", "/v1/developer/applications/"+e.creds.ApplicationID+"/usage", "", e.session()...).json(t)
	if usageLine(t, app, "plans") != 1 {
		t.Fatalf("application usage %v", app)
	}
	owner := e.do("GET", "/v1/usage?org_id="+e.creds.OrgID, "", e.session()...).json(t)
	if usageLine(t, owner, "api_operations") < 5 {
		t.Fatalf("owner usage %v", owner)
	}
	checkProblem(t, e.do("GET", "/v1/usage", "", e.session()...), 400, "validation_failed")

	// Lowering the ceiling below this month's spend makes live plans need a ceiling increase;
	// raising it lets the same plan be authorized.
	if r := e.do("PUT", "/v1/authorization/ceiling", `{"ceiling_cents":1000}`, e.liveKey()...); r.status != 200 || r.json(t)["ceiling_cents"] != float64(1000) {
		t.Fatalf("set ceiling: %d %s", r.status, r.body)
	}
	r = e.do("POST", "/v1/plans"+lcx, `{"intent":"rescue","source_ids":["`+src.Id+`"]}`, e.liveKey()...)
	p = r.json(t)
	pol := p["policy"].(map[string]any)
	if pol["decision"] != "step_up_required" || pol["requiredApprovals"].([]any)[0] != "ceiling_increase" {
		t.Fatalf("over the ceiling: %v", pol)
	}
	authorize := `{"plan_hash":"` + p["hash"].(string) + `"}`
	prob := checkProblem(t, e.do("POST", "/v1/plans/"+p["planId"].(string)+"/authorize"+lcx, authorize, e.liveKey()...), 403, "step_up_required")
	if prob["required_approvals"].([]any)[0] != "ceiling_increase" {
		t.Fatalf("problem %v", prob)
	}
	e.do("PUT", "/v1/authorization/ceiling", `{"ceiling_cents":50000}`, e.liveKey()...)
	if r := e.do("POST", "/v1/plans/"+p["planId"].(string)+"/authorize"+lcx, authorize, e.liveKey()...); r.status != 200 {
		t.Fatalf("after raising the ceiling: %d %s", r.status, r.body)
	}
}

// Ceiling events: a change, then 80% of it, then reaching it, each once a month.
func TestCeilingEvents(t *testing.T) {
	e := newEnv(t)
	types := func() map[string]int {
		out := map[string]int{}
		r := e.do("GET", "/v1/events?types=svc.usage.*", "", e.liveKey()...)
		for _, ev := range r.json(t)["data"].([]any) {
			out[ev.(map[string]any)["type"].(string)]++
		}
		return out
	}
	waitFor := func(typ string) {
		t.Helper()
		for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
			e.do("GET", "/v1/usage", "", e.liveKey()...) // a metered call; the meter flushes every 250 ms
			if types()[typ] > 0 {
				return
			}
		}
		t.Fatalf("no %s event: %v", typ, types())
	}
	if r := e.do("PUT", "/v1/authorization/ceiling", `{"ceiling_cents":2000}`, e.liveKey()...); r.status != 200 {
		t.Fatalf("set ceiling: %d %s", r.status, r.body)
	}
	if types()["svc.usage.ceiling_changed"] != 1 {
		t.Fatalf("events after setting the ceiling: %v", types())
	}
	waitFor("svc.usage.ceiling_approaching") // the 19 USD base is 95% of 20 USD
	if got := types(); got["svc.usage.ceiling_reached"] != 0 {
		t.Fatalf("reached too early: %v", got)
	}
	month := platform.Month(e.clock.Now())
	if err := server.DBOf(e.srv).AddUsage(context.Background(), []bolt.UsageDelta{{Scope: "org:" + e.creds.OrgID, Month: month,
		Meter: platform.MeterAPIOperations, Quantity: 40_000}}); err != nil {
		t.Fatal(err)
	}
	waitFor("svc.usage.ceiling_reached")
	time.Sleep(600 * time.Millisecond)
	e.do("GET", "/v1/usage", "", e.liveKey()...)
	time.Sleep(600 * time.Millisecond)
	if got := types(); got["svc.usage.ceiling_approaching"] != 1 || got["svc.usage.ceiling_reached"] != 1 {
		t.Fatalf("each event once a month: %v", got)
	}
}
