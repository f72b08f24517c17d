package server_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"svc.dev/svc/providers"
	"svc.dev/svc/receipt"
	"svc.dev/svc/server"
)

// localEnv is an env with a local folder of n old files connected in the test tenant.
func localEnv(t *testing.T, n int) (*env, string, string, map[string]string) {
	t.Setenv("XDG_DATA_HOME", t.TempDir()) // the freedesktop trash goes there
	e := newEnv(t)
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
