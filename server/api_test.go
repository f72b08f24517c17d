package server_test

import (
	"strings"
	"testing"

	"svc.dev/svc/platform"
	"svc.dev/svc/server"
)

// checkProblem asserts the RFC 9457 shape, the status and code, and the rate-limit headers.
func checkProblem(t *testing.T, r *resp, status int, code string) map[string]any {
	t.Helper()
	if r.status != status {
		t.Fatalf("status %d, want %d: %s", r.status, status, r.body)
	}
	if ct := r.header.Get("Content-Type"); ct != "application/problem+json" {
		t.Errorf("Content-Type %q, want application/problem+json", ct)
	}
	checkRateHeaders(t, r)
	p := r.json(t)
	if p["code"] != code {
		t.Errorf("code %v, want %s: %s", p["code"], code, r.body)
	}
	if p["status"] != float64(status) {
		t.Errorf("problem status %v, want %d", p["status"], status)
	}
	if typ, _ := p["type"].(string); !strings.HasSuffix(typ, "/"+code) {
		t.Errorf("type %q does not name the code %s", typ, code)
	}
	if title, _ := p["title"].(string); title == "" {
		t.Error("problem has no title")
	}
	if rid, _ := p["request_id"].(string); rid == "" || rid != r.header.Get("Request-Id") {
		t.Errorf("request_id %q does not match the Request-Id header %q", rid, r.header.Get("Request-Id"))
	}
	if _, ok := p["errors"].([]any); !ok {
		t.Errorf("problem has no errors array: %s", r.body)
	}
	return p
}

func checkRateHeaders(t *testing.T, r *resp) {
	t.Helper()
	for _, h := range []string{"RateLimit-Limit", "RateLimit-Remaining", "RateLimit-Reset"} {
		if r.header.Get(h) == "" {
			t.Errorf("response %d lacks %s", r.status, h)
		}
	}
}

func errorPath(t *testing.T, p map[string]any) string {
	t.Helper()
	errs, _ := p["errors"].([]any)
	if len(errs) == 0 {
		t.Fatalf("validation problem without errors: %v", p)
	}
	first, _ := errs[0].(map[string]any)
	return first["path"].(string)
}

func TestSuccessCarriesRateLimitHeaders(t *testing.T) {
	e := newEnv(t)
	r := e.do("GET", e.plansPath(), "", e.key()...)
	if r.status != 200 {
		t.Fatalf("status %d: %s", r.status, r.body)
	}
	checkRateHeaders(t, r)
	if got := string(r.body); got != `{"data":[],"next_cursor":null}` {
		t.Errorf("empty list is %s", got)
	}
}

func TestErrorClasses(t *testing.T) {
	e := newEnv(t)
	long := `{"name":"` + strings.Repeat("x", 2<<20) + `"}`
	cases := []struct {
		name          string
		method, path  string
		body          string
		hdr           []string
		status        int
		code, errPath string
	}{
		{"validation", "POST", "/v1/developer/orgs", `{"name":"x"}`, e.session(), 400, "validation_failed", "name"},
		{"malformed JSON", "POST", "/v1/developer/orgs", `{"name":`, e.session(), 400, "validation_failed", ""},
		{"unknown field", "POST", "/v1/developer/orgs", `{"name":"ok org","owner":"me"}`, e.session(), 400, "validation_failed", "owner"},
		{"wrong type", "PATCH", "/v1/account", `{"display_name":42}`, e.session(), 400, "validation_failed", "display_name"},
		{"bad enum", "PATCH", "/v1/account", `{"locale":"fr"}`, e.session(), 400, "validation_failed", "locale"},
		{"bad query enum", "GET", e.plansPath() + "&state=nope", "", e.key(), 400, "validation_failed", "state"},
		{"unknown query parameter", "GET", e.plansPath() + "&colour=red", "", e.key(), 400, "validation_failed", "colour"},
		{"limit too large", "GET", e.plansPath() + "&limit=201", "", e.key(), 400, "validation_failed", "limit"},
		{"limit zero", "GET", e.plansPath() + "&limit=0", "", e.key(), 400, "validation_failed", "limit"},
		{"malformed connection id", "GET", "/v1/plans?connection_id=cxn_nope", "", e.key(), 400, "validation_failed", "connection_id"},
		{"CX without connection", "GET", "/v1/plans", "", e.key(), 400, "validation_failed", "connection_id"},
		{"no credential", "GET", e.plansPath(), "", nil, 401, "unauthenticated", ""},
		{"unknown key", "GET", e.plansPath(), "", []string{"Authorization", "Bearer sk_test_nope"}, 401, "unauthenticated", ""},
		{"not bearer", "GET", e.plansPath(), "", []string{"Authorization", "Basic abc"}, 401, "unauthenticated", ""},
		{"bad session", "GET", "/v1/account", "", []string{"Cookie", "svc_session=ses_nope"}, 401, "unauthenticated", ""},
		{"key on session endpoint", "PATCH", "/v1/account", `{"locale":"en"}`, e.key(), 403, "forbidden", ""},
		{"session on key endpoint", "GET", "/v1/webhooks", "", e.session(), 403, "forbidden", ""},
		{"unknown route", "GET", "/v1/nothing", "", e.key(), 404, "not_found", ""},
		{"unknown root route", "POST", "/", "{}", nil, 404, "not_found", ""},
		{"foreign connection", "GET", "/v1/plans?connection_id=cxn_01JD0000000000000000000000", "", e.key(), 404, "not_found", ""},
		{"method not allowed", "PUT", "/v1/account", "", e.session(), 405, "method_not_allowed", ""},
		{"oversize body", "POST", "/v1/developer/orgs", long, e.session(), 413, "payload_too_large", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := e.do(c.method, c.path, c.body, c.hdr...)
			p := checkProblem(t, r, c.status, c.code)
			if c.errPath != "" {
				if got := errorPath(t, p); got != c.errPath {
					t.Errorf("errors[0].path %q, want %q", got, c.errPath)
				}
			}
		})
	}
	t.Run("wrong content type", func(t *testing.T) {
		r := e.do("POST", "/v1/developer/orgs", `name=x`, with(e.session(), "Content-Type", "application/x-www-form-urlencoded")...)
		checkProblem(t, r, 415, "unsupported_media_type")
	})
	t.Run("method not allowed names the allowed ones", func(t *testing.T) {
		r := e.do("PUT", "/v1/account", `{}`, e.session()...)
		if allow := r.header.Get("Allow"); allow != "DELETE, GET, PATCH" {
			t.Errorf("Allow %q, want \"DELETE, GET, PATCH\"", allow)
		}
	})
}

func TestRateLimited(t *testing.T) {
	e := newEnv(t, func(c *server.Config) { c.RateLimit = platform.RateLimit{Limit: 3, Window: 30e9} })
	for i := range 3 {
		r := e.do("GET", e.plansPath(), "", e.key()...)
		if r.status != 200 {
			t.Fatalf("request %d: %d %s", i, r.status, r.body)
		}
		if got, want := r.header.Get("RateLimit-Remaining"), string(rune('2'-i)); got != want {
			t.Errorf("request %d: RateLimit-Remaining %s, want %s", i, got, want)
		}
	}
	r := e.do("GET", e.plansPath(), "", e.key()...)
	checkProblem(t, r, 429, "rate_limited")
	if r.header.Get("Retry-After") != "10" {
		t.Errorf("Retry-After %q, want 10 (one request per 10 s)", r.header.Get("Retry-After"))
	}
	// Another principal has its own allowance.
	if r := e.do("GET", "/v1/account", "", e.session()...); r.status != 200 {
		t.Errorf("a session was limited by the key's allowance: %d", r.status)
	}
	// The allowance refills with time.
	e.clock.Advance(10e9)
	if r := e.do("GET", e.plansPath(), "", e.key()...); r.status != 200 {
		t.Errorf("after 10 s: %d %s", r.status, r.body)
	}
}

func TestProblemForPanicsAndUnknownRoutesIsNeverPlainText(t *testing.T) {
	e := newEnv(t)
	for _, path := range []string{"/", "/v1", "/v1/", "/v1/plans/", "/v2/plans", "/svc.v1.Nope/Nope"} {
		r := e.do("GET", path, "", e.key()...)
		if r.status != 404 && r.status != 405 {
			t.Errorf("%s: status %d", path, r.status)
		}
		if ct := r.header.Get("Content-Type"); ct != "application/problem+json" {
			t.Errorf("%s: Content-Type %q: %s", path, ct, r.body)
		}
	}
}

func TestInternalErrorLeaksNothing(t *testing.T) {
	e := newEnv(t)
	server.DBOf(e.srv).Close() // the storage engine fails under the running server
	for _, r := range []*resp{
		e.do("GET", "/v1/account", "", e.session()...),
		e.do("GET", e.plansPath(), "", e.key()...),
	} {
		p := checkProblem(t, r, 500, "internal")
		if d, _ := p["detail"].(string); strings.Contains(strings.ToLower(d), "database") || strings.Contains(d, "bolt") {
			t.Errorf("internal detail leaked: %q", d)
		}
	}
}
