package server_test

import (
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// signUp creates an account and returns its session cookie header.
func (e *env) signUp(t *testing.T, email string) []string {
	t.Helper()
	r := e.do("POST", "/v1/auth/sign-up", `{"email":"`+email+`","password":"correct horse battery"}`)
	if r.status != 201 {
		t.Fatalf("sign-up: %d %s", r.status, r.body)
	}
	return []string{"Cookie", sessionCookie(t, r)}
}

func sessionCookie(t *testing.T, r *resp) string {
	t.Helper()
	for _, c := range (&http.Response{Header: r.header}).Cookies() {
		if c.Name == "svc_session" {
			if !c.HttpOnly || c.SameSite != http.SameSiteLaxMode || c.Path != "/" {
				t.Errorf("session cookie attributes: %+v", c)
			}
			return c.Name + "=" + c.Value
		}
	}
	t.Fatalf("no svc_session cookie in %v", r.header)
	return ""
}

func TestSessions(t *testing.T) {
	e := newEnv(t)
	cookie := e.signUp(t, "Ann@Example.com")
	r := e.do("GET", "/v1/account", "", cookie...)
	if r.status != 200 || r.json(t)["email"] != "Ann@Example.com" {
		t.Fatalf("account: %d %s", r.status, r.body)
	}
	// Emails are unique, case-insensitively.
	r = e.do("POST", "/v1/auth/sign-up", `{"email":"ann@example.com","password":"another long password"}`)
	checkProblem(t, r, 409, "conflict")

	r = e.do("POST", "/v1/auth/sign-in", `{"email":"ann@example.com","password":"wrong password"}`)
	checkProblem(t, r, 401, "unauthenticated")
	r = e.do("POST", "/v1/auth/sign-in", `{"email":"nobody@example.com","password":"wrong password"}`)
	checkProblem(t, r, 401, "unauthenticated")
	r = e.do("POST", "/v1/auth/sign-in", `{"email":"ann@example.com","password":"correct horse battery"}`)
	if r.status != 200 {
		t.Fatalf("sign-in: %d %s", r.status, r.body)
	}
	second := []string{"Cookie", sessionCookie(t, r)}

	// Signing out ends that session only.
	r = e.do("POST", "/v1/auth/sign-out", "", second...)
	if r.status != 204 || len(r.body) != 0 {
		t.Fatalf("sign-out: %d %s", r.status, r.body)
	}
	checkProblem(t, e.do("GET", "/v1/account", "", second...), 401, "unauthenticated")
	if r := e.do("GET", "/v1/account", "", cookie...); r.status != 200 {
		t.Fatalf("first session ended too: %d", r.status)
	}
	// Sessions expire.
	e.clock.Advance(15 * 24 * time.Hour)
	checkProblem(t, e.do("GET", "/v1/account", "", cookie...), 401, "unauthenticated")
}

func TestUpdateAccountAndOrgs(t *testing.T) {
	e := newEnv(t)
	cookie := e.signUp(t, "bo@example.com")
	r := e.do("PATCH", "/v1/account", `{"display_name":"Bo","locale":"es"}`, cookie...)
	a := r.json(t)
	if r.status != 200 || a["display_name"] != "Bo" || a["locale"] != "es" {
		t.Fatalf("patch: %d %s", r.status, r.body)
	}
	// Absent fields are left alone; an empty display name clears it.
	r = e.do("PATCH", "/v1/account", `{"display_name":""}`, cookie...)
	a = r.json(t)
	if a["display_name"] != nil || a["locale"] != "es" {
		t.Fatalf("clear: %s", r.body)
	}
	r = e.do("PATCH", "/v1/account", `{"display_name":"`+strings.Repeat("x", 81)+`"}`, cookie...)
	checkProblem(t, r, 400, "validation_failed")

	r = e.do("POST", "/v1/developer/orgs", `{"name":"Acme"}`, cookie...)
	o := r.json(t)
	if r.status != 201 || o["name"] != "Acme" || o["status"] != "active" || !strings.HasPrefix(o["id"].(string), "org_") {
		t.Fatalf("create org: %d %s", r.status, r.body)
	}
	r = e.do("GET", "/v1/account", "", cookie...)
	dev, _ := r.json(t)["developer"].(map[string]any)
	if ids, _ := dev["org_ids"].([]any); len(ids) != 1 || ids[0] != o["id"] {
		t.Fatalf("account does not list the org: %s", r.body)
	}
}

func TestCSRF(t *testing.T) {
	e := newEnv(t)
	cookie := e.session()
	body := `{"locale":"en"}`
	for name, hdr := range map[string][]string{
		"cross-site fetch": {"Sec-Fetch-Site", "cross-site"},
		"same-site fetch":  {"Sec-Fetch-Site", "same-site"},
		"foreign Origin":   {"Origin", "https://evil.example"},
	} {
		r := e.do("PATCH", "/v1/account", body, with(cookie, hdr...)...)
		if r.status != 403 {
			t.Errorf("%s: status %d, want 403", name, r.status)
		}
		checkProblem(t, r, 403, "forbidden")
	}
	// Same-origin browser requests and non-browser clients pass.
	if r := e.do("PATCH", "/v1/account", body, with(cookie, "Sec-Fetch-Site", "same-origin")...); r.status != 200 {
		t.Errorf("same-origin: %d %s", r.status, r.body)
	}
	if r := e.do("PATCH", "/v1/account", body, cookie...); r.status != 200 {
		t.Errorf("no browser headers: %d %s", r.status, r.body)
	}
	// Reads are not mutations, and API keys are not cookies.
	if r := e.do("GET", "/v1/account", "", with(cookie, "Sec-Fetch-Site", "cross-site")...); r.status != 200 {
		t.Errorf("cross-site GET: %d", r.status)
	}
	if r := e.do("GET", e.plansPath(), "", with(e.key(), "Sec-Fetch-Site", "cross-site")...); r.status != 200 {
		t.Errorf("API key cross-site: %d", r.status)
	}
}

var _ sync.Mutex
