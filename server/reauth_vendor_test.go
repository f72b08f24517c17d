package server_test

import (
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"svc.dev/svc/internal/vendorfake/gmail"
	"svc.dev/svc/providers"
	"svc.dev/svc/providers/builtin"
	"svc.dev/svc/providers/vendorhttp"
	"svc.dev/svc/server"
)

// The whole chain of a revoked grant with the real Gmail connector (issue 25, 4): a user
// connects their mailbox at the Gmail fake through OAuth (PKCE, the code exchange, the token
// sealed in the source); a plan works; the user revokes svc at the provider, so the access
// token fails and its refresh is invalid_grant; the next plan is a provider_error, the source
// is reauth_required, svc.source.reauth_required is emitted once, and no token is in the log.
func TestRevokedGrantTurnsSourceReauthRequired(t *testing.T) {
	gm := gmail.Start(gmail.Options{Messages: 12, Seed: 7})
	t.Cleanup(gm.Close)
	fake := gm.Config()
	reg, err := builtin.Registry(builtin.Options{Vendors: true, Defaults: func(name providers.Name) providers.Config {
		if name != providers.VendorAMail {
			return nil
		}
		return providers.Config{vendorhttp.KeyClientID: fake["client_id"], vendorhttp.KeyClientSecret: fake["client_secret"],
			vendorhttp.KeyTokenURL: fake["token_url"], "endpoint": fake["endpoint"], "quota_per_minute": "off"}
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { reg.Close() })
	logs := &lockedLog{}
	e := newEnv(t, func(c *server.Config) {
		c.Providers = reg
		c.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
		c.OAuth = map[providers.Name]server.OAuthProvider{providers.VendorAMail: {AuthURL: gm.URL() + "/authorize",
			TokenURL: fake["token_url"], ClientID: fake["client_id"], ClientSecret: fake["client_secret"], DisplayName: "Vendor A Mail"}}
	})
	r := e.do("POST", "/v1/provider-authorizations", `{"provider":"vendor_a_mail"}`, e.session()...)
	if r.status != 201 {
		t.Fatalf("start: %d %s", r.status, r.body)
	}
	id := r.json(t)["id"].(string)
	jar, _ := cookiejar.New(nil)
	u, _ := url.Parse(e.ts.URL)
	jar.SetCookies(u, []*http.Cookie{{Name: "svc_session", Value: e.creds.SessionCookie, Path: "/"}})
	br := &http.Client{Jar: jar, Timeout: 20 * time.Second}
	res, err := br.Get(e.ts.URL + "/connect/" + id)
	if err != nil {
		t.Fatal(err)
	}
	page := readBody(res)
	token := regexp.MustCompile(`name="csrf_token" value="([0-9a-f]{64})"`).FindStringSubmatch(page)
	if token == nil {
		t.Fatalf("page:\n%s", page)
	}
	if res, err = br.PostForm(e.ts.URL+"/connect/"+id+"/provider", url.Values{"csrf_token": {token[1]}}); err != nil || res.StatusCode != 200 {
		t.Fatalf("provider round trip: %v %v", err, res)
	}
	res.Body.Close()
	srcID, _ := e.do("GET", "/v1/provider-authorizations/"+id, "", e.session()...).json(t)["source_id"].(string)
	if srcID == "" {
		t.Fatal("no source connected")
	}
	plan := `{"intent":"rescue","source_ids":["` + srcID + `"]}`
	if r := e.do("POST", "/v1/plans", plan, e.session()...); r.status != 201 {
		t.Fatalf("plan with a working token: %d %s", r.status, r.body)
	}

	gm.Revoke()
	checkProblem(t, e.do("POST", "/v1/plans", plan, e.session()...), 502, "provider_error")
	src := e.do("GET", "/v1/sources/"+srcID, "", e.session()...).json(t)
	if src["status"] != "reauth_required" {
		t.Fatalf("source after the revocation: %v", src)
	}
	events := e.do("GET", "/v1/events?types=svc.source.reauth_required", "", e.session()...).json(t)["data"].([]any)
	if len(events) != 1 || events[0].(map[string]any)["subject"] != srcID {
		t.Fatalf("events: %v", events)
	}
	// A second refusal changes nothing more: one event.
	e.do("POST", "/v1/plans", plan, e.session()...)
	if n := len(e.do("GET", "/v1/events?types=svc.source.reauth_required", "", e.session()...).json(t)["data"].([]any)); n != 1 {
		t.Fatalf("%d reauth events after a second refusal", n)
	}
	if !strings.Contains(logs.String(), "request failed") {
		t.Fatalf("the refusal was not logged, so the log proves nothing:\n%s", logs.String())
	}
	for _, secret := range []string{"fake-access-", "fake-refresh-", fake["client_secret"]} {
		if strings.Contains(logs.String(), secret) {
			t.Fatalf("the log holds %q:\n%s", secret, logs.String())
		}
	}
}

// lockedLog is a log sink safe for concurrent writers.
type lockedLog struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func readBody(res *http.Response) string {
	defer res.Body.Close()
	var b strings.Builder
	buf := make([]byte, 32<<10)
	for {
		n, err := res.Body.Read(buf)
		b.Write(buf[:n])
		if err != nil {
			return b.String()
		}
	}
}
