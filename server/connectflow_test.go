package server_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"svc.dev/svc/platform"
	"svc.dev/svc/providers"
	"svc.dev/svc/providers/builtin"
	"svc.dev/svc/server"
)

// appRedirect is the seeded application's registered redirect URI.
const appRedirect = "http://127.0.0.1/callback"

// fakeAuthServer is a local OAuth 2.0 authorization server. /authorize approves at once and
// redirects back with a code and the state (or error=access_denied when deny is set); /token
// checks the client credentials, the redirect URI, single use of the code and the PKCE
// verifier against the S256 challenge.
type fakeAuthServer struct {
	t  *testing.T
	ts *httptest.Server

	mu            sync.Mutex
	deny          bool
	codes         map[string]*authCode
	tokens        map[string]bool // access tokens issued, and whether still valid
	authorizes    []url.Values
	exchanges     int
	pkceFailures  int
	issued        []string // access and refresh tokens, to look for in the store
	lastChallenge string
}

type authCode struct {
	challenge, redirectURI string
	used                   bool
}

const (
	oauthClientID     = "svc-client"
	oauthClientSecret = "svc-client-secret-value"
)

func newFakeAuthServer(t *testing.T) *fakeAuthServer {
	f := &fakeAuthServer{t: t, codes: map[string]*authCode{}, tokens: map[string]bool{}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /authorize", f.authorize)
	mux.HandleFunc("POST /token", f.token)
	f.ts = httptest.NewServer(mux)
	t.Cleanup(f.ts.Close)
	return f
}

func randomHex() string {
	b := make([]byte, 16)
	rand.Read(b)
	return hex.EncodeToString(b)
}

func (f *fakeAuthServer) authorize(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	f.mu.Lock()
	defer f.mu.Unlock()
	f.authorizes = append(f.authorizes, q)
	if q.Get("response_type") != "code" || q.Get("client_id") != oauthClientID || q.Get("code_challenge_method") != "S256" ||
		q.Get("code_challenge") == "" || q.Get("state") == "" || q.Get("redirect_uri") == "" {
		http.Error(w, "bad authorization request", http.StatusBadRequest)
		return
	}
	back, _ := url.Parse(q.Get("redirect_uri"))
	v := url.Values{"state": {q.Get("state")}}
	if f.deny {
		v.Set("error", "access_denied")
	} else {
		code := "code-" + randomHex()
		f.codes[code] = &authCode{challenge: q.Get("code_challenge"), redirectURI: q.Get("redirect_uri")}
		f.lastChallenge = q.Get("code_challenge")
		v.Set("code", code)
	}
	back.RawQuery = v.Encode()
	http.Redirect(w, r, back.String(), http.StatusFound)
}

func (f *fakeAuthServer) token(w http.ResponseWriter, r *http.Request) {
	fail := func(status int, code string) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		json.NewEncoder(w).Encode(map[string]string{"error": code})
	}
	if err := r.ParseForm(); err != nil {
		fail(400, "invalid_request")
		return
	}
	id, secret, ok := r.BasicAuth()
	if !ok {
		id, secret = r.PostForm.Get("client_id"), r.PostForm.Get("client_secret")
	}
	if id != oauthClientID || secret != oauthClientSecret {
		fail(401, "invalid_client")
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.exchanges++
	c := f.codes[r.PostForm.Get("code")]
	if r.PostForm.Get("grant_type") != "authorization_code" || c == nil || c.used || c.redirectURI != r.PostForm.Get("redirect_uri") {
		fail(400, "invalid_grant")
		return
	}
	c.used = true
	sum := sha256.Sum256([]byte(r.PostForm.Get("code_verifier")))
	if base64.RawURLEncoding.EncodeToString(sum[:]) != c.challenge {
		f.pkceFailures++
		fail(400, "invalid_grant")
		return
	}
	access, refresh := "at-"+randomHex(), "rt-"+randomHex()
	f.tokens[access] = true
	f.issued = append(f.issued, access, refresh)
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{"access_token": access, "token_type": "Bearer", "expires_in": 3600,
		"refresh_token": refresh, "scope": "mail.read mail.modify", "account_id": "acct-ana", "email": "ana@vendor-a.example"})
}

func (f *fakeAuthServer) valid(token string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.tokens[token]
}

// revokeAll makes every token issued so far fail, as a user revoking svc at the provider.
func (f *fakeAuthServer) revokeAll() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for k := range f.tokens {
		f.tokens[k] = false
	}
}

// oauthMail is the fake mailbox behind a provider token: it answers only while the token is
// valid at the fake authorization server, and providers.ErrPermission after.
type oauthMail struct {
	*fakeMail
	as    *fakeAuthServer
	token string
}

func (o *oauthMail) List(ctx context.Context, req providers.ListRequest) (providers.Page, error) {
	if !o.as.valid(o.token) {
		return providers.Page{}, providers.ErrPermission
	}
	return o.fakeMail.List(ctx, req)
}

func (o *oauthMail) Changes(ctx context.Context, req providers.ChangesRequest) (providers.ChangePage, error) {
	if !o.as.valid(o.token) {
		return providers.ChangePage{}, providers.ErrPermission
	}
	return o.fakeMail.Changes(ctx, req)
}

// connectEnv is an env whose vendor_a_mail provider authorizes through the fake server, and
// a fresh end user, Ana, with one simulated source in her test tenant.
type connectEnv struct {
	*env
	as       *fakeAuthServer
	dataDir  string
	anaID    string
	anaEmail string
	anaPass  string
	simSrc   string // Ana's simulated mailbox, in her test tenant
	liveSrc  string // Ana's work mailbox at vendor_a_mail, in her live tenant
}

func newConnectEnv(t *testing.T) *connectEnv {
	as := newFakeAuthServer(t)
	fake := newFakeMail(t, 6)
	reg, err := builtin.Registry(builtin.Options{})
	if err != nil {
		t.Fatal(err)
	}
	desc, _ := fake.Describe(context.Background())
	reg.Register(providers.InProcess(desc, func(_ context.Context, cfg providers.Config) (providers.Provider, error) {
		if cfg["access_token"] == "" {
			return nil, providers.ErrPermission
		}
		return &oauthMail{fakeMail: fake, as: as, token: cfg["access_token"]}, nil
	}))
	t.Cleanup(func() { reg.Close() })
	ce := &connectEnv{as: as, anaEmail: "ana@example.com", anaPass: "correct horse battery staple"}
	ce.env = newEnv(t, func(c *server.Config) {
		c.Providers = reg
		ce.dataDir = c.DataDir
		c.OAuth = map[providers.Name]server.OAuthProvider{providers.VendorAMail: {
			AuthURL: as.ts.URL + "/authorize", TokenURL: as.ts.URL + "/token", ClientID: oauthClientID, ClientSecret: oauthClientSecret,
			Scopes: []string{"mail.read", "mail.modify"}, DisplayName: "Vendor A Mail"}}
	})
	r := ce.do("POST", "/v1/auth/sign-up", `{"email":"`+ce.anaEmail+`","password":"`+ce.anaPass+`","display_name":"Ana"}`)
	if r.status != 201 {
		t.Fatalf("sign up: %d %s", r.status, r.body)
	}
	ce.anaID = r.json(t)["id"].(string)
	src, err := ce.srv.ConnectSource(context.Background(), platform.Tenant{Owner: ce.anaID, Mode: platform.ModeTest},
		server.SourceSpec{Provider: providers.Simulated, SourceRef: "mail/ana", Kind: "mail", DisplayName: "Ana's simulated mailbox",
			Config: providers.Config{"seed": "7", "objects": "50"}})
	if err != nil {
		t.Fatal(err)
	}
	ce.simSrc = src.Id
	as.tokens["at-static"] = true
	src, err = ce.srv.ConnectSource(context.Background(), platform.Tenant{Owner: ce.anaID, Mode: platform.ModeLive},
		server.SourceSpec{Provider: providers.VendorAMail, SourceRef: "work", Kind: "mail", DisplayName: "Ana's work mailbox",
			Config: providers.Config{"access_token": "at-static"}})
	if err != nil {
		t.Fatal(err)
	}
	ce.liveSrc = src.Id
	return ce
}

// startSession starts a connect session with one of the seeded keys.
func (e *connectEnv) startSession(t *testing.T, key []string, body string) map[string]any {
	t.Helper()
	r := e.do("POST", "/v1/connect/sessions", body, key...)
	if r.status != 201 {
		t.Fatalf("start connect session: %d %s", r.status, r.body)
	}
	return r.json(t)
}

// browser is an http.Client with a cookie jar. It stops (without following) at the
// application's redirect URI, and, with stopAtCallback, at the provider callback.
type browser struct {
	t              *testing.T
	c              *http.Client
	base           string
	stopAtCallback bool
	callbacks      []string // provider callback URLs followed
}

func (e *connectEnv) browser(t *testing.T) *browser {
	jar, _ := cookiejar.New(nil)
	b := &browser{t: t, base: e.ts.URL}
	b.c = &http.Client{Jar: jar, Timeout: 20 * time.Second, CheckRedirect: func(req *http.Request, via []*http.Request) error {
		if strings.HasPrefix(req.URL.String(), appRedirect) {
			return http.ErrUseLastResponse
		}
		if strings.Contains(req.URL.Path, "/callback") {
			if b.stopAtCallback {
				return http.ErrUseLastResponse
			}
			b.callbacks = append(b.callbacks, req.URL.String())
		}
		return nil
	}}
	return b
}

func (b *browser) send(req *http.Request) *resp {
	b.t.Helper()
	res, err := b.c.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	defer res.Body.Close()
	data, _ := io.ReadAll(res.Body)
	return &resp{status: res.StatusCode, header: res.Header, body: data}
}

func (b *browser) get(target string, hdr ...string) *resp {
	b.t.Helper()
	if strings.HasPrefix(target, "/") {
		target = b.base + target
	}
	req, _ := http.NewRequest("GET", target, nil)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	return b.send(req)
}

func (b *browser) post(path string, form url.Values, hdr ...string) *resp {
	b.t.Helper()
	req, _ := http.NewRequest("POST", b.base+path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	return b.send(req)
}

// session returns the browser's svc_session cookie as a request header.
func (b *browser) session() []string {
	u, _ := url.Parse(b.base)
	for _, c := range b.c.Jar.Cookies(u) {
		if c.Name == platform.SessionCookie {
			return []string{"Cookie", c.Name + "=" + c.Value}
		}
	}
	b.t.Fatal("the browser has no session cookie")
	return nil
}

// signIn signs the browser in through the consent page's form.
func (b *browser) signIn(e *connectEnv, csnPath string) *resp {
	b.t.Helper()
	r := b.post(csnPath+"/sign-in", url.Values{"email": {e.anaEmail}, "password": {e.anaPass}})
	if r.status != 200 {
		b.t.Fatalf("sign in: %d %s", r.status, r.body)
	}
	return r
}

var csrfField = regexp.MustCompile(`name="csrf_token" value="([0-9a-f]{64})"`)

func csrfToken(t *testing.T, r *resp) string {
	t.Helper()
	m := csrfField.FindSubmatch(r.body)
	if m == nil {
		t.Fatalf("no csrf_token in the page:\n%s", r.body)
	}
	return string(m[1])
}

func mustContain(t *testing.T, r *resp, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !bytes.Contains(r.body, []byte(w)) {
			t.Errorf("page (%d) lacks %q:\n%s", r.status, w, r.body)
		}
	}
}

func csnPath(csn map[string]any) string { return "/connect/" + csn["id"].(string) }

// events returns the types and subjects of the calling application's events.
func (e *connectEnv) events(t *testing.T, key []string, types string) []string {
	t.Helper()
	r := e.do("GET", "/v1/events?types="+types, "", key...)
	var list struct {
		Data []struct{ Type, Subject string } `json:"data"`
	}
	if err := json.Unmarshal(r.body, &list); err != nil || r.status != 200 {
		t.Fatalf("events: %d %s", r.status, r.body)
	}
	var out []string
	for _, ev := range list.Data {
		out = append(out, ev.Type+" "+ev.Subject)
	}
	return out
}

// providerMail finds the source the OAuth flow connected (the fake provider's account).
func (e *connectEnv) providerMail(t *testing.T, b *browser) map[string]any {
	t.Helper()
	var list struct{ Data []map[string]any }
	r := e.do("GET", "/v1/sources", "", b.session()...)
	json.Unmarshal(r.body, &list)
	var found map[string]any
	for _, s := range list.Data {
		if s["email"] == "ana@vendor-a.example" {
			if found != nil {
				t.Fatalf("two sources for one provider account: %s", r.body)
			}
			found = s
		}
	}
	return found
}

func TestConnectFlowEndToEnd(t *testing.T) {
	e := newConnectEnv(t)
	live := e.liveKey()

	// The application starts a session with its live key, asking Ana to connect her Vendor A
	// mailbox.
	csn := e.startSession(t, live, `{"redirect_uri":"`+appRedirect+`","operation_classes":["discover","preserve"],"provider":"vendor_a_mail","state":"app-state-1"}`)
	if !strings.HasPrefix(csn["id"].(string), "csn_") || csn["status"] != "pending" || csn["mode"] != "live" ||
		csn["url"] != e.ts.URL+csnPath(csn) || csn["expires_at"] != "2026-11-22T12:30:00Z" || csn["state"] != "app-state-1" ||
		csn["connection_id"] != nil || csn["provider"] != "vendor_a_mail" {
		t.Fatalf("connect session: %v", csn)
	}
	page := csnPath(csn)

	// Not signed in: the page is a sign-in form, framed by nobody, cached by nobody.
	b := e.browser(t)
	r := b.get(page)
	if r.status != 200 || !strings.HasPrefix(r.header.Get("Content-Type"), "text/html") {
		t.Fatalf("consent page: %d %s", r.status, r.body)
	}
	mustContain(t, r, "Sign in to continue to Dev App", `action="`+page+`/sign-in"`, `autocomplete="current-password"`, `<html lang="en">`)
	if csp := r.header.Get("Content-Security-Policy"); !strings.Contains(csp, "frame-ancestors 'none'") || !strings.Contains(csp, "default-src 'none'") ||
		r.header.Get("X-Frame-Options") != "DENY" || r.header.Get("Cache-Control") != "no-store" {
		t.Fatalf("page headers: %v", r.header)
	}
	// The one inline style sheet is what the policy allows by hash; nothing else runs.
	style := regexp.MustCompile(`(?s)<style>(.*)</style>`).FindSubmatch(r.body)
	sum := sha256.Sum256(style[1])
	if !strings.Contains(r.header.Get("Content-Security-Policy"), "style-src 'sha256-"+base64.StdEncoding.EncodeToString(sum[:])+"'") {
		t.Fatalf("the style sheet's hash is not in the policy %q", r.header.Get("Content-Security-Policy"))
	}
	if dir := os.Getenv("SVC_CONSENT_PAGE_DIR"); dir != "" { // for screenshots (docs/connect.md)
		os.WriteFile(filepath.Join(dir, "signin.html"), r.body, 0o644)
	}
	if r := b.post(page+"/sign-in", url.Values{"email": {e.anaEmail}, "password": {"wrong password, clearly"}}); r.status != 401 {
		t.Fatalf("wrong password: %d", r.status)
	} else {
		mustContain(t, r, "The email or password is not correct.", `value="`+e.anaEmail+`"`)
	}

	// Signed in: the application, what it asks in plain words, Ana's live sources, the
	// provider to connect, Approve and Deny.
	r = b.signIn(e, page)
	mustContain(t, r, "Dev App wants to use your svc account", "See what you keep", "Keep copies",
		"Ana&#39;s work mailbox", "Connect Vendor A Mail", `value="approve"`, `value="deny"`, "Signed in as ana@example.com",
		"expires at 12:30 UTC")
	for _, not := range []string{"Clean up", "<script", "Test mode", "Ana&#39;s simulated mailbox", "verified copy"} {
		if bytes.Contains(r.body, []byte(not)) {
			t.Fatalf("the page shows %q:\n%s", not, r.body)
		}
	}
	token := csrfToken(t, r)

	// CSRF: a cross-site POST, a foreign Origin, a missing or wrong token, or no session are
	// refused, and nothing is decided.
	for name, tc := range map[string]struct {
		form   url.Values
		hdr    []string
		status int
	}{
		"cross-site":     {url.Values{"csrf_token": {token}, "decision": {"deny"}}, []string{"Sec-Fetch-Site", "cross-site"}, 403},
		"foreign origin": {url.Values{"csrf_token": {token}, "decision": {"deny"}}, []string{"Origin", "https://evil.example"}, 403},
		"no token":       {url.Values{"decision": {"deny"}}, nil, 403},
		"wrong token":    {url.Values{"csrf_token": {strings.Repeat("ab", 32)}, "decision": {"deny"}}, nil, 403},
	} {
		if r := b.post(page, tc.form, tc.hdr...); r.status != tc.status {
			t.Errorf("%s: %d %s", name, r.status, r.body)
		}
	}
	other := e.browser(t) // another browser of Ana's: the token of the first one is worthless there
	other.signIn(e, page)
	if r := other.post(page, url.Values{"csrf_token": {token}, "decision": {"deny"}}); r.status != 403 {
		t.Errorf("token of another browser session: %d", r.status)
	}
	anon := e.browser(t)
	if r := anon.post(page, url.Values{"csrf_token": {token}, "decision": {"deny"}}); r.status != 401 {
		t.Errorf("no session: %d", r.status)
	} else {
		mustContain(t, r, "Sign in")
	}
	if r := b.post(page+"/provider", url.Values{"csrf_token": {token}}, "Sec-Fetch-Site", "cross-site"); r.status != 403 {
		t.Errorf("cross-site provider start: %d", r.status)
	}
	if r := b.get(page); r.status != 200 {
		t.Fatalf("after the refusals the request is no longer pending: %d", r.status)
	}

	// Connect Vendor A Mail: svc -> /authorize (state, PKCE S256) -> callback -> code exchange
	// with the verifier -> the consent page, with the new source ticked.
	consent := b.post(page+"/provider", url.Values{"csrf_token": {token}})
	if consent.status != 200 || len(b.callbacks) != 1 {
		t.Fatalf("provider round trip: %d, callbacks %v\n%s", consent.status, b.callbacks, consent.body)
	}
	mustContain(t, consent, "Your Vendor A Mail account is connected", "Vendor A Mail (ana@vendor-a.example)", "Ana&#39;s work mailbox",
		"Connect another Vendor A Mail account")
	az := e.as.authorizes[0]
	if az.Get("redirect_uri") != e.ts.URL+"/v1/connect/vendor_a_mail/callback" || az.Get("scope") != "mail.read mail.modify" ||
		len(az.Get("state")) < 40 || az.Get("code_challenge_method") != "S256" {
		t.Fatalf("authorization request: %v", az)
	}
	if e.as.exchanges != 1 || e.as.pkceFailures != 0 {
		t.Fatalf("%d exchanges, %d PKCE failures", e.as.exchanges, e.as.pkceFailures)
	}
	mailSrc := e.providerMail(t, b)
	if mailSrc == nil || mailSrc["status"] != "connected" || mailSrc["provider"] != "vendor_a_mail" || mailSrc["simulated"] != false ||
		mailSrc["external_account_id"] != "acct-ana" || !slices.Equal(toStrings(mailSrc["granted_scopes"]), []string{"mail.read", "mail.modify"}) {
		t.Fatalf("connected source: %v", mailSrc)
	}
	mailID := mailSrc["id"].(string)
	if !regexp.MustCompile(`id="src-`+mailID+`" name="source_id" value="`+mailID+`" checked`).Match(consent.body) ||
		regexp.MustCompile(`value="`+e.liveSrc+`" checked`).Match(consent.body) {
		t.Fatalf("only the new source should be ticked:\n%s", consent.body)
	}
	if dir := os.Getenv("SVC_CONSENT_PAGE_DIR"); dir != "" {
		os.WriteFile(filepath.Join(dir, "consent.html"), consent.body, 0o644)
	}

	// Tokens are sealed at rest: neither the access nor the refresh token (nor the one of the
	// work mailbox) is anywhere in the bbolt file.
	raw, err := os.ReadFile(filepath.Join(e.dataDir, "svc.db"))
	if err != nil || len(e.as.issued) != 2 {
		t.Fatal(err, e.as.issued)
	}
	blob, err := server.DBOf(e.srv).GetBlob(context.Background(), "source_configs", "live:"+e.anaID+"/"+mailID)
	if err != nil || len(blob) == 0 {
		t.Fatalf("sealed config: %v", err)
	}
	for _, secret := range append(e.as.issued, "at-static", oauthClientSecret) {
		if bytes.Contains(raw, []byte(secret)) || bytes.Contains(blob, []byte(secret)) {
			t.Fatalf("%q is stored in the clear", secret)
		}
	}

	// The callback cannot be replayed, and a made-up state is refused.
	r = b.get(b.callbacks[0])
	if p := checkProblem(t, r, 400, "validation_failed"); errorPath(t, p) != "state" {
		t.Fatalf("replayed callback: %s", r.body)
	}
	checkProblem(t, b.get("/v1/connect/vendor_a_mail/callback?code=x&state=made-up"), 400, "validation_failed")

	// Approve only the new source: back to the app with the connection and the app's state.
	r = b.post(page, url.Values{"csrf_token": {token}, "decision": {"approve"}, "source_id": {mailID}})
	loc, _ := url.Parse(r.header.Get("Location"))
	if r.status != 303 || loc == nil || loc.Scheme+"://"+loc.Host+loc.Path != appRedirect || loc.Query().Get("state") != "app-state-1" {
		t.Fatalf("approve: %d %v", r.status, r.header)
	}
	cxn := loc.Query().Get("connection_id")
	if !strings.HasPrefix(cxn, "cxn_") {
		t.Fatalf("connection id %q", cxn)
	}
	if r := b.get(page); r.status != 409 {
		t.Fatalf("decided page: %d", r.status)
	} else {
		mustContain(t, r, "Already approved")
	}
	if r := b.post(page, url.Values{"csrf_token": {token}, "decision": {"deny"}}); r.status != 409 {
		t.Fatalf("second decision: %d", r.status)
	}

	// The connection, as the application and as Ana see it; other modes and users do not.
	r = e.do("GET", "/v1/connections/"+cxn, "", live...)
	c := r.json(t)
	g := c["grant"].(map[string]any)
	if r.status != 200 || c["status"] != "active" || c["user_id"] != e.anaID || c["mode"] != "live" ||
		!slices.Equal(toStrings(g["operation_classes"]), []string{"discover", "preserve"}) || !slices.Equal(toStrings(g["source_ids"]), []string{mailID}) {
		t.Fatalf("connection: %d %s", r.status, r.body)
	}
	if ids := e.connections(t, live); !slices.Equal(ids, []string{cxn}) {
		t.Fatalf("application's live connections: %v", ids)
	}
	if ids := e.connections(t, e.key()); !slices.Equal(ids, []string{e.creds.ConnectionID}) {
		t.Fatalf("application's test connections: %v", ids)
	}
	if ids := e.connections(t, b.session()); !slices.Equal(ids, []string{cxn}) {
		t.Fatalf("Ana's connections: %v", ids)
	}
	if ids := e.connections(t, with(b.session(), "Svc-Mode", "test")); len(ids) != 0 {
		t.Fatalf("Ana's test connections: %v", ids)
	}
	checkProblem(t, e.do("GET", "/v1/connections/"+cxn, "", e.key()...), 404, "not_found")
	checkProblem(t, e.do("GET", "/v1/connections/"+cxn, "", e.session()...), 404, "not_found") // the dev user is not Ana
	if evs := e.events(t, live, "svc.connection.created"); !slices.Equal(evs, []string{"svc.connection.created " + cxn}) {
		t.Fatalf("events: %v", evs)
	}
	r = e.do("GET", "/v1/sources/"+mailID+"?connection_id="+cxn, "", live...)
	if src := r.json(t); src["connection_id"] != cxn || src["connected_via_application_id"] != e.creds.ApplicationID {
		t.Fatalf("source through the connection: %s", r.body)
	}

	// The grant is enforced: no remove, so a clean-up plan needs a scope step-up; the work
	// mailbox is outside the grant.
	plans := "/v1/plans?connection_id=" + cxn
	r = e.do("POST", plans, `{"intent":"svc","source_ids":["`+mailID+`"],"policy":{"removePromotional":true}}`, live...)
	if r.status != 201 {
		t.Fatalf("plan: %d %s", r.status, r.body)
	}
	if pol := r.json(t)["policy"].(map[string]any); pol["decision"] != "step_up_required" || !slices.Contains(toStrings(pol["requiredApprovals"]), "scope_step_up") {
		t.Fatalf("policy: %v", pol)
	}
	checkProblem(t, e.do("POST", plans, `{"intent":"rescue","source_ids":["`+e.liveSrc+`"]}`, live...), 403, "forbidden")
	checkProblem(t, e.do("GET", "/v1/sources/"+e.liveSrc+"?connection_id="+cxn, "", live...), 403, "forbidden")

	// Revocation by the application is immediate, announced once, and idempotent.
	r = e.do("POST", "/v1/connections/"+cxn+"/revoke", "", live...)
	if c := r.json(t); r.status != 200 || c["status"] != "revoked" || c["revoked_at"] == nil {
		t.Fatalf("revoke: %d %s", r.status, r.body)
	}
	checkProblem(t, e.do("POST", plans, `{"intent":"rescue","source_ids":["`+mailID+`"]}`, live...), 404, "not_found")
	checkProblem(t, e.do("GET", "/v1/sources/"+mailID+"?connection_id="+cxn, "", live...), 404, "not_found")
	if r := e.do("POST", "/v1/connections/"+cxn+"/revoke", "", live...); r.status != 200 || r.json(t)["status"] != "revoked" {
		t.Fatalf("revoke again: %d %s", r.status, r.body)
	}
	if evs := e.events(t, live, "svc.connection.revoked"); !slices.Equal(evs, []string{"svc.connection.revoked " + cxn}) {
		t.Fatalf("revocation events: %v", evs)
	}
}

// connections walks GET /v1/connections one item per page and returns the ids in order.
func (e *connectEnv) connections(t *testing.T, hdr []string) []string {
	t.Helper()
	var ids []string
	for cursor := ""; ; {
		path := "/v1/connections?limit=1"
		if cursor != "" {
			path += "&cursor=" + url.QueryEscape(cursor)
		}
		r := e.do("GET", path, "", hdr...)
		var page struct {
			Data       []struct{ ID string }
			NextCursor *string `json:"next_cursor"`
		}
		if err := json.Unmarshal(r.body, &page); err != nil || r.status != 200 {
			t.Fatalf("connections: %d %s", r.status, r.body)
		}
		for _, c := range page.Data {
			ids = append(ids, c.ID)
		}
		if page.NextCursor == nil {
			return ids
		}
		cursor = *page.NextCursor
	}
}

func toStrings(v any) []string {
	var out []string
	for _, x := range v.([]any) {
		out = append(out, x.(string))
	}
	return out
}

func TestConnectDenyAndUserRevocation(t *testing.T) {
	e := newConnectEnv(t)
	b := e.browser(t)
	// A test-mode session: the user's simulated sources are offered, nothing else.
	csn := e.startSession(t, e.key(), `{"redirect_uri":"`+appRedirect+`","operation_classes":["discover","remove"],"state":"s&t=2"}`)
	r := b.get(csnPath(csn))
	mustContain(t, r, "Sign in")
	r = b.signIn(e, csnPath(csn))
	mustContain(t, r, "Test mode", "Simulated data. Nothing is billed.", "Ana&#39;s simulated mailbox", "Clean up",
		"a verified copy is kept in your vault")
	for _, not := range []string{"Connect Vendor A Mail", "Ana&#39;s work mailbox", " checked"} {
		if bytes.Contains(r.body, []byte(not)) {
			t.Fatalf("the test-mode page shows %q:\n%s", not, r.body)
		}
	}
	token := csrfToken(t, r)
	// Approving with no source ticked is refused on the page; nothing is decided.
	if r := b.post(csnPath(csn), url.Values{"csrf_token": {token}, "decision": {"approve"}}); r.status != 422 {
		t.Fatalf("approve without sources: %d", r.status)
	} else {
		mustContain(t, r, "Choose at least one source")
	}
	// A source that is not Ana's, or not in this mode, cannot be ticked in.
	for _, src := range []string{"src_01JD0000000000000000000000", e.liveSrc} {
		if r := b.post(csnPath(csn), url.Values{"csrf_token": {token}, "decision": {"approve"}, "source_id": {src}}); r.status != 400 {
			t.Fatalf("foreign source %s: %d", src, r.status)
		}
	}
	r = b.post(csnPath(csn), url.Values{"csrf_token": {token}, "decision": {"deny"}})
	loc, _ := url.Parse(r.header.Get("Location"))
	if r.status != 303 || loc.Query().Get("error") != "access_denied" || loc.Query().Get("state") != "s&t=2" || loc.Query().Has("connection_id") {
		t.Fatalf("deny: %d %v", r.status, r.header)
	}
	if r := b.get(csnPath(csn)); r.status != 409 {
		t.Fatalf("denied page: %d", r.status)
	} else {
		mustContain(t, r, "Already denied")
	}

	// Ana revokes a test-mode connection herself (looking at test mode); the key loses it.
	conn, err := e.srv.Developers().Connect(context.Background(), e.creds.ApplicationID, e.anaID, platform.ModeTest,
		platform.Grant{OperationClasses: []string{"discover"}, SourceIDs: []string{e.simSrc}})
	if err != nil {
		t.Fatal(err)
	}
	if r := e.do("GET", "/v1/sources/"+e.simSrc+"?connection_id="+conn.ID, "", e.key()...); r.status != 200 {
		t.Fatalf("before revocation: %d", r.status)
	}
	checkProblem(t, e.do("POST", "/v1/connections/"+conn.ID+"/revoke", "", b.session()...), 404, "not_found") // live mode
	checkProblem(t, e.do("POST", "/v1/connections/"+conn.ID+"/revoke", "", with(e.session(), "Svc-Mode", "test")...), 404, "not_found")
	checkProblem(t, e.do("POST", "/v1/connections/"+conn.ID+"/revoke", "", e.liveKey()...), 404, "not_found")
	checkProblem(t, e.do("POST", "/v1/connections/"+conn.ID+"/revoke", "", with(b.session(), "Svc-Mode", "test", "Sec-Fetch-Site", "cross-site")...), 403, "forbidden")
	if r := e.do("POST", "/v1/connections/"+conn.ID+"/revoke", "", with(b.session(), "Svc-Mode", "test")...); r.status != 200 || r.json(t)["status"] != "revoked" {
		t.Fatalf("user revocation: %d %s", r.status, r.body)
	}
	checkProblem(t, e.do("GET", "/v1/sources/"+e.simSrc+"?connection_id="+conn.ID, "", e.key()...), 404, "not_found")
	if r := e.do("GET", "/v1/connections/"+conn.ID, "", e.key()...); r.json(t)["status"] != "revoked" {
		t.Fatalf("the application sees: %s", r.body)
	}
	if evs := e.events(t, e.key(), "svc.connection.revoked"); !slices.Equal(evs, []string{"svc.connection.revoked " + conn.ID}) {
		t.Fatalf("revocation events: %v", evs)
	}

	// Two decisions at once: exactly one wins.
	race := e.startSession(t, e.key(), `{"redirect_uri":"`+appRedirect+`","operation_classes":["discover"]}`)
	token = csrfToken(t, b.get(csnPath(race)))
	statuses := make([]int, 2)
	var wg sync.WaitGroup
	for i, decision := range []string{"approve", "deny"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			statuses[i] = b.post(csnPath(race), url.Values{"csrf_token": {token}, "decision": {decision}, "source_id": {e.simSrc}}).status
		}()
	}
	wg.Wait()
	slices.Sort(statuses)
	if !slices.Equal(statuses, []int{303, 409}) {
		t.Fatalf("concurrent decisions: %v", statuses)
	}

	// Sessions expire after 30 minutes.
	late := e.startSession(t, e.key(), `{"redirect_uri":"`+appRedirect+`","operation_classes":["discover"]}`)
	e.clock.Advance(31 * time.Minute)
	if r := b.get(csnPath(late)); r.status != 410 {
		t.Fatalf("expired session page: %d", r.status)
	}
	if r := e.do("POST", "/v1/connect/sessions", `{"redirect_uri":"`+appRedirect+`","operation_classes":["discover"]}`, e.key()...); r.status != 201 {
		t.Fatalf("new session: %d", r.status)
	}
}

func TestConnectSessionValidation(t *testing.T) {
	e := newConnectEnv(t)
	good := `"operation_classes":["discover"]`
	r := e.do("POST", "/v1/connect/sessions", `{"redirect_uri":"https://elsewhere.example/cb",`+good+`}`, e.key()...)
	if errorPath(t, checkProblem(t, r, 400, "validation_failed")) != "redirect_uri" {
		t.Fatalf("%s", r.body)
	}
	for _, tc := range []struct {
		key      []string
		provider string
	}{
		{e.liveKey(), "vendor_b_mail"}, // no OAuth configuration
		{e.key(), "vendor_a_mail"},     // test mode connects no real accounts
	} {
		r = e.do("POST", "/v1/connect/sessions", `{"redirect_uri":"`+appRedirect+`",`+good+`,"provider":"`+tc.provider+`"}`, tc.key...)
		if errorPath(t, checkProblem(t, r, 400, "validation_failed")) != "provider" {
			t.Fatalf("%s", r.body)
		}
	}
	checkProblem(t, e.do("POST", "/v1/connect/sessions", `{"redirect_uri":"`+appRedirect+`","operation_classes":[]}`, e.key()...), 400, "validation_failed")
	checkProblem(t, e.do("POST", "/v1/connect/sessions", `{"redirect_uri":"`+appRedirect+`",`+good+`}`, e.session()...), 403, "forbidden")
	// A narrower application cannot ask for more than it is allowed.
	ctx := context.Background()
	app, err := e.srv.Developers().CreateApplication(ctx, e.creds.OrgID, "Narrow", []string{"discover"}, []string{appRedirect})
	if err != nil {
		t.Fatal(err)
	}
	_, secret, err := e.srv.Developers().CreateKey(ctx, app.ID, platform.ModeTest, nil)
	if err != nil {
		t.Fatal(err)
	}
	checkProblem(t, e.do("POST", "/v1/connect/sessions", `{"redirect_uri":"`+appRedirect+`","operation_classes":["remove"]}`, "Authorization", "Bearer "+secret), 403, "forbidden")
	// Idempotent: the same key and body give the same session.
	body := `{"redirect_uri":"` + appRedirect + `",` + good + `}`
	a := e.do("POST", "/v1/connect/sessions", body, with(e.key(), "Idempotency-Key", "csn-1")...)
	b := e.do("POST", "/v1/connect/sessions", body, with(e.key(), "Idempotency-Key", "csn-1")...)
	if a.status != 201 || b.header.Get("Idempotent-Replayed") != "true" || a.json(t)["id"] != b.json(t)["id"] {
		t.Fatalf("replay: %s / %s", a.body, b.body)
	}
	// Unknown pages are 404 pages.
	if r := e.browser(t).get("/connect/csn_01JD0000000000000000000000"); r.status != 404 {
		t.Fatalf("unknown session page: %d", r.status)
	}
}

func TestOAuthStateBoundToSessionAndPKCE(t *testing.T) {
	e := newConnectEnv(t)
	csn := e.startSession(t, e.liveKey(), `{"redirect_uri":"`+appRedirect+`","operation_classes":["discover"],"provider":"vendor_a_mail"}`)
	page := csnPath(csn)
	ana := e.browser(t)
	token := csrfToken(t, ana.signIn(e, page))

	// Stop at the provider's redirect back to svc, and hand that callback to someone else.
	start := func() string {
		ana.stopAtCallback = true
		defer func() { ana.stopAtCallback = false }()
		r := ana.post(page+"/provider", url.Values{"csrf_token": {token}})
		if r.status != 302 || !strings.Contains(r.header.Get("Location"), "/v1/connect/vendor_a_mail/callback?") {
			t.Fatalf("provider redirect: %d %v", r.status, r.header)
		}
		return r.header.Get("Location")
	}
	callback := start()
	mallory := e.browser(t)
	if r := e.do("POST", "/v1/auth/sign-up", `{"email":"mallory@example.com","password":"another long password"}`); r.status != 201 {
		t.Fatalf("sign up: %d", r.status)
	} else {
		u, _ := url.Parse(e.ts.URL)
		mallory.c.Jar.SetCookies(u, (&http.Response{Header: r.header}).Cookies())
	}
	r := mallory.get(callback)
	if p := checkProblem(t, r, 400, "validation_failed"); errorPath(t, p) != "state" {
		t.Fatalf("state of another session: %s", r.body)
	}
	// The attempt used the state up: Ana cannot finish with it either.
	checkProblem(t, ana.get(callback), 400, "validation_failed")
	// Without a session the state is not this browser's: 400, never a request for a credential.
	checkProblem(t, e.browser(t).get(start()), 400, "validation_failed")
	// An unknown provider is not found, with or without a session.
	checkProblem(t, e.browser(t).get("/v1/connect/no_such_provider/callback?code=x&state=y"), 404, "not_found")
	checkProblem(t, ana.get("/v1/connect/no_such_provider/callback"), 404, "not_found")
	// A state for one provider is not good for another.
	checkProblem(t, ana.get(strings.Replace(start(), "vendor_a_mail", "vendor_b_mail", 1)), 400, "validation_failed")
	// A state is good for 10 minutes.
	callback = start()
	e.clock.Advance(platform.OAuthStateTTL)
	checkProblem(t, ana.get(callback), 400, "validation_failed")
	if e.as.exchanges != 0 {
		t.Fatalf("%d code exchanges for refused callbacks", e.as.exchanges)
	}

	// PKCE: if the verifier does not match the challenge, the provider refuses the code and
	// nothing is connected.
	callback = start()
	e.as.mu.Lock()
	for _, c := range e.as.codes {
		if !c.used {
			c.challenge = "tampered"
		}
	}
	e.as.mu.Unlock()
	r = ana.get(callback)
	if r.status != 200 || e.as.pkceFailures != 1 {
		t.Fatalf("PKCE mismatch: %d, %d failures", r.status, e.as.pkceFailures)
	}
	mustContain(t, r, "Vendor A Mail did not connect (invalid_grant)")
	// A user who refuses at the provider comes back to the consent page, told so.
	e.as.deny = true
	r = ana.post(page+"/provider", url.Values{"csrf_token": {token}})
	mustContain(t, r, "did not connect (access_denied)")
	e.as.deny = false
	if src := e.providerMail(t, ana); src != nil {
		t.Fatalf("a failed authorization connected %v", src)
	}
	// And a proper one connects.
	r = ana.post(page+"/provider", url.Values{"csrf_token": {token}})
	mustContain(t, r, "Your Vendor A Mail account is connected")
	if src := e.providerMail(t, ana); src == nil {
		t.Fatal("nothing connected")
	}
}

func TestReauthRequiredAfterTokenFailure(t *testing.T) {
	e := newConnectEnv(t)
	live := e.liveKey()
	csn := e.startSession(t, live, `{"redirect_uri":"`+appRedirect+`","operation_classes":["discover","preserve"],"provider":"vendor_a_mail"}`)
	b := e.browser(t)
	token := csrfToken(t, b.signIn(e, csnPath(csn)))
	b.post(csnPath(csn)+"/provider", url.Values{"csrf_token": {token}})
	mailID := e.providerMail(t, b)["id"].(string)
	r := b.post(csnPath(csn), url.Values{"csrf_token": {token}, "decision": {"approve"}, "source_id": {mailID}})
	loc, _ := url.Parse(r.header.Get("Location"))
	cxn := loc.Query().Get("connection_id")
	plans := "/v1/plans?connection_id=" + cxn
	if r := e.do("POST", plans, `{"intent":"rescue","source_ids":["`+mailID+`"]}`, live...); r.status != 201 {
		t.Fatalf("plan with a working token: %d %s", r.status, r.body)
	}

	// Ana revokes svc at the provider: the provider answers ErrPermission, which the source
	// paths report with markReauth.
	e.as.revokeAll()
	checkProblem(t, e.do("POST", plans, `{"intent":"rescue","source_ids":["`+mailID+`"]}`, live...), 502, "provider_error")
	// The failed listing itself marked the source.
	r = e.do("GET", "/v1/sources/"+mailID+"?connection_id="+cxn, "", live...)
	if r.json(t)["status"] != "reauth_required" {
		t.Fatalf("source after a token failure: %s", r.body)
	}
	want := []string{"svc.source.reauth_required " + mailID}
	if evs := e.events(t, live, "svc.source.reauth_required"); !slices.Equal(evs, want) {
		t.Fatalf("events: %v", evs)
	}
	// Marking it again changes nothing and emits nothing.
	tenant := platform.Tenant{Owner: e.anaID, Mode: platform.ModeLive}
	if err := e.srv.MarkReauth(context.Background(), tenant, mailID); err != nil {
		t.Fatal(err)
	}
	if evs := e.events(t, live, "svc.source.reauth_required"); !slices.Equal(evs, want) {
		t.Fatalf("events after marking twice: %v", evs)
	}
}

// The authorization URL carries what makes a vendor issue a refresh token, unless the
// configuration says otherwise.
func TestAuthCodeOptionsAskForOfflineAccess(t *testing.T) {
	url := func(name providers.Name, p server.OAuthProvider) string {
		return server.AuthCodeURL(p, name, "state", "verifier")
	}
	p := server.OAuthProvider{AuthURL: "https://auth.example/authorize", TokenURL: "https://auth.example/token", ClientID: "c"}
	if u := url(providers.VendorCFiles, p); !strings.Contains(u, "token_access_type=offline") || !strings.Contains(u, "code_challenge_method=S256") {
		t.Errorf("vendor_c_files: %s", u)
	}
	if u := url(providers.VendorAMail, p); !strings.Contains(u, "access_type=offline") || !strings.Contains(u, "prompt=consent") {
		t.Errorf("vendor_a_mail: %s", u)
	}
	p.AuthParams = map[string]string{"login_hint": "ann"}
	if u := url(providers.VendorAMail, p); strings.Contains(u, "access_type") || !strings.Contains(u, "login_hint=ann") {
		t.Errorf("configured params: %s", u)
	}
}
