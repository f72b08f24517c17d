package server_test

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
)

// Creator revenue over REST: a statement source, a statement (a bad one refused naming its
// row), a reconcile job, the items and anomalies it kept, an anomaly dismissed and reopened;
// the source's listing never shows credentials.
func TestCreatorRevenueOverREST(t *testing.T) {
	e := newEnv(t)
	cx := "?connection_id=" + e.creds.ConnectionID
	r := e.do("POST", "/v1/creator/sources"+cx, `{"kind":"statement","label":"Patreonish"}`, e.key()...)
	if r.status != 201 || r.json(t)["status"] != "connected" {
		t.Fatalf("create: %d %s", r.status, r.body)
	}
	id := r.json(t)["id"].(string)
	csv, err := os.ReadFile("../creator/testdata/handwritten/statements/patreonish.csv")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := json.Marshal(map[string]string{"name": "patreonish.csv", "csv": string(csv)})
	if r := e.do("POST", "/v1/creator/sources/"+id+"/statements"+cx, string(body), e.key()...); r.status != 201 {
		t.Fatalf("statement: %d %s", r.status, r.body)
	}
	bad, _ := json.Marshal(map[string]string{"name": "bad.csv", "csv": strings.Replace(string(csv), "5.120,40", "-5.120,40", 1)})
	p := checkProblem(t, e.do("POST", "/v1/creator/sources/"+id+"/statements"+cx, string(bad), e.key()...), 400, "validation_failed")
	if !strings.Contains(string(mustJSON(t, p)), "csv") {
		t.Errorf("the refusal does not name the csv: %v", p)
	}
	j := e.do("POST", "/v1/creator/sync"+cx, "", e.key()...)
	if j.status != 202 {
		t.Fatalf("sync: %d %s", j.status, j.body)
	}
	done := e.waitJob(t, j.json(t)["id"].(string), e.key())
	if done["status"] != "succeeded" {
		t.Fatalf("reconcile job: %v", done)
	}
	items := e.do("GET", "/v1/creator/items"+cx+"&creator_source_id="+id, "", e.key()...)
	if items.status != 200 || len(items.json(t)["data"].([]any)) < 6 {
		t.Fatalf("items: %d %s", items.status, items.body)
	}
	first := items.json(t)["data"].([]any)[0].(map[string]any)
	if r := e.do("GET", "/v1/creator/items/"+first["id"].(string)+cx, "", e.key()...); r.status != 200 {
		t.Fatalf("item: %d %s", r.status, r.body)
	}
	as := e.do("GET", "/v1/creator/anomalies"+cx, "", e.key()...)
	if as.status != 200 {
		t.Fatalf("anomalies: %d %s", as.status, as.body)
	}
	if data := as.json(t)["data"].([]any); len(data) > 0 {
		aid := data[0].(map[string]any)["id"].(string)
		if r := e.do("POST", "/v1/creator/anomalies/"+aid+"/dismiss"+cx, "", e.key()...); r.status != 200 || r.json(t)["status"] != "dismissed" {
			t.Fatalf("dismiss: %d %s", r.status, r.body)
		}
		if r := e.do("POST", "/v1/creator/anomalies/"+aid+"/reopen"+cx, "", e.key()...); r.status != 200 || r.json(t)["status"] != "open" {
			t.Fatalf("reopen: %d %s", r.status, r.body)
		}
	}
	srcs := e.do("GET", "/v1/creator/sources"+cx, "", e.key()...)
	if srcs.status != 200 || strings.Contains(string(srcs.body), "credentials") {
		t.Fatalf("sources: %d %s", srcs.status, srcs.body)
	}
}

// The dev seed connects a statement source and reconciles it: --dev shows revenue items and
// the fee change of June as an open anomaly.
func TestDevSeedHasCreatorRevenue(t *testing.T) {
	e := newEnv(t)
	cx := "?connection_id=" + e.creds.ConnectionID
	items := e.do("GET", "/v1/creator/items"+cx, "", e.key()...)
	if items.status != 200 || len(items.json(t)["data"].([]any)) < 7 {
		t.Fatalf("items: %d %s", items.status, items.body)
	}
	as := e.do("GET", "/v1/creator/anomalies"+cx+"&status=open", "", e.key()...)
	found := false
	for _, a := range as.json(t)["data"].([]any) {
		found = found || a.(map[string]any)["kind"] == "fee_change"
	}
	if !found {
		t.Fatalf("no open fee_change in %s", as.body)
	}
}
