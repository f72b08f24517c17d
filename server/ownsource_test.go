package server_test

import (
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"svc.dev/svc/server"
)

// signUp makes another end user and returns their session header.
func signUp(t *testing.T, e interface {
	do(method, path, body string, hdr ...string) *resp
}, email string) []string {
	t.Helper()
	r := e.do("POST", "/v1/auth/sign-up", `{"email":"`+email+`","password":"correct horse battery staple"}`)
	if r.status != 201 {
		t.Fatalf("sign up: %d %s", r.status, r.body)
	}
	for _, c := range (&http.Response{Header: r.header}).Cookies() {
		if c.Name == "svc_session" {
			return []string{"Cookie", "svc_session=" + c.Value}
		}
	}
	t.Fatal("sign up set no session cookie")
	return nil
}

// A signed-in user connects a folder under one of the server's local roots; everything else
// (no roots, outside the roots, a link out of them, a relative path, a file, test mode, an API
// key) is refused with a problem and records nothing.
func TestCreateSourceLocalFolder(t *testing.T) {
	root := t.TempDir()
	elsewhere := t.TempDir()
	for _, d := range []string{filepath.Join(root, "photos"), filepath.Join(elsewhere, "secret")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(d, "a.txt"), []byte("a"), 0o600)
	}
	if err := os.Symlink(filepath.Join(elsewhere, "secret"), filepath.Join(root, "escape")); err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, func(c *server.Config) { c.LocalRoots = []string{root} })
	count := func(hdr []string) int {
		r := e.do("GET", "/v1/sources?provider=vendor_d_local", "", hdr...)
		if r.status != 200 {
			t.Fatalf("list sources: %d %s", r.status, r.body)
		}
		return len(r.json(t)["data"].([]any))
	}
	before := count(e.session())
	refusals := map[string]struct {
		body, path string
		hdr        []string
	}{
		"outside the roots":  {`{"provider":"vendor_d_local","path":"` + filepath.Join(elsewhere, "secret") + `"}`, "path", nil},
		"a link out of them": {`{"provider":"vendor_d_local","path":"` + filepath.Join(root, "escape") + `"}`, "path", nil},
		"dot-dot out":        {`{"provider":"vendor_d_local","path":"` + root + `/../` + filepath.Base(elsewhere) + `"}`, "path", nil},
		"relative":           {`{"provider":"vendor_d_local","path":"photos"}`, "path", nil},
		"missing":            {`{"provider":"vendor_d_local","path":"` + filepath.Join(root, "nope") + `"}`, "path", nil},
		"a file":             {`{"provider":"vendor_d_local","path":"` + filepath.Join(root, "photos", "a.txt") + `"}`, "path", nil},
		"no path":            {`{"provider":"vendor_d_local"}`, "path", nil},
		"bucket fields":      {`{"provider":"vendor_d_local","path":"` + root + `","url":"s3://h/b"}`, "provider", nil},
		"an OAuth provider":  {`{"provider":"vendor_a_mail"}`, "provider", nil},
		"test mode":          {`{"provider":"vendor_d_local","path":"` + root + `"}`, "provider", []string{"Svc-Mode", "test"}},
	}
	for name, c := range refusals {
		r := e.do("POST", "/v1/sources", c.body, append(e.session(), c.hdr...)...)
		if p := checkProblem(t, r, 400, "validation_failed"); errorPath(t, p) != c.path {
			t.Errorf("%s: path %q, want %q: %s", name, errorPath(t, p), c.path, r.body)
		}
	}
	checkProblem(t, e.do("POST", "/v1/sources", `{"provider":"vendor_d_local","path":"`+root+`"}`, e.key()...), 403, "forbidden")
	checkProblem(t, e.do("POST", "/v1/sources", `{"provider":"vendor_d_local","path":"`+root+`"}`), 401, "unauthenticated")
	if n := count(e.session()); n != before {
		t.Fatalf("refusals recorded sources: %d, then %d", before, n)
	}

	r := e.do("POST", "/v1/sources", `{"provider":"vendor_d_local","path":"`+filepath.Join(root, "photos")+`","display_name":"My photos"}`, e.session()...)
	if r.status != 201 {
		t.Fatalf("connect folder: %d %s", r.status, r.body)
	}
	src := r.json(t)
	id, _ := src["id"].(string)
	if !strings.HasPrefix(id, "src_") || src["provider"] != "vendor_d_local" || src["kind"] != "folder" || src["status"] != "connected" ||
		src["display_name"] != "My photos" || src["simulated"] != false {
		t.Fatalf("source: %v", src)
	}
	if count(e.session()) != before+1 {
		t.Fatal("the folder is not listed")
	}
	if r := e.do("GET", "/v1/sources/"+id, "", e.session()...); r.status != 200 {
		t.Fatalf("own source: %d", r.status)
	}
	// Another user does not see it: not found, not forbidden.
	other := signUp(t, e, "bea@example.com")
	checkProblem(t, e.do("GET", "/v1/sources/"+id, "", other...), 404, "not_found")
	// A replay with the same Idempotency-Key makes no second source.
	body := `{"provider":"vendor_d_local","path":"` + root + `"}`
	first := e.do("POST", "/v1/sources", body, with(e.session(), "Idempotency-Key", "folder-1")...)
	again := e.do("POST", "/v1/sources", body, with(e.session(), "Idempotency-Key", "folder-1")...)
	if first.status != 201 || again.status != 201 || again.header.Get("Idempotent-Replayed") != "true" || count(e.session()) != before+2 {
		t.Fatalf("idempotent replay: %d %d %q", first.status, again.status, again.header.Get("Idempotent-Replayed"))
	}
}

// Without --local-root a server connects no local folder for its users.
func TestCreateSourceNoLocalRoots(t *testing.T) {
	e := newEnv(t)
	r := e.do("POST", "/v1/sources", `{"provider":"vendor_d_local","path":"`+t.TempDir()+`"}`, e.session()...)
	if p := checkProblem(t, r, 400, "validation_failed"); errorPath(t, p) != "path" || !strings.Contains(string(r.body), "--local-root") {
		t.Fatalf("%s", r.body)
	}
}

// A bucket URL is read strictly, and a hosted server (not --dev) reaches no loopback or
// private address for a user.
func TestCreateSourceBucketRefusals(t *testing.T) {
	e := newEnv(t)
	cred := `,"access_key_id":"AK","secret_access_key":"SK"`
	cases := map[string]struct{ body, path string }{
		"not s3":          {`{"provider":"object_store_compatible","url":"https://h.example/b"` + cred + `}`, "url"},
		"no bucket":       {`{"provider":"object_store_compatible","url":"s3://h.example/"` + cred + `}`, "url"},
		"user info":       {`{"provider":"object_store_compatible","url":"s3://ak:sk@h.example/b"` + cred + `}`, "url"},
		"bad port":        {`{"provider":"object_store_compatible","url":"s3://h.example:99999/b"` + cred + `}`, "url"},
		"no url":          {`{"provider":"object_store_compatible"` + cred + `}`, "url"},
		"no key":          {`{"provider":"object_store_compatible","url":"s3://203.0.113.9/b","secret_access_key":"SK"}`, "access_key_id"},
		"no secret":       {`{"provider":"object_store_compatible","url":"s3://203.0.113.9/b","access_key_id":"AK"}`, "secret_access_key"},
		"loopback":        {`{"provider":"object_store_compatible","url":"s3://127.0.0.1:9000/b"` + cred + `}`, "url"},
		"localhost":       {`{"provider":"object_store_compatible","url":"s3://localhost:9000/b"` + cred + `}`, "url"},
		"private":         {`{"provider":"object_store_compatible","url":"s3://10.1.2.3/b"` + cred + `}`, "url"},
		"link-local":      {`{"provider":"object_store_compatible","url":"s3://169.254.169.254/b"` + cred + `}`, "url"},
		"mapped loopback": {`{"provider":"object_store_compatible","url":"s3://[::ffff:127.0.0.1]/b"` + cred + `}`, "url"},
		"insecure public": {`{"provider":"object_store_compatible","url":"s3://203.0.113.9/b","insecure":true` + cred + `}`, "insecure"},
		"a path":          {`{"provider":"object_store_compatible","url":"s3://203.0.113.9/b","path":"/x"` + cred + `}`, "path"},
	}
	for name, c := range cases {
		r := e.do("POST", "/v1/sources", c.body, e.session()...)
		if p := checkProblem(t, r, 400, "validation_failed"); errorPath(t, p) != c.path {
			t.Errorf("%s: path %q, want %q: %s", name, errorPath(t, p), c.path, r.body)
		}
	}
}

// A signed-in user connects their own provider account through OAuth: the API answers with a
// page to open; the same user, signed in there, continues to the provider; the callback
// connects the source and the authorization says so. Another user, test mode, a key and a
// provider without OAuth configuration are refused.
func TestProviderAuthorizationEndToEnd(t *testing.T) {
	e := newConnectEnv(t)
	b := e.browser(t)
	signIn := b.post("/connect/csn_00000000000000000000000000/sign-in", url.Values{"email": {e.anaEmail}, "password": {e.anaPass}})
	if signIn.status != 404 {
		t.Fatalf("sign-in on an unknown request: %d", signIn.status)
	}
	login := e.do("POST", "/v1/auth/sign-in", `{"email":"`+e.anaEmail+`","password":"`+e.anaPass+`"}`)
	if login.status != 200 {
		t.Fatalf("sign in: %d %s", login.status, login.body)
	}
	var ana []string
	for _, c := range (&http.Response{Header: login.header}).Cookies() {
		if c.Name == "svc_session" {
			ana = []string{"Cookie", "svc_session=" + c.Value}
		}
	}

	checkProblem(t, e.do("POST", "/v1/provider-authorizations", `{"provider":"vendor_a_mail"}`, with(ana, "Svc-Mode", "test")...), 400, "validation_failed")
	checkProblem(t, e.do("POST", "/v1/provider-authorizations", `{"provider":"vendor_b_mail"}`, ana...), 400, "validation_failed")
	checkProblem(t, e.do("POST", "/v1/provider-authorizations", `{"provider":"vendor_a_mail"}`, e.key()...), 403, "forbidden")

	r := e.do("POST", "/v1/provider-authorizations", `{"provider":"vendor_a_mail"}`, ana...)
	if r.status != 201 {
		t.Fatalf("start: %d %s", r.status, r.body)
	}
	az := r.json(t)
	id, _ := az["id"].(string)
	pageURL, _ := az["url"].(string)
	if !strings.HasPrefix(id, "csn_") || az["status"] != "pending" || az["provider"] != "vendor_a_mail" || az["source_id"] != nil ||
		pageURL != e.ts.URL+"/connect/"+id {
		t.Fatalf("authorization: %v", az)
	}
	other := signUp(t, e, "bea@example.com")
	checkProblem(t, e.do("GET", "/v1/provider-authorizations/"+id, "", other...), 404, "not_found")
	checkProblem(t, e.do("GET", "/v1/provider-authorizations/"+id, "", with(ana, "Svc-Mode", "test")...), 404, "not_found")

	// The page: a sign-in form first; signed in as Ana, one button to the provider.
	path := "/connect/" + id
	if r := b.get(path); r.status != 200 || !strings.Contains(string(r.body), "Sign in to connect an account") {
		t.Fatalf("signed-out page: %d\n%s", r.status, r.body)
	}
	b.signIn(e, path)
	p := b.get(path)
	mustContain(t, p, "Connect Vendor A Mail to svc", "Continue to Vendor A Mail", "Signed in as "+e.anaEmail)
	token := csrfToken(t, p)
	// Another browser signed in as another user sees nothing there.
	bea := e.browser(t)
	bea.post("/connect/"+id+"/sign-in", url.Values{"email": {"bea@example.com"}, "password": {"correct horse battery staple"}})
	if r := bea.get(path); r.status != 404 {
		t.Fatalf("another user's browser: %d", r.status)
	}
	if r := b.post(path, url.Values{"csrf_token": {token}, "decision": {"approve"}}); r.status != 400 {
		t.Fatalf("a decision on a user's own authorization: %d", r.status)
	}
	if r := b.post(path+"/provider", url.Values{"csrf_token": {token}}, "Sec-Fetch-Site", "cross-site"); r.status != 403 {
		t.Fatalf("cross-site start: %d", r.status)
	}

	done := b.post(path+"/provider", url.Values{"csrf_token": {token}})
	if done.status != 200 || len(b.callbacks) != 1 {
		t.Fatalf("provider round trip: %d %v\n%s", done.status, b.callbacks, done.body)
	}
	mustContain(t, done, "Vendor A Mail is connected")
	r = e.do("GET", "/v1/provider-authorizations/"+id, "", ana...)
	got := r.json(t)
	srcID, _ := got["source_id"].(string)
	if r.status != 200 || got["status"] != "connected" || !strings.HasPrefix(srcID, "src_") {
		t.Fatalf("after the callback: %d %v", r.status, got)
	}
	src := e.do("GET", "/v1/sources/"+srcID, "", ana...).json(t)
	if src["provider"] != "vendor_a_mail" || src["external_account_id"] != "acct-ana" || src["status"] != "connected" || src["connection_id"] != nil {
		t.Fatalf("source: %v", src)
	}
	// Over: the button is gone and a second round trip connects nothing.
	if r := b.post(path+"/provider", url.Values{"csrf_token": {token}}); r.status != 200 || e.as.exchanges != 1 {
		t.Fatalf("after the end: %d, %d exchanges", r.status, e.as.exchanges)
	}
}

// A provider's refusal is recorded on the user's own authorization, which stays pending so the
// user can try again.
func TestProviderAuthorizationRefused(t *testing.T) {
	e := newConnectEnv(t)
	e.as.deny = true
	b := e.browser(t)
	login := e.do("POST", "/v1/auth/sign-in", `{"email":"`+e.anaEmail+`","password":"`+e.anaPass+`"}`)
	var ana []string
	for _, c := range (&http.Response{Header: login.header}).Cookies() {
		if c.Name == "svc_session" {
			ana = []string{"Cookie", "svc_session=" + c.Value}
		}
	}
	id, _ := e.do("POST", "/v1/provider-authorizations", `{"provider":"vendor_a_mail"}`, ana...).json(t)["id"].(string)
	path := "/connect/" + id
	b.signIn(e, path)
	token := csrfToken(t, b.get(path))
	r := b.post(path+"/provider", url.Values{"csrf_token": {token}})
	mustContain(t, r, "Vendor A Mail did not connect (access_denied)")
	got := e.do("GET", "/v1/provider-authorizations/"+id, "", ana...).json(t)
	if got["status"] != "pending" || got["error"] != "access_denied" || got["source_id"] != nil {
		t.Fatalf("after a refusal: %v", got)
	}
}
