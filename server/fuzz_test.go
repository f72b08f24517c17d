package server_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
)

// restPaths are templates of every REST route plus some that do not exist; {id} takes the
// fuzzed id.
var restPaths = []string{
	"/v1/events", "/v1/webhooks", "/v1/plans", "/v1/intel/meters/{id}/action", "/v1/account",
	"/v1/developer/orgs", "/v1/account/export", "/v1/intel/meters", "/v1/executions", "/v1/creator/items",
	"/v1/vault/search", "/v1/creator/anomalies", "/v1/billing/portal", "/v1/developer/applications/{id}/audit",
	"/v1/creator/sources", "/v1/vault/manifests/export", "/v1/receipts/{id}", "/v1/connect/{id}/callback",
	"/v1/vault/objects/{id}/restore", "/v1/intel/trials/{id}/decision", "/v1/sources/{id}/policy",
	"/v1/auth/sign-up", "/v1/auth/sign-in", "/v1/auth/sign-out", "/v1/plans/{id}", "/v1/plans/{id}/authorize",
	"/v1/plans/{id}/cancel", "/v1/sources", "/v1/sources/{id}", "/v1/{id}", "/{id}", "/svc.v1.PlanService/ListPlans",
	"/v1/destinations", "/v1/destinations/{id}", "/v1/vault/objects/{id}/content",
}

var restMethods = []string{"GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"}

// FuzzREST drives the REST request path with arbitrary methods, paths, ids, queries, bodies
// and headers: the server must never answer 500 (501 is a defined answer), and every 4xx and
// 5xx is a well-formed problem document.
func FuzzREST(f *testing.F) {
	e := newEnv(f)
	f.Add(uint8(2), uint8(0), "", "connection_id="+e.creds.ConnectionID, "", "", uint8(1), "")
	f.Add(uint8(1), uint8(5), "", "", `{"name":"Acme"}`, "application/json", uint8(2), "k1")
	f.Add(uint8(3), uint8(4), "", "", `{"display_name":null,"locale":"es"}`, "application/json", uint8(2), "")
	f.Add(uint8(1), uint8(3), "mtr_01JD0000000000000000000000", "", `{"action":"watch","limit_cents":-1}`, "application/json", uint8(1), "")
	f.Add(uint8(2), uint8(20), "src_01JD0000000000000000000000", "", `{"minAgeDays":"x"}`, "application/json", uint8(1), "")
	f.Add(uint8(0), uint8(2), "", "limit=0&cursor=%ff&state=draft,draft", "", "", uint8(1), "")
	f.Add(uint8(0), uint8(17), "vendor_a_mail", "code=x&state=y", "", "", uint8(2), "")
	f.Add(uint8(1), uint8(2), "", "connection_id="+e.creds.ConnectionID, `{"intent":"rescue","policy":{"minAgeDays":3}}`, "application/json", uint8(1), "")
	f.Add(uint8(1), uint8(28), "pln_01JD0000000000000000000000", "connection_id="+e.creds.ConnectionID, `{"plan_hash":"00"}`, "application/json", uint8(1), "")
	f.Add(uint8(1), uint8(21), "", "", `{"email":"a@b.co","password":"`+strings.Repeat("p", 20)+`"}`, "application/json; charset=utf-8", uint8(0), "")
	f.Add(uint8(1), uint8(5), "", "", `[1,2,3]`, "text/plain", uint8(2), strings.Repeat("x", 300))
	f.Fuzz(func(t *testing.T, mi, pi uint8, pathID, query, body, ctype string, cred uint8, idemKey string) {
		path := strings.ReplaceAll(restPaths[int(pi)%len(restPaths)], "{id}", url.PathEscape(pathID))
		target := path
		if query != "" {
			target += "?" + query
		}
		req, err := http.NewRequest(restMethods[int(mi)%len(restMethods)], "http://svc.test"+target, strings.NewReader(body))
		if err != nil {
			return
		}
		if ctype != "" {
			req.Header.Set("Content-Type", ctype)
		}
		if idemKey != "" && !strings.ContainsAny(idemKey, "\r\n\x00") {
			req.Header.Set("Idempotency-Key", idemKey)
		}
		switch cred % 3 {
		case 1:
			req.Header.Set("Authorization", "Bearer "+e.creds.TestAPIKey)
		case 2:
			req.Header.Set("Cookie", "svc_session="+e.creds.SessionCookie)
		}
		rec := httptest.NewRecorder()
		e.srv.Handler().ServeHTTP(rec, req)
		if rec.Code >= 500 && rec.Code != http.StatusNotImplemented {
			t.Fatalf("%s %s -> %d: %s", req.Method, target, rec.Code, rec.Body)
		}
		if rec.Code < 400 || req.Method == "HEAD" || strings.HasPrefix(path, "/svc.v1.") {
			return
		}
		if ct := rec.Header().Get("Content-Type"); ct != "application/problem+json" {
			t.Fatalf("%s %s -> %d with Content-Type %q: %s", req.Method, target, rec.Code, ct, rec.Body)
		}
		var p struct {
			Type, Title, Code, RequestID string
			Status                       int
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &p); err != nil || p.Status != rec.Code || p.Code == "" || p.Type == "" || p.Title == "" {
			t.Fatalf("%s %s -> %d: not a problem document: %s", req.Method, target, rec.Code, rec.Body)
		}
	})
}
