package server_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/proto"

	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/gen/svc/v1/svcv1connect"
	"svc.dev/svc/manifest"
	"svc.dev/svc/providers"
	"svc.dev/svc/receipt"
	"svc.dev/svc/server"
)

// destination connects a folder as a source and makes a destination of it with the template.
func destination(t *testing.T, e *env, label, template string) (string, string) {
	t.Helper()
	root := t.TempDir()
	src, err := e.srv.ConnectSource(context.Background(), e.userTestTenant(), server.SourceSpec{Provider: providers.VendorDLocal,
		SourceRef: "out", Config: providers.Config{"root": root}, Kind: "folder", DisplayName: label})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(root, "out"), 0o700); err != nil {
		t.Fatal(err)
	}
	r := e.do("POST", "/v1/destinations?connection_id="+e.creds.ConnectionID, `{"source_id":"`+src.Id+`","label":"`+label+`","path_template":"`+template+`"}`, e.key()...)
	if r.status != 201 {
		t.Fatalf("destination: %d %s", r.status, r.body)
	}
	return r.json(t)["destinationId"].(string), filepath.Join(root, "out")
}

// runPlan plans with body, authorizes, executes and waits for the receipt, which must verify.
func runPlan(t *testing.T, e *env, body string) (plan, exe map[string]any) {
	t.Helper()
	cx := "?connection_id=" + e.creds.ConnectionID
	r := e.do("POST", "/v1/plans"+cx, body, e.key()...)
	if r.status != 201 {
		t.Fatalf("plan: %d %s", r.status, r.body)
	}
	return authorizeAndRun(t, e, r.json(t))
}

func authorizeAndRun(t *testing.T, e *env, p map[string]any) (plan, exe map[string]any) {
	t.Helper()
	cx := "?connection_id=" + e.creds.ConnectionID
	id := p["planId"].(string)
	if r := e.do("POST", "/v1/plans/"+id+"/authorize"+cx, `{"plan_hash":"`+p["hash"].(string)+`"}`, e.key()...); r.status != 200 {
		t.Fatalf("authorize: %d %s", r.status, r.body)
	}
	r := e.do("POST", "/v1/plans/"+id+"/execute"+cx, "", e.key()...)
	if r.status != 202 {
		t.Fatalf("execute: %d %s", r.status, r.body)
	}
	xid := r.json(t)["id"].(string)
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		x := e.do("GET", "/v1/executions/"+xid+cx, "", e.key()...).json(t)
		if x["receipt_id"] != nil {
			rr := e.do("GET", "/v1/receipts/"+x["receipt_id"].(string)+cx, "", e.key()...)
			if _, err := receipt.Verify(rr.body, e.do("GET", "/.well-known/svc-receipts.json", "").body); err != nil {
				t.Fatalf("receipt: %v", err)
			}
			return p, x
		}
	}
	t.Fatal("execution did not finish")
	return nil, nil
}

func fileSHA(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// manifestsByObject exports the manifest bundle (verifying it) and indexes it by source
// object id.
func manifestsByObject(t *testing.T, e *env) map[string]map[string]any {
	t.Helper()
	r := e.do("GET", "/v1/vault/manifests/export?connection_id="+e.creds.ConnectionID, "", e.key()...)
	if r.status != 200 {
		t.Fatalf("export: %d %s", r.status, r.body)
	}
	if err := manifest.VerifyBundle(r.body); err != nil {
		t.Fatalf("bundle: %v", err)
	}
	var b struct {
		Manifests []map[string]any `json:"manifests"`
	}
	json.Unmarshal(r.body, &b)
	out := map[string]map[string]any{}
	for _, m := range b.Manifests {
		out[m["source"].(map[string]any)["objectId"].(string)] = m
	}
	return out
}

func relations(m map[string]any) map[string]bool {
	out := map[string]bool{}
	for _, l := range m["lineage"].([]any) {
		out[l.(map[string]any)["relation"].(string)] = true
	}
	return out
}

// Export copies to a destination and leaves the source; migrate preserves, moves and removes
// the originals; a vault copy restores to a destination. Every write is verified and recorded
// in the manifests and the receipts.
func TestExportMigrateAndRestoreToDestinations(t *testing.T) {
	e, root, src, shas := localEnv(t, 6)
	// A folder connected at its root (no source reference) still names its account (the
	// response is checked against the OpenAPI document, which requires a non-empty id).
	if r := e.do("GET", "/v1/sources/"+src+"?connection_id="+e.creds.ConnectionID, "", e.key()...); r.status != 200 || r.json(t)["external_account_id"] != root {
		t.Fatalf("source: %d %s", r.status, r.body)
	}
	exportDst, exportDir := destination(t, e, "Export", "{path}")
	moveDst, moveDir := destination(t, e, "Archive", "moved/{path}")

	// Export: a copy of every file at the destination, the source untouched.
	_, x := runPlan(t, e, `{"intent":"export","source_ids":["`+src+`"],"destination_id":"`+exportDst+`","policy":{"minAgeDays":30}}`)
	if x["status"] != "completed" || x["completed"] != float64(6) || x["bytes_transferred"] == float64(0) || x["bytes_removed"] != float64(0) {
		t.Fatalf("export: %v", x)
	}
	for name, sha := range shas {
		if fileSHA(filepath.Join(exportDir, name)) != sha || fileSHA(filepath.Join(root, name)) != sha {
			t.Fatalf("%s: at the destination %q, at the source %q, want %s", name, fileSHA(filepath.Join(exportDir, name)), fileSHA(filepath.Join(root, name)), sha)
		}
	}
	ms := manifestsByObject(t, e)
	for name := range shas {
		m := ms[name]
		if m == nil || !relations(m)["copied_to"] {
			t.Fatalf("manifest of %s: %v", name, m)
		}
		d := m["destinations"].([]any)[0].(map[string]any)
		if d["destinationId"] != exportDst || d["mode"] != "copy" || d["verified"] != true || d["path"] != name {
			t.Fatalf("destination entry of %s: %v", name, d)
		}
	}

	// Migrate: preserved, moved, and the originals removed (to the trash).
	_, x = runPlan(t, e, `{"intent":"migrate","source_ids":["`+src+`"],"destination_id":"`+moveDst+`","policy":{"minAgeDays":30}}`)
	if x["status"] != "completed" || x["completed"] != float64(6) || x["bytes_removed"] == float64(0) || x["bytes_preserved"] == float64(0) {
		t.Fatalf("migrate: %v", x)
	}
	if left, _ := os.ReadDir(root); len(left) != 0 {
		t.Fatalf("%d originals left after the move", len(left))
	}
	for name, sha := range shas {
		if fileSHA(filepath.Join(moveDir, "moved", name)) != sha {
			t.Fatalf("%s not moved", name)
		}
	}
	ms = manifestsByObject(t, e)
	for name := range shas {
		if r := relations(ms[name]); !r["moved_to"] || !r["preserved_as"] || !r["copied_to"] {
			t.Fatalf("lineage of %s: %v", name, r)
		}
	}

	// Restore a vault copy to the export destination, at a path of our choosing.
	var list struct {
		Data []map[string]any `json:"data"`
	}
	cx := "?connection_id=" + e.creds.ConnectionID
	json.Unmarshal(e.do("GET", "/v1/vault/objects"+cx, "", e.key()...).body, &list)
	vo := list.Data[0]
	r := e.do("POST", "/v1/vault/objects/"+vo["id"].(string)+"/restore"+cx, `{"destination_id":"`+exportDst+`","path":"restored/again.txt"}`, e.key()...)
	if r.status != 201 {
		t.Fatalf("restore plan: %d %s", r.status, r.body)
	}
	p := r.json(t)
	if p["destination"].(map[string]any)["destinationId"] != exportDst {
		t.Fatalf("restore plan destination: %v", p["destination"])
	}
	_, x = authorizeAndRun(t, e, p)
	if x["status"] != "completed" || fileSHA(filepath.Join(exportDir, "restored", "again.txt")) != vo["sha256"] {
		t.Fatalf("restore to a destination: %v", x)
	}
	checkProblem(t, e.do("POST", "/v1/vault/objects/"+vo["id"].(string)+"/restore"+cx, `{"destination_id":"dst_01JD0000000000000000000000"}`, e.key()...), 404, "not_found")

	// The streamed REST bundle holds the same manifests as the one Connect builds.
	rest := manifestsByObject(t, e)
	c := svcv1connect.NewVaultServiceClient(e.connectClient("Authorization", "Bearer "+e.creds.TestAPIKey), e.ts.URL)
	res, err := c.ExportManifests(context.Background(), connect.NewRequest(&svcv1.ExportManifestsRequest{ConnectionId: proto.String(e.creds.ConnectionID)}))
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Msg.GetManifests(); len(got) != len(rest) || len(got) == 0 {
		t.Fatalf("connect bundle has %d manifests, REST %d", len(got), len(rest))
	}
	for _, m := range res.Msg.GetManifests() {
		if rest[m.GetSource().GetObjectId()]["hash"] != m.GetHash() {
			t.Fatalf("manifest %s differs between REST and Connect", m.GetAssetId())
		}
	}
}
