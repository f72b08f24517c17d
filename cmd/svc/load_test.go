package main

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// TestLoad runs the real binary under many concurrent clients (docs/operations.md, "Load
// test"). The short version runs in CI; SVC_LOAD_CLIENTS and SVC_LOAD_SECONDS make it longer
// (scripts/load runs 64 clients for 60 s). Traffic covers every resource family, with a test
// key and its connection, the live key, sessions in both modes and other users' sessions,
// while plans are created, authorized and executed (writes that grow the database) and a
// webhook receives the events. It fails on any request unanswered within 10 s (writing the
// server's goroutine dump into the output), any 5xx, any error that is not a problem
// document, any created plan or execution not readable afterwards, and any webhook event lost
// or delivered twice. A second phase floods one key of a rate-limited server: every 429 must
// carry Retry-After while another principal is still served.
func TestLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("load test: not in -short")
	}
	clients := envInt("SVC_LOAD_CLIENTS", 16)
	seconds := envInt("SVC_LOAD_SECONDS", 6)
	bin := svcBinary(t)
	t.Run("mixed", func(t *testing.T) { loadMixed(t, bin, clients, time.Duration(seconds)*time.Second) })
	t.Run("one key flooded", func(t *testing.T) { loadFlood(t, bin) })
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// loadRig is the binary under load and what the clients know of it.
type loadRig struct {
	t      *testing.T
	base   string
	debug  string
	pid    int
	creds  map[string]string
	client *http.Client

	mu       sync.Mutex
	samples  map[string][]time.Duration // by route
	failures []string
	plans    []string
	execs    []string
	vaultIDs []string
	stuck    atomic.Bool
}

// principal is one credential: its headers and whether it reaches the dev connection.
type principal struct {
	name       string
	headers    []string
	cx         bool   // a key with a connection: CX routes take connection_id
	connection string // the key's connection (default: the dev connection)
	session    bool
}

func freeAddr(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func (r *loadRig) fail(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.failures) < 50 {
		r.failures = append(r.failures, fmt.Sprintf(format, args...))
	}
}

// do sends one request as p and checks the answer's contract; route names the statistic.
func (r *loadRig) do(p principal, route, method, path, body string) (int, []byte) {
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	if p.cx && connectionScoped(path) {
		sep := "?"
		if strings.Contains(path, "?") {
			sep = "&"
		}
		path += sep + "connection_id=" + cmp.Or(p.connection, r.creds["connection_id"])
	}
	req, _ := http.NewRequest(method, r.base+path, rd)
	for i := 0; i+1 < len(p.headers); i += 2 {
		req.Header.Set(p.headers[i], p.headers[i+1])
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if method != http.MethodGet && p.session {
		req.Header.Set("Origin", r.base) // a same-origin browser request
	}
	start := time.Now()
	res, err := r.client.Do(req)
	var data []byte
	if err == nil {
		data, err = io.ReadAll(res.Body)
		res.Body.Close()
	}
	took := time.Since(start)
	if err != nil {
		r.fail("%s %s (%s): no answer after %v: %v", method, route, p.name, took.Round(time.Millisecond), err)
		r.dumpOnce()
		return 0, nil
	}
	r.mu.Lock()
	r.samples[route] = append(r.samples[route], took)
	r.mu.Unlock()
	if took > 10*time.Second {
		r.fail("%s %s (%s): answered after %v", method, route, p.name, took)
	}
	if res.StatusCode >= 500 {
		r.fail("%s %s (%s): %d %s", method, route, p.name, res.StatusCode, data)
	}
	if res.StatusCode >= 400 {
		var prob map[string]any
		if res.Header.Get("Content-Type") != "application/problem+json" || json.Unmarshal(data, &prob) != nil || prob["code"] == nil || prob["request_id"] == nil {
			r.fail("%s %s (%s): %d is not a problem document: %s", method, route, p.name, res.StatusCode, data)
		}
		if res.StatusCode == 429 && res.Header.Get("Retry-After") == "" {
			r.fail("%s %s (%s): 429 without Retry-After", method, route, p.name)
		}
	}
	if res.Header.Get("RateLimit-Limit") == "" {
		r.fail("%s %s (%s): no RateLimit headers", method, route, p.name)
	}
	return res.StatusCode, data
}

// connectionScoped reports whether a path takes connection_id with a key (the CX routes and
// those addressing end-user resources by id).
func connectionScoped(path string) bool {
	for _, p := range []string{"/v1/webhooks", "/v1/events", "/v1/account", "/v1/usage", "/v1/developer", "/v1/auth"} {
		if strings.HasPrefix(path, p) {
			return false
		}
	}
	return strings.HasPrefix(path, "/v1/")
}

// dumpOnce writes the server's goroutines into the test output, once.
func (r *loadRig) dumpOnce() {
	if !r.stuck.CompareAndSwap(false, true) {
		return
	}
	res, err := http.Get(r.debug + "/debug/pprof/goroutine?debug=2")
	if err != nil {
		r.t.Logf("goroutine dump: %v", err)
		return
	}
	defer res.Body.Close()
	dump, _ := io.ReadAll(res.Body)
	r.t.Logf("a request is stuck; the server's goroutines:\n%s", dump)
}

func loadMixed(t *testing.T, bin string, clients int, d time.Duration) {
	folder := t.TempDir()
	for i := range 12 {
		os.WriteFile(filepath.Join(folder, fmt.Sprintf("note-%02d.txt", i)), []byte(strings.Repeat(fmt.Sprintf("note %d\n", i), 200)), 0o600)
	}
	receiver := newWebhookReceiver()
	defer receiver.Close()
	data := t.TempDir()
	debug := freeAddr(t)
	cmd, base, log := startWith(t, bin, data, nil, "--rate-limit", "1000000", "--rate-window", "1m", "--debug-addr", debug,
		"--dev-source", "vendor_d_local:"+folder)
	defer func() {
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
		if t.Failed() {
			t.Logf("server log (tail):\n%s", tail(log.String(), 4000))
		}
	}()
	r := newLoadRig(t, base, "http://"+debug, cmd.Process.Pid, data, clients)
	key := principal{name: "test key", headers: []string{"Authorization", "Bearer " + r.creds["test_api_key"]}, cx: true}
	live := principal{name: "live key", headers: []string{"Authorization", "Bearer " + r.creds["live_api_key"]}}
	sessTest := principal{name: "session (test)", headers: []string{"Cookie", "svc_session=" + r.creds["session_cookie"], "Svc-Mode", "test"}, session: true}
	sessLive := principal{name: "session (live)", headers: []string{"Cookie", "svc_session=" + r.creds["session_cookie"]}, session: true}
	others := r.signUp(4)
	apps := r.connectedApps(sessLive, 2) // more keys, each with a connection of its own

	// The folder to plan over, the webhook that receives the test tenant's events.
	_, body := r.do(key, "sources", "GET", "/v1/sources?provider=vendor_d_local", "")
	var srcs struct{ Data []map[string]any }
	json.Unmarshal(body, &srcs)
	var src string
	for _, s := range srcs.Data {
		if s["external_account_id"] == folder {
			src = s["id"].(string)
		}
	}
	if src == "" {
		t.Fatalf("the folder source is not listed: %s", body)
	}
	st, body := r.do(key, "webhooks create", "POST", "/v1/webhooks", `{"url":"`+receiver.URL+`","mode":"test","event_types":["svc.plan.*","svc.execution.*"]}`)
	if st != 201 {
		t.Fatalf("webhook: %d %s", st, body)
	}
	var hook map[string]any
	json.Unmarshal(body, &hook)
	hookSince, err := time.Parse(time.RFC3339Nano, fmt.Sprint(hook["created_at"]))
	if err != nil {
		t.Fatalf("webhook created_at: %v", err)
	}

	readers := []func(){
		func() { r.do(key, "GET /v1/plans", "GET", "/v1/plans?limit=50", "") },
		func() { r.do(sessTest, "GET /v1/plans", "GET", "/v1/plans?limit=50", "") },
		func() { r.do(key, "GET /v1/executions", "GET", "/v1/executions?limit=50", "") },
		func() { r.do(sessTest, "GET /v1/executions", "GET", "/v1/executions?limit=50", "") },
		func() { r.do(key, "GET /v1/sources", "GET", "/v1/sources", "") },
		func() { r.do(sessLive, "GET /v1/sources", "GET", "/v1/sources", "") },
		func() { r.do(key, "GET /v1/events", "GET", "/v1/events?limit=50", "") },
		func() { r.do(live, "GET /v1/events", "GET", "/v1/events?limit=50", "") },
		func() { r.do(live, "GET /v1/webhooks", "GET", "/v1/webhooks", "") },
		func() { r.do(key, "GET /v1/vault/objects", "GET", "/v1/vault/objects?limit=50", "") },
		func() { r.do(key, "GET /v1/vault/manifests/export", "GET", "/v1/vault/manifests/export", "") },
		func() { r.do(sessLive, "GET /v1/account", "GET", "/v1/account", "") },
		func() { r.do(others[rand.IntN(len(others))], "GET /v1/plans", "GET", "/v1/plans", "") },
		func() { r.do(apps[rand.IntN(len(apps))], "GET /v1/sources", "GET", "/v1/sources", "") },
		func() { r.do(apps[rand.IntN(len(apps))], "GET /v1/plans", "GET", "/v1/plans?limit=20", "") },
		func() {
			if id := r.pick(&r.plans); id != "" {
				r.do(key, "GET /v1/plans/{id}", "GET", "/v1/plans/"+id, "")
			}
		},
		func() {
			if id := r.pick(&r.execs); id != "" {
				r.do(sessTest, "GET /v1/executions/{id}", "GET", "/v1/executions/"+id, "")
			}
		},
		func() {
			if id := r.pick(&r.vaultIDs); id != "" {
				r.do(key, "GET /v1/vault/objects/{id}/content", "GET", "/v1/vault/objects/"+id+"/content", "")
			}
		},
	}
	// Seed the id pools.
	r.collectVault(key)

	deadline := time.Now().Add(d)
	var wg sync.WaitGroup
	if out := os.Getenv("SVC_LOAD_CPUPROFILE"); out != "" { // the server's CPU profile over the run
		wg.Go(func() {
			res, err := http.Get(fmt.Sprintf("%s/debug/pprof/profile?seconds=%d", r.debug, max(1, int(d.Seconds())-1)))
			if err != nil {
				t.Errorf("cpu profile: %v", err)
				return
			}
			defer res.Body.Close()
			f, err := os.Create(out)
			if err == nil {
				io.Copy(f, res.Body)
				f.Close()
			}
		})
	}
	if out := os.Getenv("SVC_LOAD_GOROUTINES"); out != "" { // where the server's goroutines wait, mid-run
		wg.Go(func() {
			time.Sleep(d / 2)
			res, err := http.Get(r.debug + "/debug/pprof/goroutine?debug=1")
			if err != nil {
				t.Errorf("goroutines: %v", err)
				return
			}
			defer res.Body.Close()
			if f, err := os.Create(out); err == nil {
				io.Copy(f, res.Body)
				f.Close()
			}
		})
	}
	start := time.Now()
	var total atomic.Int64
	for c := range clients {
		wg.Go(func() {
			for i := 0; time.Now().Before(deadline) && !r.stuck.Load(); i++ {
				total.Add(1)
				if c < max(2, clients/8) && i%4 == 0 { // writers: a small plan, authorized and executed
					r.smallPlan(key, src)
					continue
				}
				readers[rand.IntN(len(readers))]()
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	if r.stuck.Load() {
		t.Fatalf("requests were stuck:\n%s", strings.Join(r.failures, "\n"))
	}

	// Nothing lost: every plan and execution created is readable, and every event of the
	// webhook's types reached the receiver exactly once.
	r.waitExecutions(key)
	for _, id := range r.plans {
		if st, body := r.do(key, "GET /v1/plans/{id}", "GET", "/v1/plans/"+id, ""); st != 200 {
			r.fail("plan %s not readable: %d %s", id, st, body)
		}
	}
	for _, id := range r.execs {
		if st, body := r.do(key, "GET /v1/executions/{id}", "GET", "/v1/executions/"+id, ""); st != 200 {
			r.fail("execution %s not readable: %d %s", id, st, body)
		}
	}
	r.checkDeliveries(key, receiver, hookSince)

	r.report(elapsed, total.Load(), clients)
	if len(r.failures) > 0 {
		t.Fatalf("%d failures:\n%s", len(r.failures), strings.Join(r.failures, "\n"))
	}
	if len(r.plans) == 0 || len(r.execs) == 0 {
		t.Fatalf("no plan was executed under load (%d plans, %d executions)", len(r.plans), len(r.execs))
	}
}

func newLoadRig(t *testing.T, base, debug string, pid int, data string, clients int) *loadRig {
	raw, err := os.ReadFile(filepath.Join(data, "dev-credentials.json"))
	if err != nil {
		t.Fatal(err)
	}
	r := &loadRig{t: t, base: base, debug: debug, pid: pid, samples: map[string][]time.Duration{},
		client: &http.Client{Timeout: 12 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: clients + 4}}}
	json.Unmarshal(raw, &r.creds)
	return r
}

func (r *loadRig) pick(pool *[]string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(*pool) == 0 {
		return ""
	}
	return (*pool)[rand.IntN(len(*pool))]
}

func (r *loadRig) add(pool *[]string, id string) {
	r.mu.Lock()
	*pool = append(*pool, id)
	r.mu.Unlock()
}

// signUp makes n more users, each signed in: principals of their own (empty) tenants.
func (r *loadRig) signUp(n int) []principal {
	var out []principal
	for i := range n {
		body := fmt.Sprintf(`{"email":"load%d-%d@example.com","password":"correct horse battery staple"}`, i, rand.IntN(1e9))
		req, _ := http.NewRequest("POST", r.base+"/v1/auth/sign-up", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Origin", r.base)
		res, err := r.client.Do(req)
		if err != nil {
			r.t.Fatal(err)
		}
		io.Copy(io.Discard, res.Body)
		res.Body.Close()
		var cookie string
		for _, c := range res.Cookies() {
			if c.Name == "svc_session" {
				cookie = c.Value
			}
		}
		if res.StatusCode != 201 && res.StatusCode != 200 || cookie == "" {
			r.t.Fatalf("sign-up: %s", res.Status)
		}
		out = append(out, principal{name: "other user", headers: []string{"Cookie", "svc_session=" + cookie}, session: true})
	}
	return out
}

// connectedApps makes n more applications in the dev user's organization, each with a test key
// and a connection that the dev user approves through the connect flow (the consent page, as
// a browser posts it), granted discover on every source.
func (r *loadRig) connectedApps(owner principal, n int) []principal {
	var out []principal
	redirect := "https://app.example/back"
	for i := range n {
		st, body := r.do(owner, "setup", "POST", "/v1/developer/applications",
			fmt.Sprintf(`{"org_id":%q,"name":"Load app %d","operation_classes":["discover","preserve"],"redirect_uris":[%q]}`, r.creds["org_id"], i, redirect))
		if st != 201 {
			r.t.Fatalf("application: %d %s", st, body)
		}
		var app map[string]any
		json.Unmarshal(body, &app)
		st, body = r.do(owner, "setup", "POST", "/v1/developer/applications/"+fmt.Sprint(app["id"])+"/keys", `{"mode":"test"}`)
		if st != 201 {
			r.t.Fatalf("key: %d %s", st, body)
		}
		var key map[string]any
		json.Unmarshal(body, &key)
		kp := principal{name: fmt.Sprintf("app %d key", i), headers: []string{"Authorization", "Bearer " + fmt.Sprint(key["secret"])}}
		st, body = r.do(kp, "setup", "POST", "/v1/connect/sessions", `{"redirect_uri":"`+redirect+`","operation_classes":["discover"]}`)
		if st != 201 {
			r.t.Fatalf("connect session: %d %s", st, body)
		}
		var csn map[string]any
		json.Unmarshal(body, &csn)
		page := fmt.Sprint(csn["url"])
		cookie := "svc_session=" + r.creds["session_cookie"]
		req, _ := http.NewRequest("GET", page, nil)
		req.Header.Set("Cookie", cookie)
		res, err := r.client.Do(req)
		if err != nil {
			r.t.Fatal(err)
		}
		html, _ := io.ReadAll(res.Body)
		res.Body.Close()
		token := regexp.MustCompile(`name="csrf_token" value="([0-9a-f]{64})"`).FindSubmatch(html)
		if token == nil {
			r.t.Fatalf("consent page without a token: %s", html)
		}
		form := url.Values{"csrf_token": {string(token[1])}, "decision": {"approve"}}
		for _, m := range regexp.MustCompile(`name="source_id" value="(src_[0-9A-Z]{26})"`).FindAllSubmatch(html, -1) {
			form.Add("source_id", string(m[1]))
		}
		req, _ = http.NewRequest("POST", page, strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Cookie", cookie)
		req.Header.Set("Origin", r.base)
		noRedirect := &http.Client{Timeout: 10 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		res, err = noRedirect.Do(req)
		if err != nil {
			r.t.Fatal(err)
		}
		res.Body.Close()
		loc, _ := url.Parse(res.Header.Get("Location"))
		if res.StatusCode != 303 || loc == nil || !strings.HasPrefix(loc.Query().Get("connection_id"), "cxn_") {
			r.t.Fatalf("consent: %s %v", res.Status, res.Header)
		}
		kp.cx, kp.connection = true, loc.Query().Get("connection_id")
		out = append(out, kp)
	}
	return out
}

// smallPlan creates a rescue plan over the folder, authorizes it by its hash and executes it.
func (r *loadRig) smallPlan(key principal, src string) {
	st, body := r.do(key, "POST /v1/plans", "POST", "/v1/plans", `{"intent":"rescue","source_ids":["`+src+`"]}`)
	if st != 201 {
		return // a problem (checked); 409s and the like are allowed under load
	}
	var p map[string]any
	json.Unmarshal(body, &p)
	id, _ := p["planId"].(string)
	r.add(&r.plans, id)
	st, _ = r.do(key, "POST /v1/plans/{id}/authorize", "POST", "/v1/plans/"+id+"/authorize", `{"plan_hash":"`+fmt.Sprint(p["hash"])+`"}`)
	if st != 200 {
		return
	}
	st, body = r.do(key, "POST /v1/plans/{id}/execute", "POST", "/v1/plans/"+id+"/execute", "")
	if st != 202 {
		return
	}
	var x map[string]any
	json.Unmarshal(body, &x)
	if xid, _ := x["id"].(string); xid != "" {
		r.add(&r.execs, xid)
	}
}

func (r *loadRig) collectVault(key principal) {
	_, body := r.do(key, "GET /v1/vault/objects", "GET", "/v1/vault/objects?limit=50", "")
	var page struct{ Data []map[string]any }
	json.Unmarshal(body, &page)
	for _, o := range page.Data {
		if id, _ := o["id"].(string); id != "" {
			r.add(&r.vaultIDs, id)
		}
	}
}

// waitExecutions waits (up to a minute) for every execution started to finish with a receipt.
func (r *loadRig) waitExecutions(key principal) {
	deadline := time.Now().Add(time.Minute)
	for _, id := range r.execs {
		for {
			st, body := r.do(key, "GET /v1/executions/{id}", "GET", "/v1/executions/"+id, "")
			var x map[string]any
			json.Unmarshal(body, &x)
			if st == 200 && x["receipt_id"] != nil {
				break
			}
			if time.Now().After(deadline) {
				r.fail("execution %s did not finish: %s", id, body)
				return
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
}

// checkDeliveries compares the events of the webhook's types since it was created with what
// the receiver got: each exactly once.
func (r *loadRig) checkDeliveries(key principal, rcv *webhookReceiver, since time.Time) {
	want := map[string]string{} // id -> type
	cursor := ""
	for {
		path := "/v1/events?limit=200&since=" + since.Add(-time.Second).Format(time.RFC3339)
		if cursor != "" {
			path += "&cursor=" + cursor
		}
		st, body := r.do(key, "GET /v1/events", "GET", path, "")
		if st != 200 {
			r.fail("events: %d %s", st, body)
			return
		}
		var page struct {
			Data       []map[string]any
			NextCursor *string `json:"next_cursor"`
		}
		json.Unmarshal(body, &page)
		for _, ev := range page.Data {
			typ, _ := ev["type"].(string)
			at, err := time.Parse(time.RFC3339Nano, fmt.Sprint(ev["time"]))
			if err == nil && !at.Before(since) && (strings.HasPrefix(typ, "svc.plan.") || strings.HasPrefix(typ, "svc.execution.")) {
				want[ev["id"].(string)] = typ
			}
		}
		if page.NextCursor == nil {
			break
		}
		cursor = *page.NextCursor
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		got := rcv.counts()
		var missing []string
		for id, typ := range want {
			if got[id] == 0 {
				missing = append(missing, id+" "+typ)
			}
		}
		if len(missing) == 0 {
			for id, n := range got {
				if n > 1 {
					r.fail("event %s delivered %d times", id, n)
				}
			}
			r.t.Logf("webhook: %d events delivered, each once", len(want))
			return
		}
		if time.Now().After(deadline) {
			r.fail("webhook: %d of %d events never delivered: %v", len(missing), len(want), missing)
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// report logs requests/s, p50/p99 per route and the server's peak RSS.
func (r *loadRig) report(elapsed time.Duration, total int64, clients int) {
	var routes []string
	for k := range r.samples {
		routes = append(routes, k)
	}
	sort.Strings(routes)
	var b strings.Builder
	fmt.Fprintf(&b, "%d clients, %v: %d requests, %.0f requests/s\n", clients, elapsed.Round(time.Millisecond), sumSamples(r.samples), float64(sumSamples(r.samples))/elapsed.Seconds())
	var reads []time.Duration
	for _, k := range routes {
		s := slices.Clone(r.samples[k])
		slices.Sort(s)
		if strings.HasPrefix(k, "GET ") {
			reads = append(reads, s...)
		}
		fmt.Fprintf(&b, "  %-40s n=%-6d p50=%-8v p99=%v\n", k, len(s), pct(s, 50), pct(s, 99))
	}
	slices.Sort(reads)
	fmt.Fprintf(&b, "  all reads: p50=%v p99=%v\n", pct(reads, 50), pct(reads, 99))
	fmt.Fprintf(&b, "  server peak RSS: %s\n", peakRSS(r.pid))
	r.t.Log("load:\n" + b.String())
}

func sumSamples(m map[string][]time.Duration) int {
	n := 0
	for _, s := range m {
		n += len(s)
	}
	return n
}

func pct(s []time.Duration, p int) time.Duration {
	if len(s) == 0 {
		return 0
	}
	return s[min(len(s)-1, len(s)*p/100)].Round(10 * time.Microsecond)
}

// peakRSS reads a process's high-water resident set from /proc.
func peakRSS(pid int) string {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return "unknown (" + err.Error() + ")"
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if strings.HasPrefix(line, "VmHWM:") {
			return strings.TrimSpace(strings.TrimPrefix(line, "VmHWM:"))
		}
	}
	return "unknown"
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[len(s)-n:]
}

// webhookReceiver counts the events it receives by id.
type webhookReceiver struct {
	*httptest.Server
	mu  sync.Mutex
	got map[string]int
}

func newWebhookReceiver() *webhookReceiver {
	w := &webhookReceiver{got: map[string]int{}}
	w.Server = httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, req *http.Request) {
		var evs []map[string]any
		if err := json.NewDecoder(req.Body).Decode(&evs); err != nil {
			rw.WriteHeader(400)
			return
		}
		w.mu.Lock()
		for _, ev := range evs {
			if id, _ := ev["id"].(string); id != "" {
				w.got[id]++
			}
		}
		w.mu.Unlock()
		rw.WriteHeader(204)
	}))
	return w
}

func (w *webhookReceiver) counts() map[string]int {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make(map[string]int, len(w.got))
	for k, v := range w.got {
		out[k] = v
	}
	return out
}

// loadFlood floods one key of a server limited to 50 requests per 10 s, while a session keeps
// asking: every 429 carries Retry-After, and the session is served throughout.
func loadFlood(t *testing.T, bin string) {
	data := t.TempDir()
	cmd, base, _ := startWith(t, bin, data, nil, "--rate-limit", "50", "--rate-window", "10s")
	defer func() { cmd.Process.Signal(syscall.SIGTERM); cmd.Wait() }()
	r := newLoadRig(t, base, "", cmd.Process.Pid, data, 12)
	key := principal{name: "flooded key", headers: []string{"Authorization", "Bearer " + r.creds["test_api_key"]}, cx: true}
	sess := principal{name: "session", headers: []string{"Cookie", "svc_session=" + r.creds["session_cookie"], "Svc-Mode", "test"}, session: true}
	var limited, served atomic.Int64
	deadline := time.Now().Add(3 * time.Second)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for time.Now().Before(deadline) {
				switch st, _ := r.do(key, "flood GET /v1/plans", "GET", "/v1/plans?limit=5", ""); st {
				case 429:
					limited.Add(1)
				case 200:
					served.Add(1)
				}
			}
		})
	}
	var sessionOK, sessionTotal int
	for time.Now().Before(deadline) {
		st, _ := r.do(sess, "session GET /v1/sources", "GET", "/v1/sources", "")
		sessionTotal++
		if st == 200 {
			sessionOK++
		}
		time.Sleep(200 * time.Millisecond) // well within its own allowance
	}
	wg.Wait()
	t.Logf("flood: %d served, %d limited (429 with Retry-After); session %d/%d served", served.Load(), limited.Load(), sessionOK, sessionTotal)
	if limited.Load() == 0 {
		t.Error("the flooded key was never limited")
	}
	if served.Load() > 50+15+5 { // a burst of 50, then 5 a second for 3 s
		t.Errorf("the key was served %d times, over its allowance of 50 per 10 s", served.Load())
	}
	if sessionOK != sessionTotal {
		t.Errorf("another principal was starved: %d of %d served", sessionOK, sessionTotal)
	}
	if len(r.failures) > 0 {
		t.Fatalf("failures:\n%s", strings.Join(r.failures, "\n"))
	}
}
