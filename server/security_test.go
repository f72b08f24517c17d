package server_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"svc.dev/svc/platform"
	"svc.dev/svc/server"
)

// Regression tests of the adversarial probe of issue 11: each failed on the code before the fix.

// High 1: a connection granted one folder can neither plan an export into, nor restore into,
// nor execute a plan writing into, a destination made from another folder.
func TestGrantCannotWriteIntoADestinationOutsideIt(t *testing.T) {
	e, _, srcA, _ := localEnv(t, 3)
	ctx := context.Background()
	dstB, dirB := destination(t, e, "Folder B", "{path}")
	runLocal(t, e, srcA) // vault copies of folder A
	limited, err := e.srv.Developers().Connect(ctx, e.creds.ApplicationID, e.creds.UserID, platform.ModeTest,
		platform.Grant{OperationClasses: platform.OperationClasses, SourceIDs: []string{srcA}})
	if err != nil {
		t.Fatal(err)
	}
	cx := "?connection_id=" + limited.ID
	checkProblem(t, e.do("GET", "/v1/destinations/"+dstB+cx, "", e.key()...), 403, "forbidden")
	checkProblem(t, e.do("POST", "/v1/plans"+cx, `{"intent":"export","source_ids":["`+srcA+`"],"destination_id":"`+dstB+`"}`, e.key()...), 403, "forbidden")

	var list struct {
		Data []map[string]any `json:"data"`
	}
	json.Unmarshal(e.do("GET", "/v1/vault/objects"+cx, "", e.key()...).body, &list)
	if len(list.Data) == 0 {
		t.Fatal("no vault objects of folder A")
	}
	vo := list.Data[0]["id"].(string)
	checkProblem(t, e.do("POST", "/v1/vault/objects/"+vo+"/restore"+cx, `{"destination_id":"`+dstB+`"}`, e.key()...), 403, "forbidden")

	// A plan the full connection made and authorized cannot be executed through the limited one.
	full := "?connection_id=" + e.creds.ConnectionID
	r := e.do("POST", "/v1/vault/objects/"+vo+"/restore"+full, `{"destination_id":"`+dstB+`","path":"r.txt"}`, e.key()...)
	if r.status != 201 {
		t.Fatalf("restore plan with the full grant: %d %s", r.status, r.body)
	}
	p := r.json(t)
	if r := e.do("POST", "/v1/plans/"+p["planId"].(string)+"/authorize"+full, `{"plan_hash":"`+p["hash"].(string)+`"}`, e.key()...); r.status != 200 {
		t.Fatalf("authorize: %d %s", r.status, r.body)
	}
	checkProblem(t, e.do("POST", "/v1/plans/"+p["planId"].(string)+"/execute"+cx, "", e.key()...), 403, "forbidden")
	time.Sleep(100 * time.Millisecond)
	if entries, _ := os.ReadDir(dirB); len(entries) != 0 {
		t.Fatalf("folder B holds %d entries written through a grant of folder A", len(entries))
	}
}

// High 2: vault content is an inert download: never rendered or scripted on the API origin.
func TestVaultContentIsServedInert(t *testing.T) {
	e, root, src, _ := localEnv(t, 1)
	page := filepath.Join(root, "page.html")
	os.WriteFile(page, []byte("<script>fetch('/v1/plans',{method:'POST'})</script>"), 0o600)
	old := time.Now().AddDate(-2, 0, 0)
	os.Chtimes(page, old, old)
	runLocal(t, e, src)
	var list struct {
		Data []map[string]any `json:"data"`
	}
	cx := "?connection_id=" + e.creds.ConnectionID
	json.Unmarshal(e.do("GET", "/v1/vault/objects"+cx, "", e.key()...).body, &list)
	var vo map[string]any
	for _, o := range list.Data {
		if o["name"] == "page.html" {
			vo = o
		}
	}
	if vo == nil {
		t.Fatalf("page.html was not vaulted: %v", list.Data)
	}
	for _, hdr := range [][]string{e.key(), e.session()} {
		r := e.do("GET", "/v1/vault/objects/"+vo["id"].(string)+"/content", "", hdr...)
		if r.status != 200 || !strings.Contains(string(r.body), "<script>") {
			t.Fatalf("content: %d %s", r.status, r.body)
		}
		h := r.header
		if ct := h.Get("Content-Type"); ct != "application/octet-stream" {
			t.Errorf("Content-Type %q: a browser may render it", ct)
		}
		if d := h.Get("Content-Disposition"); !strings.HasPrefix(d, "attachment;") || !strings.Contains(d, "page.html") {
			t.Errorf("Content-Disposition %q", d)
		}
		if h.Get("X-Content-Type-Options") != "nosniff" || !strings.Contains(h.Get("Content-Security-Policy"), "sandbox") ||
			!strings.Contains(h.Get("Content-Security-Policy"), "default-src 'none'") {
			t.Errorf("nosniff %q, CSP %q", h.Get("X-Content-Type-Options"), h.Get("Content-Security-Policy"))
		}
		if h.Get("Svc-Content-Type") != vo["mime_type"] && vo["mime_type"] != nil {
			t.Errorf("Svc-Content-Type %q, mime_type %v", h.Get("Svc-Content-Type"), vo["mime_type"])
		}
	}
}

// Medium 3: a test key touches only test-mode state: not the live ceiling, live webhooks,
// live usage or live audit entries.
func TestTestKeyCannotTouchLiveState(t *testing.T) {
	e := newEnv(t, func(c *server.Config) { c.Dev = true })
	rcv := newReceiver(t)
	checkProblem(t, e.do("PUT", "/v1/authorization/ceiling", `{"ceiling_cents":100000000}`, e.key()...), 403, "forbidden")
	checkProblem(t, e.do("GET", "/v1/usage", "", e.key()...), 403, "forbidden")
	checkProblem(t, e.do("GET", "/v1/developer/applications/"+e.creds.ApplicationID+"/usage", "", e.key()...), 403, "forbidden")
	u := e.do("GET", "/v1/usage", "", e.liveKey()...)
	if u.status != 200 || u.json(t)["ceiling_cents"] != float64(server.DefaultCeilingCents) {
		t.Fatalf("live usage after the test key's attempt: %d %s", u.status, u.body)
	}
	// A live key without billable_execute cannot change it either; the owner's session can.
	_, narrowLive, err := e.srv.Developers().CreateKey(context.Background(), e.creds.ApplicationID, platform.ModeLive, []string{"discover"})
	if err != nil {
		t.Fatal(err)
	}
	checkProblem(t, e.do("PUT", "/v1/authorization/ceiling", `{"ceiling_cents":20000}`, "Authorization", "Bearer "+narrowLive), 403, "forbidden")
	if r := e.do("PUT", "/v1/authorization/ceiling", `{"ceiling_cents":20000,"org_id":"`+e.creds.OrgID+`"}`, e.session()...); r.status != 200 {
		t.Fatalf("the owner's session: %d %s", r.status, r.body)
	}

	checkProblem(t, e.do("POST", "/v1/webhooks", `{"url":"`+rcv.ts.URL+`","event_types":["*"],"mode":"live"}`, e.key()...), 403, "forbidden")
	r := e.do("POST", "/v1/webhooks", `{"url":"`+rcv.ts.URL+`","event_types":["*"],"mode":"live"}`, e.liveKey()...)
	if r.status != 201 {
		t.Fatalf("live webhook: %d %s", r.status, r.body)
	}
	live := r.json(t)["id"].(string)
	checkProblem(t, e.do("GET", "/v1/webhooks/"+live, "", e.key()...), 404, "not_found")
	checkProblem(t, e.do("PATCH", "/v1/webhooks/"+live, `{"url":"https://attacker.example/"}`, e.key()...), 404, "not_found")
	checkProblem(t, e.do("POST", "/v1/webhooks/"+live+"/rotate", "", e.key()...), 404, "not_found")
	checkProblem(t, e.do("GET", "/v1/webhooks/"+live+"/deliveries", "", e.key()...), 404, "not_found")
	checkProblem(t, e.do("POST", "/v1/webhooks/"+live+"/test", "", e.key()...), 404, "not_found")
	checkProblem(t, e.do("DELETE", "/v1/webhooks/"+live, "", e.key()...), 404, "not_found")
	if l := e.do("GET", "/v1/webhooks", "", e.key()...); strings.Contains(string(l.body), live) {
		t.Fatalf("the test key lists the live webhook: %s", l.body)
	}
	if r := e.do("GET", "/v1/webhooks/"+live, "", e.liveKey()...); r.status != 200 || r.json(t)["url"] != rcv.ts.URL {
		t.Fatalf("live webhook after the test key's attempts: %d %s", r.status, r.body)
	}

	// The audit log read with the test key holds only test-mode calls.
	e.do("GET", "/v1/events", "", e.liveKey()...)
	var audit struct {
		Data []map[string]any `json:"data"`
	}
	json.Unmarshal(e.do("GET", "/v1/developer/applications/"+e.creds.ApplicationID+"/audit?limit=200", "", e.key()...).body, &audit)
	if len(audit.Data) == 0 {
		t.Fatal("the test key sees no audit entries at all")
	}
	for _, a := range audit.Data {
		if d, _ := a["detail"].(map[string]any); d["mode"] != "test" {
			t.Fatalf("the test key reads a non-test audit entry: %v", a)
		}
	}
}

// Medium 4: a receipt is refused to a connection whose grant does not reach the plan's
// sources, like its plan and execution.
func TestReceiptFollowsTheGrant(t *testing.T) {
	e, _, src, _ := localEnv(t, 2)
	x := runLocal(t, e, src)
	other, err := e.srv.Developers().Connect(context.Background(), e.creds.ApplicationID, e.creds.UserID, platform.ModeTest,
		platform.Grant{OperationClasses: []string{"discover"}, SourceIDs: []string{"src_01JD0000000000000000000000"}})
	if err != nil {
		t.Fatal(err)
	}
	cx := "?connection_id=" + other.ID
	checkProblem(t, e.do("GET", "/v1/executions/"+x["id"].(string)+cx, "", e.key()...), 403, "forbidden")
	checkProblem(t, e.do("GET", "/v1/receipts/"+x["receipt_id"].(string)+cx, "", e.key()...), 403, "forbidden")
	if r := e.do("GET", "/v1/receipts/"+x["receipt_id"].(string)+"?connection_id="+e.creds.ConnectionID, "", e.key()...); r.status != 200 {
		t.Fatalf("receipt with the full grant: %d %s", r.status, r.body)
	}
}
