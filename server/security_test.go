package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
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
	for _, c := range []struct {
		query string
		hdr   []string
	}{{cx, e.key()}, {"", e.session()}} {
		r := e.do("GET", "/v1/vault/objects/"+vo["id"].(string)+"/content"+c.query, "", c.hdr...)
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

// The Low findings of issue 11.
func TestLowFindings(t *testing.T) {
	e := newEnv(t, func(c *server.Config) { c.Dev = true })
	ctx := context.Background()
	full := "?connection_id=" + e.creds.ConnectionID

	t.Run("discover changes nothing", func(t *testing.T) {
		p := e.do("POST", "/v1/plans"+full, `{"intent":"rescue"}`, e.key()...)
		if p.status != 201 {
			t.Fatalf("plan: %d %s", p.status, p.body)
		}
		var srcs struct {
			Data []map[string]any `json:"data"`
		}
		json.Unmarshal(e.do("GET", "/v1/sources"+full, "", e.key()...).body, &srcs)
		discover, err := e.srv.Developers().Connect(ctx, e.creds.ApplicationID, e.creds.UserID, platform.ModeTest, platform.Grant{OperationClasses: []string{"discover"}})
		if err != nil {
			t.Fatal(err)
		}
		cx := "?connection_id=" + discover.ID
		checkProblem(t, e.do("PUT", "/v1/sources/"+srcs.Data[0]["id"].(string)+"/policy"+cx, `{"minAgeDays":1}`, e.key()...), 403, "forbidden")
		checkProblem(t, e.do("POST", "/v1/plans/"+p.json(t)["planId"].(string)+"/cancel"+cx, "", e.key()...), 403, "forbidden")
		checkProblem(t, e.do("POST", "/v1/executions/exe_01JD0000000000000000000000/cancel"+cx, "", e.key()...), 403, "forbidden")
		if r := e.do("GET", "/v1/plans/"+p.json(t)["planId"].(string)+full, "", e.key()...); r.json(t)["state"] == "cancelled" {
			t.Fatal("a discover-only grant cancelled the plan")
		}
	})

	t.Run("webhook limits are 4xx", func(t *testing.T) {
		rcv := newReceiver(t)
		var last *resp
		for i := range 51 {
			last = e.do("POST", "/v1/webhooks", `{"url":"`+rcv.ts.URL+`/`+strconv.Itoa(i)+`","event_types":["*"],"mode":"test"}`, e.key()...)
			if i < 50 && last.status != 201 {
				t.Fatalf("webhook %d: %d %s", i, last.status, last.body)
			}
		}
		checkProblem(t, last, 409, "limit_reached")
		var list struct {
			Data []map[string]any `json:"data"`
		}
		json.Unmarshal(e.do("GET", "/v1/webhooks", "", e.key()...).body, &list)
		id := list.Data[0]["id"].(string)
		if r := e.do("PATCH", "/v1/webhooks/"+id, `{"status":"paused"}`, e.key()...); r.status != 200 {
			t.Fatalf("pause: %d %s", r.status, r.body)
		}
		checkProblem(t, e.do("POST", "/v1/webhooks/"+id+"/test", "", e.key()...), 409, "invalid_state")
	})

	t.Run("idempotency keys do not cross modes", func(t *testing.T) {
		hdr := with(e.session(), "Idempotency-Key", "same-key-both-modes")
		first := e.do("POST", "/v1/plans", `{"intent":"rescue"}`, with(hdr, "Svc-Mode", "test")...)
		if first.status != 201 {
			t.Fatalf("test-mode plan: %d %s", first.status, first.body)
		}
		second := e.do("POST", "/v1/plans", `{"intent":"rescue"}`, with(hdr, "Svc-Mode", "live")...)
		if second.header.Get("Idempotent-Replayed") != "" || string(second.body) == string(first.body) {
			t.Fatalf("the live request replayed the test-mode plan: %d %s", second.status, second.body)
		}
	})

	t.Run("redirect URIs are web addresses", func(t *testing.T) {
		for _, uri := range []string{"javascript:alert(1)", "data:text/html,<script>x</script>", "file:///etc/passwd", "http://app.example/cb"} {
			r := e.do("POST", "/v1/developer/applications", `{"org_id":"`+e.creds.OrgID+`","name":"Evil","operation_classes":["discover"],"redirect_uris":["`+uri+`"]}`, e.session()...)
			checkProblem(t, r, 400, "validation_failed")
		}
		for _, uri := range []string{"https://app.example/cb", "http://localhost:8080/cb", "http://127.0.0.1/cb"} {
			if r := e.do("POST", "/v1/developer/applications", `{"org_id":"`+e.creds.OrgID+`","name":"Fine","operation_classes":["discover"],"redirect_uris":["`+uri+`"]}`, e.session()...); r.status != 201 {
				t.Fatalf("%s: %d %s", uri, r.status, r.body)
			}
		}
	})

	t.Run("input is text", func(t *testing.T) {
		checkProblem(t, e.do("GET", "/v1/usage?month=2026-13", "", e.liveKey()...), 400, "validation_failed")
		checkProblem(t, e.do("GET", "/v1/usage?month=2026-00", "", e.liveKey()...), 400, "validation_failed")
		if r := e.do("GET", "/v1/usage?month=2026-12", "", e.liveKey()...); r.status != 200 {
			t.Fatalf("month 2026-12: %d %s", r.status, r.body)
		}
		long := strings.Repeat("a", 5000) + "@example.com"
		checkProblem(t, e.do("POST", "/v1/auth/sign-up", `{"email":"`+long+`","password":"correct horse battery"}`), 400, "validation_failed")
		for _, name := range []string{`"a\u0000b"`, `"line\nbreak"`, `"bell\u0007"`, `"c1\u0085"`} {
			p := checkProblem(t, e.do("PATCH", "/v1/account", `{"display_name":`+name+`}`, e.session()...), 400, "validation_failed")
			if errs := p["errors"].([]any); len(errs) != 1 || errs[0].(map[string]any)["path"] != "display_name" {
				t.Fatalf("%s: %v", name, p)
			}
		}
		checkProblem(t, e.do("PATCH", "/v1/account", "{\"display_name\":\"a\xffb\"}", e.session()...), 400, "validation_failed")
		checkProblem(t, e.do("PATCH", "/v1/account", `{"display_name":"a","display_name":"b"}`, e.session()...), 400, "validation_failed")
		if r := e.do("GET", "/v1/account", "", e.session()...); r.json(t)["display_name"] != "Dev User" {
			t.Fatalf("the account changed: %s", r.body)
		}
	})
}

// Low: a restore path is checked when the restore is requested, not when it runs.
func TestRestorePathCheckedAtRequest(t *testing.T) {
	e, _, src, _ := localEnv(t, 1)
	runLocal(t, e, src)
	cx := "?connection_id=" + e.creds.ConnectionID
	var list struct {
		Data []map[string]any `json:"data"`
	}
	json.Unmarshal(e.do("GET", "/v1/vault/objects"+cx, "", e.key()...).body, &list)
	vo := list.Data[0]["id"].(string)
	before := e.do("GET", "/v1/plans"+cx, "", e.key()...).body
	for _, p := range []string{"/abs", "../x", "a/../../x", "a\\u0000b", ".Trash/x", "a/.Trash-1000/x", "./a", "a//b", "a/", ""} {
		r := e.do("POST", "/v1/vault/objects/"+vo+"/restore"+cx, `{"path":"`+p+`"}`, e.key()...)
		prob := checkProblem(t, r, 400, "validation_failed")
		if errs := prob["errors"].([]any); errs[0].(map[string]any)["path"] != "path" {
			t.Fatalf("%q: %v", p, prob)
		}
	}
	if after := e.do("GET", "/v1/plans"+cx, "", e.key()...).body; string(after) != string(before) {
		t.Fatal("a refused restore left a plan behind")
	}
}

// Low: the session cookie is Secure when the external origin is https.
func TestSessionCookieSecureBehindHTTPS(t *testing.T) {
	e := newEnv(t, func(c *server.Config) { c.BaseURL = "https://svc.example.com" })
	r := e.do("POST", "/v1/auth/sign-up", `{"email":"secure@example.com","password":"correct horse battery"}`)
	if r.status != 201 || !strings.Contains(r.header.Get("Set-Cookie"), "Secure") {
		t.Fatalf("sign-up: %d, Set-Cookie %q", r.status, r.header.Get("Set-Cookie"))
	}
}

// Low: a client trickling its body is cut off after the body read timeout.
func TestSlowBodyIsCutOff(t *testing.T) {
	e := newEnv(t, func(c *server.Config) { c.BodyReadTimeout = 300 * time.Millisecond })
	conn, err := net.Dial("tcp", strings.TrimPrefix(e.ts.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	start := time.Now()
	fmt.Fprintf(conn, "POST /v1/auth/sign-in HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{")
	go func() { // one byte a second, as the probe did
		for range 10 {
			time.Sleep(time.Second)
			if _, err := conn.Write([]byte(" ")); err != nil {
				return
			}
		}
	}()
	conn.SetReadDeadline(time.Now().Add(8 * time.Second))
	buf := make([]byte, 512)
	n, _ := conn.Read(buf)
	if el := time.Since(start); el > 5*time.Second {
		t.Fatalf("the connection was held %v", el)
	}
	if n > 0 && !strings.HasPrefix(string(buf[:n]), "HTTP/1.1 4") {
		t.Fatalf("answer to a trickled body: %q", buf[:n])
	}
}

// Low: svc refuses to start on a master key others may read.
func TestMasterKeyReadableByOthersIsRefused(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "master.key"), make([]byte, 32), 0o644); err != nil {
		t.Fatal(err)
	}
	os.Chmod(filepath.Join(dir, "master.key"), 0o644)
	srv, err := server.New(server.Config{DataDir: dir})
	if err == nil {
		srv.Close()
		t.Fatal("the server started with a world-readable master.key")
	}
	if !strings.Contains(err.Error(), "chmod 600") {
		t.Fatalf("error does not say what to do: %v", err)
	}
}
