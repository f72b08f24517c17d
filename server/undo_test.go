package server_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Undo by receipt, end to end: a clean-up vaults and trashes a folder's files; the receipt's
// restore plan brings every one back (one whose vault copy was deleted meanwhile by untrashing
// it at the provider), and the folder holds the original bytes again.
func TestUndoByReceipt(t *testing.T) {
	e, root, src, shas := localEnv(t, 12)
	cx := "?connection_id=" + e.creds.ConnectionID
	x := runLocal(t, e, src)
	if left, _ := os.ReadDir(root); len(left) != 0 {
		t.Fatalf("%d files left after the clean-up", len(left))
	}
	rid := x["receipt_id"].(string)
	rc := e.do("GET", "/v1/receipts/"+rid+cx, "", e.key()...).json(t)
	objs := rc["objects"].([]any)
	gone := objs[0].(map[string]any)
	if err := e.srv.DeleteVaultObject(context.Background(), e.userTestTenant(), gone["vaultObjectId"].(string)); err != nil {
		t.Fatal(err)
	}

	idem := []string{"Idempotency-Key", "undo-" + rid}
	r := e.do("POST", "/v1/receipts/"+rid+"/restore"+cx, "{}", with(e.key(), idem...)...)
	if r.status != 201 {
		t.Fatalf("restore: %d %s", r.status, r.body)
	}
	p := r.json(t)
	if p["intent"] != "restore" || p["state"] != "draft" || len(p["objects"].([]any)) != 12 || len(p["excluded"].([]any)) != 0 {
		t.Fatalf("restore plan: %s", r.body)
	}
	untrash := 0
	for _, o := range p["objects"].([]any) {
		o := o.(map[string]any)
		if o["actions"].([]any)[0] != "restore" {
			t.Fatalf("object %v", o)
		}
		if v, _ := o["expectedVersion"].(string); strings.HasPrefix(v, "untrash:") {
			untrash++
			if o["assetId"] != gone["assetId"] {
				t.Fatalf("untrash of %v, the vault copy deleted was %v's", o["assetId"], gone["assetId"])
			}
		}
	}
	if untrash != 1 {
		t.Fatalf("%d objects to untrash", untrash)
	}
	// The same key and body replays the plan.
	again := e.do("POST", "/v1/receipts/"+rid+"/restore"+cx, "{}", with(e.key(), idem...)...)
	if again.status != 201 || again.header.Get("Idempotent-Replayed") != "true" || again.json(t)["planId"] != p["planId"] {
		t.Fatalf("replay: %d %s", again.status, again.body)
	}

	id := p["planId"].(string)
	if r := e.do("POST", "/v1/plans/"+id+"/authorize"+cx, `{"plan_hash":"`+p["hash"].(string)+`"}`, e.key()...); r.status != 200 {
		t.Fatalf("authorize: %d %s", r.status, r.body)
	}
	exe := e.do("POST", "/v1/plans/"+id+"/execute"+cx, "", e.key()...).json(t)["id"].(string)
	var y map[string]any
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if y = e.do("GET", "/v1/executions/"+exe+cx, "", e.key()...).json(t); y["receipt_id"] != nil {
			break
		}
	}
	if y["status"] != "completed" || y["completed"] != float64(12) {
		t.Fatalf("undo execution: %v %v %v", y["status"], y["completed"], y["errors"])
	}
	// The source holds the original bytes again.
	for name, want := range shas {
		data, err := os.ReadFile(filepath.Join(root, name))
		if err != nil {
			t.Fatalf("%s not back: %v", name, err)
		}
		sum := sha256.Sum256(data)
		if hex.EncodeToString(sum[:]) != want {
			t.Fatalf("%s is back with other bytes", name)
		}
	}
}

// Bad input changes nothing; what cannot come back is excluded with its reason.
func TestUndoByReceiptRefusalsAndExclusions(t *testing.T) {
	e, _, src, _ := localEnv(t, 3)
	cx := "?connection_id=" + e.creds.ConnectionID
	x := runLocal(t, e, src)
	rid := x["receipt_id"].(string)
	checkProblem(t, e.do("POST", "/v1/receipts/rcp_01JD0000000000000000000000/restore"+cx, "{}", e.key()...), 404, "not_found")
	checkProblem(t, e.do("POST", "/v1/receipts/nope/restore"+cx, "{}", e.key()...), 400, "validation_failed")
	checkProblem(t, e.do("POST", "/v1/receipts/"+rid+"/restore"+cx, `{"destination_id":"dst_01JD0000000000000000000000"}`, e.key()...), 404, "not_found")
	checkProblem(t, e.do("POST", "/v1/receipts/"+rid+"/restore"+cx, `{"extra":1}`, e.key()...), 400, "validation_failed")
	// Another user's session does not find it (the owner's does, in either mode: by id).
	checkProblem(t, e.do("POST", "/v1/receipts/"+rid+"/restore", "{}", e.signUp(t, "someone-else@example.com")...), 404, "not_found")

	// To a destination: the vault copies go there; an object without one cannot (an untrash
	// only brings it back where it was).
	rc := e.do("GET", "/v1/receipts/"+rid+cx, "", e.key()...).json(t)
	gone := rc["objects"].([]any)[1].(map[string]any)
	if err := e.srv.DeleteVaultObject(context.Background(), e.userTestTenant(), gone["vaultObjectId"].(string)); err != nil {
		t.Fatal(err)
	}
	var dsts struct {
		Data []struct {
			DestinationID string `json:"destinationId"`
		} `json:"data"`
	}
	json.Unmarshal(e.do("GET", "/v1/destinations"+cx, "", e.key()...).body, &dsts)
	if len(dsts.Data) == 0 {
		t.Fatal("no seeded destination")
	}
	r := e.do("POST", "/v1/receipts/"+rid+"/restore"+cx, `{"destination_id":"`+dsts.Data[0].DestinationID+`"}`, e.key()...)
	if r.status != 201 {
		t.Fatalf("restore to a destination: %d %s", r.status, r.body)
	}
	p := r.json(t)
	ex := p["excluded"].([]any)
	if len(p["objects"].([]any)) != 2 || len(ex) != 1 || ex[0].(map[string]any)["assetId"] != gone["assetId"] ||
		ex[0].(map[string]any)["reason"] != "unsupported_capability" || !strings.Contains(ex[0].(map[string]any)["detail"].(string), "vault copy") {
		t.Fatalf("plan to a destination: %s", r.body)
	}
	ops := p["operationClasses"].([]any)
	if len(ops) != 3 || p["destination"] == nil {
		t.Fatalf("operation classes %v, destination %v", ops, p["destination"])
	}
}
