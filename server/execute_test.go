package server_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"svc.dev/svc/manifest"
	"svc.dev/svc/providers"
	"svc.dev/svc/receipt"
	"svc.dev/svc/server"
)

// localEnv is an env with a local folder of n old files connected in the test tenant.
func localEnv(t *testing.T, n int, opts ...func(*server.Config)) (*env, string, string, map[string]string) {
	t.Setenv("XDG_DATA_HOME", t.TempDir()) // the freedesktop trash goes there
	e := newEnv(t, opts...)
	root := t.TempDir()
	shas := map[string]string{}
	old := time.Now().AddDate(-2, 0, 0)
	for i := range n {
		name := fmt.Sprintf("doc-%03d.txt", i)
		data := []byte(fmt.Sprintf("document %d %s", i, make([]byte, i*37)))
		if err := os.WriteFile(filepath.Join(root, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
		os.Chtimes(filepath.Join(root, name), old, old)
		sum := sha256.Sum256(data)
		shas[name] = hex.EncodeToString(sum[:])
	}
	src, err := e.srv.ConnectSource(context.Background(), e.userTestTenant(), server.SourceSpec{Provider: providers.VendorDLocal,
		Config: providers.Config{"root": root}, Kind: "folder", DisplayName: "Documents"})
	if err != nil {
		t.Fatal(err)
	}
	return e, root, src.Id, shas
}

func TestExecuteEndToEnd(t *testing.T) {
	e, root, src, shas := localEnv(t, 30)
	cx := "?connection_id=" + e.creds.ConnectionID
	r := e.do("POST", "/v1/plans"+cx, `{"intent":"svc","source_ids":["`+src+`"],"policy":{"minAgeDays":30}}`, e.key()...)
	p := r.json(t)
	if r.status != 201 || len(p["objects"].([]any)) != 30 {
		t.Fatalf("plan: %d %s", r.status, r.body)
	}
	id := p["planId"].(string)
	checkProblem(t, e.do("POST", "/v1/plans/"+id+"/execute"+cx, "", e.key()...), 409, "invalid_state")
	if r := e.do("POST", "/v1/plans/"+id+"/authorize"+cx, `{"plan_hash":"`+p["hash"].(string)+`"}`, e.key()...); r.status != 200 {
		t.Fatalf("authorize: %d %s", r.status, r.body)
	}
	r = e.do("POST", "/v1/plans/"+id+"/execute"+cx, "", e.key()...)
	if r.status != 202 || r.json(t)["status"] != "queued" {
		t.Fatalf("execute: %d %s", r.status, r.body)
	}
	exe := r.json(t)["id"].(string)
	var x map[string]any
	deadline := time.Now().Add(30 * time.Second)
	for {
		x = e.do("GET", "/v1/executions/"+exe+cx, "", e.key()...).json(t)
		if x["receipt_id"] != nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if x["status"] != "completed" || x["completed"] != float64(30) || x["bytes_preserved"] == float64(0) {
		t.Fatalf("execution: %v", x)
	}
	// The source is empty: everything went to the trash, once, after its copy was verified.
	left, _ := os.ReadDir(root)
	if len(left) != 0 {
		t.Fatalf("%d files left at the source (%v); plan object 0: %v; steps %v", len(left), left[0].Name(), p["objects"].([]any)[0], x["steps"].([]any)[:6])
	}
	if g := e.do("GET", "/v1/plans/"+id+cx, "", e.key()...).json(t); g["state"] != "executed" {
		t.Fatalf("plan state %v", g["state"])
	}
	// The receipt verifies offline with the published keys.
	rr := e.do("GET", "/v1/receipts/"+x["receipt_id"].(string)+cx, "", e.key()...)
	keys := e.do("GET", "/.well-known/svc-receipts.json", "")
	v, err := receipt.Verify(rr.body, keys.body)
	if err != nil || v.ExecutionID != exe {
		t.Fatalf("receipt: %v %+v\n%s", err, v, rr.body)
	}
	rc := rr.json(t)
	if rc["completed"] != float64(30) || rc["bytesRemoved"] != x["bytes_removed"] {
		t.Fatalf("receipt counters: %s", rr.body)
	}
	// Every object's vault copy has the source content's SHA-256.
	for _, o := range rc["objects"].([]any) {
		o := o.(map[string]any)
		if o["vaultSha256"] != shas[o["providerObjectId"].(string)] || o["status"] != "completed" {
			t.Fatalf("receipt object %v", o)
		}
	}
	// The execution is listed, and the plan cannot run twice.
	if ids := e.do("GET", "/v1/executions"+cx+"&plan_id="+id, "", e.key()...).json(t)["data"].([]any); len(ids) != 1 {
		t.Fatalf("executions: %v", ids)
	}
	checkProblem(t, e.do("POST", "/v1/plans/"+id+"/execute"+cx, "", e.key()...), 409, "invalid_state")
}

// runLocal plans, authorizes and executes a clean-up of the local folder, and waits for the
// receipt.
func runLocal(t *testing.T, e *env, src string) map[string]any {
	t.Helper()
	cx := "?connection_id=" + e.creds.ConnectionID
	p := e.do("POST", "/v1/plans"+cx, `{"intent":"svc","source_ids":["`+src+`"],"policy":{"minAgeDays":30}}`, e.key()...).json(t)
	id := p["planId"].(string)
	e.do("POST", "/v1/plans/"+id+"/authorize"+cx, `{"plan_hash":"`+p["hash"].(string)+`"}`, e.key()...)
	exe := e.do("POST", "/v1/plans/"+id+"/execute"+cx, "", e.key()...).json(t)["id"].(string)
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		x := e.do("GET", "/v1/executions/"+exe+cx, "", e.key()...).json(t)
		if x["receipt_id"] != nil {
			return x
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatal("execution did not finish")
	return nil
}

func TestVaultObjectsContentAndManifests(t *testing.T) {
	e, _, src, shas := localEnv(t, 12)
	runLocal(t, e, src)
	cx := "?connection_id=" + e.creds.ConnectionID
	var list struct {
		Data []map[string]any `json:"data"`
	}
	json.Unmarshal(e.do("GET", "/v1/vault/objects"+cx+"&limit=200", "", e.key()...).body, &list)
	if len(list.Data) != 12 {
		t.Fatalf("%d vault objects", len(list.Data))
	}
	o := list.Data[0]
	if o["state"] != "committed" || o["manifest_id"] == nil || !strings.HasPrefix(o["id"].(string), "vlt_") {
		t.Fatalf("vault object %v", o)
	}
	// The content streams back, verified, with its digest.
	r := e.do("GET", "/v1/vault/objects/"+o["id"].(string)+"/content"+cx, "", e.key()...)
	sum := sha256.Sum256(r.body)
	if r.status != 200 || hex.EncodeToString(sum[:]) != o["sha256"] || r.header.Get("Digest") != "sha-256="+o["sha256"].(string) {
		t.Fatalf("content: %d %d bytes, digest header %q", r.status, len(r.body), r.header.Get("Digest"))
	}
	if shas[o["name"].(string)] != o["sha256"] {
		t.Fatalf("vault sha %v is not the source file's", o["sha256"])
	}
	// Manifests export as a bundle whose hash verifies.
	r = e.do("GET", "/v1/vault/manifests/export"+cx, "", e.key()...)
	b := r.json(t)
	if r.status != 200 || b["count"] != float64(12) || b["bundleVersion"] != "1.0" {
		t.Fatalf("bundle: %d %v %v", r.status, b["count"], b["bundleVersion"])
	}
	if err := manifest.VerifyBundle(r.body); err != nil {
		t.Fatalf("bundle does not verify: %v", err)
	}
	m := b["manifests"].([]any)[0].(map[string]any)
	if m["vault"] == nil || len(m["executions"].([]any)) != 1 {
		t.Fatalf("manifest: %v", m)
	}
	checkProblem(t, e.do("GET", "/v1/vault/objects/vlt_01JD0000000000000000000000"+cx, "", e.key()...), 404, "not_found")
}

func TestRestoreFromTheVault(t *testing.T) {
	e, root, src, shas := localEnv(t, 5)
	runLocal(t, e, src)
	cx := "?connection_id=" + e.creds.ConnectionID
	var list struct {
		Data []map[string]any `json:"data"`
	}
	json.Unmarshal(e.do("GET", "/v1/vault/objects"+cx, "", e.key()...).body, &list)
	vo := list.Data[0]
	name := vo["name"].(string)
	if _, err := os.Stat(filepath.Join(root, name)); err == nil {
		t.Fatal("the file was not trashed")
	}
	restore := func() (map[string]any, map[string]any) {
		r := e.do("POST", "/v1/vault/objects/"+vo["id"].(string)+"/restore"+cx, `{}`, e.key()...)
		p := r.json(t)
		if r.status != 201 || p["state"] != "draft" || p["intent"] != "restore" {
			t.Fatalf("restore plan: %d %s", r.status, r.body)
		}
		id := p["planId"].(string)
		if r := e.do("POST", "/v1/plans/"+id+"/authorize"+cx, `{"plan_hash":"`+p["hash"].(string)+`"}`, e.key()...); r.status != 200 {
			t.Fatalf("authorize: %d %s", r.status, r.body)
		}
		exe := e.do("POST", "/v1/plans/"+id+"/execute"+cx, "", e.key()...).json(t)["id"].(string)
		for range 600 {
			x := e.do("GET", "/v1/executions/"+exe+cx, "", e.key()...).json(t)
			if x["receipt_id"] != nil {
				return p, x
			}
			time.Sleep(50 * time.Millisecond)
		}
		t.Fatal("restore did not finish")
		return nil, nil
	}
	_, x := restore()
	data, err := os.ReadFile(filepath.Join(root, name))
	sum := sha256.Sum256(data)
	if err != nil || hex.EncodeToString(sum[:]) != shas[name] || x["status"] != "completed" || x["bytes_transferred"] == float64(0) {
		t.Fatalf("restored %s: %v, execution %v", name, err, x)
	}
	rr := e.do("GET", "/v1/receipts/"+x["receipt_id"].(string)+cx, "", e.key()...)
	if _, err := receipt.Verify(rr.body, e.do("GET", "/.well-known/svc-receipts.json", "").body); err != nil {
		t.Fatalf("restore receipt: %v", err)
	}
	// Restoring again does not overwrite what is there.
	_, x = restore()
	if x["status"] != "partially_completed" {
		t.Fatalf("a second restore over the file: %v", x)
	}
}

// The dev seed includes an executed plan with its receipt, vault objects and manifests.
func TestDevSeedHasAnExecution(t *testing.T) {
	clk := &clock{t: time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)}
	srv, err := server.New(server.Config{DataDir: t.TempDir(), Password: cheapPasswords, Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	creds, err := srv.Seed(context.Background(), "http://127.0.0.1", nil)
	if err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, srv: srv, creds: creds, clock: clk}
	ts := httptest.NewServer(srv.Handler())
	defer ts.Close()
	e.ts = ts
	e.router = e.loadOpenAPI()
	cx := "?connection_id=" + creds.ConnectionID
	var xs struct {
		Data []map[string]any `json:"data"`
	}
	json.Unmarshal(e.do("GET", "/v1/executions"+cx, "", e.key()...).body, &xs)
	if len(xs.Data) != 1 || xs.Data[0]["receipt_id"] == nil || xs.Data[0]["bytes_preserved"] == float64(0) {
		t.Fatalf("seeded executions: %v", xs.Data)
	}
	rr := e.do("GET", "/v1/receipts/"+xs.Data[0]["receipt_id"].(string)+cx, "", e.key()...)
	if _, err := receipt.Verify(rr.body, e.do("GET", "/.well-known/svc-receipts.json", "").body); err != nil {
		t.Fatalf("seeded receipt: %v", err)
	}
	var vs struct {
		Data []map[string]any `json:"data"`
	}
	json.Unmarshal(e.do("GET", "/v1/vault/objects"+cx, "", e.key()...).body, &vs)
	if len(vs.Data) == 0 {
		t.Fatal("no seeded vault objects")
	}
	if b := e.do("GET", "/v1/vault/manifests/export"+cx, "", e.key()...).json(t); b["count"].(float64) == 0 {
		t.Fatal("no seeded manifests")
	}
}

// A crash after the receipt was stored and before the execution recorded its end: the
// execution is still running, with no receipt and none of its end events; on restart it ends
// with the same receipt and finished_at, and its end events under the same ids, once each.
func TestCrashBetweenReceiptAndEndResumesToTheSameReceipt(t *testing.T) {
	e, _, src, _ := localEnv(t, 2)
	x := runLocal(t, e, src)
	exe := x["id"].(string)
	count := func() map[string]int {
		out := map[string]int{}
		r := e.do("GET", "/v1/events?types=svc.receipt.created,svc.execution.completed,svc.plan.executed&limit=200", "", e.key()...)
		for _, ev := range r.json(t)["data"].([]any) {
			ev := ev.(map[string]any)
			out[ev["type"].(string)+" "+ev["id"].(string)]++
		}
		return out
	}
	before := count()
	if len(before) != 3 {
		t.Fatalf("end-of-execution events: %v", before)
	}
	var ids []string
	for k := range before {
		ids = append(ids, strings.Fields(k)[1])
	}
	ctx, tenant := context.Background(), e.userTestTenant()
	if err := e.srv.UnendExecution(ctx, tenant, exe); err != nil {
		t.Fatal(err)
	}
	if err := e.srv.ForgetEvents(ctx, tenant, ids); err != nil {
		t.Fatal(err)
	}
	cx := "?connection_id=" + e.creds.ConnectionID
	if y := e.do("GET", "/v1/executions/"+exe+cx, "", e.key()...).json(t); y["status"] != "running" || y["receipt_id"] != nil || len(count()) != 0 {
		t.Fatalf("before the restart: %v %v, events %v", y["status"], y["receipt_id"], count())
	}
	for range 2 { // the restart, and one more: the second finds nothing to do
		if err := e.srv.ResumeExecutions(ctx); err != nil {
			t.Fatal(err)
		}
		y := e.do("GET", "/v1/executions/"+exe+cx, "", e.key()...).json(t)
		if y["status"] != "completed" || y["receipt_id"] != x["receipt_id"] || y["finished_at"] != x["finished_at"] {
			t.Fatalf("resumed to %v %v %v, was %v %v %v", y["status"], y["receipt_id"], y["finished_at"], x["status"], x["receipt_id"], x["finished_at"])
		}
		if after := count(); fmt.Sprint(after) != fmt.Sprint(before) {
			t.Fatalf("events before %v\nafter %v", before, after)
		}
	}
}

// A client polling an execution as fast as it can, and another polling the event stream,
// never see it ended without its receipt: terminal status, finished_at and receipt_id appear
// together, with the end event, whose data names them too; the receipt's finishedAt is the
// execution's finished_at.
func TestExecutionEndsWithItsReceipt(t *testing.T) {
	n := 150
	if testing.Short() {
		n = 40
	}
	e, _, src, _ := localEnv(t, n)
	cx := "?connection_id=" + e.creds.ConnectionID
	p := e.do("POST", "/v1/plans"+cx, `{"intent":"svc","source_ids":["`+src+`"],"policy":{"minAgeDays":30}}`, e.key()...).json(t)
	id := p["planId"].(string)
	e.do("POST", "/v1/plans/"+id+"/authorize"+cx, `{"plan_hash":"`+p["hash"].(string)+`"}`, e.key()...)
	exe := e.do("POST", "/v1/plans/"+id+"/execute"+cx, "", e.key()...).json(t)["id"].(string)
	ended := func(x map[string]any) bool {
		switch x["status"] {
		case "queued", "running":
			if x["receipt_id"] != nil || x["finished_at"] != nil {
				t.Errorf("%v execution with receipt %v finished %v", x["status"], x["receipt_id"], x["finished_at"])
			}
			return false
		}
		if x["receipt_id"] == nil || x["finished_at"] == nil {
			t.Fatalf("%v execution without its receipt (%v) or finished_at (%v)", x["status"], x["receipt_id"], x["finished_at"])
		}
		return true
	}
	events := make(chan error, 1)
	go func() { // the event stream: once the end event is there, the execution shows the end
		deadline := time.Now().Add(60 * time.Second)
		for time.Now().Before(deadline) {
			var page struct{ Data []map[string]any }
			json.Unmarshal(e.do("GET", "/v1/events?types=svc.execution.completed,svc.execution.partially_completed", "", e.key()...).body, &page)
			for _, ev := range page.Data {
				if ev["subject"] != exe {
					continue
				}
				x := e.do("GET", "/v1/executions/"+exe+cx, "", e.key()...).json(t)
				d := ev["data"].(map[string]any)
				if x["receipt_id"] == nil || d["receipt_id"] != x["receipt_id"] || d["finished_at"] != x["finished_at"] || d["status"] != x["status"] {
					events <- fmt.Errorf("event %v, execution then %v %v %v", d, x["status"], x["receipt_id"], x["finished_at"])
					return
				}
				events <- nil
				return
			}
		}
		events <- fmt.Errorf("no end event")
	}()
	var x map[string]any
	polls := 0
	for deadline := time.Now().Add(60 * time.Second); ; polls++ {
		if x = e.do("GET", "/v1/executions/"+exe+cx, "", e.key()...).json(t); ended(x) || time.Now().After(deadline) {
			break
		}
	}
	if err := <-events; err != nil {
		t.Fatal(err)
	}
	r := e.do("GET", "/v1/receipts/"+x["receipt_id"].(string)+cx, "", e.key()...).json(t)
	if got, _ := time.Parse(time.RFC3339Nano, r["finishedAt"].(string)); x["finished_at"] == nil || got.Format(time.RFC3339Nano) != mustTime(t, x["finished_at"]).Format(time.RFC3339Nano) {
		t.Fatalf("receipt finishedAt %v, execution finished_at %v", r["finishedAt"], x["finished_at"])
	}
	t.Logf("%d polls before the end", polls)
}

func mustTime(t *testing.T, v any) time.Time {
	t.Helper()
	at, err := time.Parse(time.RFC3339Nano, v.(string))
	if err != nil {
		t.Fatal(err)
	}
	return at
}

// Cancelling a running execution: 200, then it ends cancelled with what it did so far in its
// receipt, and both events say so.
func TestCancelExecution(t *testing.T) {
	e, _, src, _ := localEnv(t, 300)
	cx := "?connection_id=" + e.creds.ConnectionID
	p := e.do("POST", "/v1/plans"+cx, `{"intent":"svc","source_ids":["`+src+`"],"policy":{"minAgeDays":30}}`, e.key()...).json(t)
	id := p["planId"].(string)
	e.do("POST", "/v1/plans/"+id+"/authorize"+cx, `{"plan_hash":"`+p["hash"].(string)+`"}`, e.key()...)
	exe := e.do("POST", "/v1/plans/"+id+"/execute"+cx, "", e.key()...).json(t)["id"].(string)
	if r := e.do("POST", "/v1/executions/"+exe+"/cancel"+cx, "", e.key()...); r.status != 200 {
		t.Fatalf("cancel: %d %s", r.status, r.body)
	}
	var x map[string]any
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if x = e.do("GET", "/v1/executions/"+exe+cx, "", e.key()...).json(t); x["receipt_id"] != nil {
			break
		}
	}
	if x["status"] != "cancelled" || x["receipt_id"] == nil {
		t.Fatalf("after cancel: %v", x["status"])
	}
	checkProblem(t, e.do("POST", "/v1/executions/"+exe+"/cancel"+cx, "", e.key()...), 409, "invalid_state")
	types := map[string]bool{}
	for _, ev := range e.do("GET", "/v1/events?types=svc.execution.*", "", e.key()...).json(t)["data"].([]any) {
		if ev := ev.(map[string]any); ev["subject"] == exe {
			types[ev["type"].(string)] = true
		}
	}
	if !types["svc.execution.cancel_requested"] || !types["svc.execution.cancelled"] || !types["svc.execution.started"] {
		t.Fatalf("events %v", types)
	}
}

// A webhook receiver told of an execution's end finds it ended, with the receipt and
// finished_at the event names, when it asks the API on receipt of the delivery.
func TestWebhookOfTheEndFindsTheReceipt(t *testing.T) {
	e, _, src, _ := localEnv(t, 20, func(c *server.Config) { c.Dev = true })
	cx := "?connection_id=" + e.creds.ConnectionID
	seen := make(chan string, 10)
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		var evs []map[string]any
		json.NewDecoder(req.Body).Decode(&evs)
		for _, ev := range evs {
			if ev["type"] != "svc.execution.completed" {
				continue
			}
			d := ev["data"].(map[string]any)
			x := e.do("GET", "/v1/executions/"+ev["subject"].(string)+cx, "", e.key()...).json(t)
			if x["status"] != "completed" || x["receipt_id"] == nil || x["receipt_id"] != d["receipt_id"] || x["finished_at"] != d["finished_at"] {
				seen <- fmt.Sprintf("event %v, execution %v %v %v", d, x["status"], x["receipt_id"], x["finished_at"])
				continue
			}
			seen <- ""
		}
	}))
	defer rcv.Close()
	if r := e.do("POST", "/v1/webhooks", `{"url":"`+rcv.URL+`/hook","event_types":["svc.execution.*"],"mode":"test"}`, e.key()...); r.status != 201 {
		t.Fatalf("webhook: %d %s", r.status, r.body)
	}
	runLocal(t, e, src)
	select {
	case msg := <-seen:
		if msg != "" {
			t.Fatal(msg)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("no svc.execution.completed delivery")
	}
}
