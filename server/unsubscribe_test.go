package server_test

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"svc.dev/svc/platform"
	"svc.dev/svc/providers"
	"svc.dev/svc/server"
)

// A live unsubscribe plan over a Maildir: messages with an https one-click target get exactly
// the RFC 8058 POST (through the guarded client, here to a TLS server on loopback, allowed in
// --dev); a message with only a mailto target is excluded from the plan and nothing is sent
// for it; a sender that answers 404 leaves its message failed.
func TestUnsubscribeOneClick(t *testing.T) {
	var mu sync.Mutex
	got := map[string]string{} // path -> body
	sender := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		got[r.URL.Path] = r.Method + " " + r.Header.Get("Content-Type") + " " + string(b)
		mu.Unlock()
		if r.URL.Path == "/gone" {
			w.WriteHeader(http.StatusNotFound)
		}
	}))
	defer sender.Close()
	roots := sender.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs
	e := newEnv(t, func(c *server.Config) { c.Dev = true; c.OutboundTLS = &tls.Config{RootCAs: roots} })

	root := t.TempDir()
	for _, d := range []string{"cur", "new", "tmp"} {
		os.MkdirAll(filepath.Join(root, d), 0o700)
	}
	msg := func(name, unsub string, oneClick bool) {
		h := fmt.Sprintf("From: news@shop.example\r\nTo: me@example.com\r\nSubject: Sale %s\r\nDate: Mon, 02 Mar 2026 10:00:00 +0000\r\nMessage-ID: <%s@shop.example>\r\nList-Unsubscribe: %s\r\n", name, name, unsub)
		if oneClick {
			h += "List-Unsubscribe-Post: List-Unsubscribe=One-Click\r\n"
		}
		if err := os.WriteFile(filepath.Join(root, "cur", name+":2,S"), []byte(h+"\r\nOnly today.\r\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	msg("m1", "<"+sender.URL+"/u/1>, <mailto:u@shop.example>", true)
	msg("m2", "<"+sender.URL+"/u/2>", true)
	msg("m3", "<mailto:u@shop.example>", false)
	msg("m4", "<"+sender.URL+"/gone>", true)

	live := platform.Tenant{Owner: e.creds.UserID, Mode: platform.ModeLive}
	src, err := e.srv.ConnectSource(context.Background(), live, server.SourceSpec{Provider: providers.VendorDLocal,
		Config: providers.Config{"root": root}, Kind: "mail", DisplayName: "Inbox"})
	if err != nil {
		t.Fatal(err)
	}
	r := e.do("POST", "/v1/plans", `{"intent":"unsubscribe","source_ids":["`+src.Id+`"]}`, e.session()...)
	p := r.json(t)
	// m3 has a List-Unsubscribe too, but no one-click target: excluded, saying why.
	if r.status != 201 || len(p["objects"].([]any)) != 3 || len(p["excluded"].([]any)) != 1 ||
		p["excluded"].([]any)[0].(map[string]any)["reason"] != "unsupported_capability" {
		t.Fatalf("plan: %d %s", r.status, r.body)
	}
	id := p["planId"].(string)
	if r := e.do("POST", "/v1/plans/"+id+"/authorize", `{"plan_hash":"`+p["hash"].(string)+`"}`, e.session()...); r.status != 200 {
		t.Fatalf("authorize: %d %s", r.status, r.body)
	}
	r = e.do("POST", "/v1/plans/"+id+"/execute", "", e.session()...)
	if r.status != 202 {
		t.Fatalf("execute: %d %s", r.status, r.body)
	}
	xid := r.json(t)["id"].(string)
	var x map[string]any
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if x = e.do("GET", "/v1/executions/"+xid, "", e.session()...).json(t); x["receipt_id"] != nil {
			break
		}
	}
	mu.Lock()
	defer mu.Unlock()
	want := "POST application/x-www-form-urlencoded List-Unsubscribe=One-Click"
	if got["/u/1"] != want || got["/u/2"] != want || len(got) != 3 {
		t.Fatalf("requests at the sender: %v", got)
	}
	// m1, m2 confirmed; m4's sender refused (404): failed, with the reason.
	if x["completed"] != float64(2) || x["failed"] != float64(1) || x["status"] != "partially_completed" {
		t.Fatalf("execution: %v", x)
	}
}

// Test mode is simulated: an unsubscribe plan over the seeded simulated mailbox completes
// without a single request (a request would fail here: the targets are fictional domains), and
// every step says so.
func TestUnsubscribeInTestModeSendsNothing(t *testing.T) {
	e := newEnv(t)
	cx := "?connection_id=" + e.creds.ConnectionID
	var mailbox string
	for _, s := range e.do("GET", "/v1/sources"+cx, "", e.key()...).json(t)["data"].([]any) {
		if s := s.(map[string]any); s["display_name"] == "Simulated mailbox" {
			mailbox = s["id"].(string)
		}
	}
	r := e.do("POST", "/v1/plans"+cx, `{"intent":"unsubscribe","source_ids":["`+mailbox+`"]}`, e.key()...)
	p := r.json(t)
	if r.status != 201 || len(p["objects"].([]any)) == 0 {
		t.Fatalf("plan: %d %.300s", r.status, r.body)
	}
	_, x := authorizeAndRun(t, e, p)
	if x["failed"] != float64(0) || x["completed"] != float64(len(p["objects"].([]any))) {
		t.Fatalf("execution: completed %v failed %v of %d: %v", x["completed"], x["failed"], len(p["objects"].([]any)), x["errors"])
	}
	for _, s := range x["steps"].([]any) {
		if s := s.(map[string]any); s["step"] == "unsubscribe" && s["status"] != "simulated" {
			t.Fatalf("a test-mode step: %v", s)
		}
	}
}
