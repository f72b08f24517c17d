package server_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"

	"google.golang.org/genproto/googleapis/api/annotations"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	"svc.dev/svc/platform"
)

// restPaths are the templates of every REST route of the protos (each path variable becomes
// {id}, the fuzzed id) plus paths that do not exist.
var restPaths = func() []string {
	paths := []string{"/v1/{id}", "/{id}", "/svc.v1.PlanService/ListPlans", "/v1/openapi.json", "/.well-known/svc-receipts.json"}
	vars := regexp.MustCompile(`\{[a-z_]+\}`)
	protoregistry.GlobalFiles.RangeFilesByPackage("svc.v1", func(fd protoreflect.FileDescriptor) bool {
		for i := range fd.Services().Len() {
			ms := fd.Services().Get(i).Methods()
			for j := range ms.Len() {
				rule, _ := proto.GetExtension(ms.Get(j).Options(), annotations.E_Http).(*annotations.HttpRule)
				for _, p := range []string{rule.GetGet(), rule.GetPost(), rule.GetPut(), rule.GetPatch(), rule.GetDelete()} {
					if p != "" && !slices.Contains(paths, vars.ReplaceAllString(p, "{id}")) {
						paths = append(paths, vars.ReplaceAllString(p, "{id}"))
					}
				}
			}
		}
		return true
	})
	slices.Sort(paths)
	return paths
}()

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
	ctx := context.Background()
	_, narrowKey, err := e.srv.Developers().CreateKey(ctx, e.creds.ApplicationID, platform.ModeTest, []string{"discover"})
	if err != nil {
		f.Fatal(err)
	}
	revoked, err := e.srv.Developers().Connect(ctx, e.creds.ApplicationID, e.creds.UserID, platform.ModeTest, platform.Grant{OperationClasses: []string{"discover"}})
	if err != nil {
		f.Fatal(err)
	}
	e.srv.Developers().Revoke(ctx, revoked.ID)
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
		// Every kind of credential: none, test key, session, live key, session in test mode, a
		// key with narrower scopes, a key through the connection, through a revoked connection,
		// and a malformed one.
		cx := func(id string) {
			q := req.URL.Query()
			q.Set("connection_id", id)
			req.URL.RawQuery = q.Encode()
		}
		switch cred % 9 {
		case 1:
			req.Header.Set("Authorization", "Bearer "+e.creds.TestAPIKey)
		case 2:
			req.Header.Set("Cookie", "svc_session="+e.creds.SessionCookie)
		case 3:
			req.Header.Set("Authorization", "Bearer "+e.creds.LiveAPIKey)
		case 4:
			req.Header.Set("Cookie", "svc_session="+e.creds.SessionCookie)
			req.Header.Set("Svc-Mode", "test")
		case 5:
			req.Header.Set("Authorization", "Bearer "+narrowKey)
		case 6:
			req.Header.Set("Authorization", "Bearer "+e.creds.TestAPIKey)
			cx(e.creds.ConnectionID)
		case 7:
			req.Header.Set("Authorization", "Bearer "+e.creds.TestAPIKey)
			cx(revoked.ID)
		case 8:
			req.Header.Set("Authorization", "Bearer sk_test_"+pathID)
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
