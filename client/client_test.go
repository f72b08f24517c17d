package client_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"svc.dev/svc/server/devseed"
	"sync"
	"testing"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/emptypb"

	"svc.dev/svc/client"
	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/platform"
	"svc.dev/svc/platform/webhook"
	"svc.dev/svc/providers"
	"svc.dev/svc/receipt"
	"svc.dev/svc/server"
)

// rig is a real server (server.New on a loopback listener, seeded like --dev) and what was
// sent to it.
type rig struct {
	srv   *server.Server
	url   string
	creds *devseed.Credentials
	rec   *recorder
}

// recorder is a transport that notes each request's procedure, Idempotency-Key and status.
type recorder struct {
	mu   sync.Mutex
	sent []sent
}

type sent struct {
	path, key string
	status    int
}

func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	res, err := http.DefaultTransport.RoundTrip(req)
	s := sent{path: req.URL.Path, key: req.Header.Get("Idempotency-Key")}
	if err == nil {
		s.status = res.StatusCode
	}
	r.mu.Lock()
	r.sent = append(r.sent, s)
	r.mu.Unlock()
	return res, err
}

func (r *recorder) to(suffix string) []sent {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []sent
	for _, s := range r.sent {
		if strings.HasSuffix(s.path, suffix) {
			out = append(out, s)
		}
	}
	return out
}

var cheapPasswords = platform.PasswordParams{Memory: 64, Time: 1, Threads: 1}

func newRig(t *testing.T, wrap func(http.Handler) http.Handler, opts ...func(*server.Config)) *rig {
	t.Helper()
	t.Setenv("XDG_DATA_HOME", t.TempDir()) // the local provider's trash goes there
	cfg := server.Config{DataDir: t.TempDir(), Password: cheapPasswords,
		RateLimit: platform.RateLimit{Limit: 100000, Window: time.Minute}}
	for _, o := range opts {
		o(&cfg)
	}
	srv, err := server.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	h := srv.Handler()
	if wrap != nil {
		h = wrap(h)
	}
	ts := httptest.NewServer(h)
	t.Cleanup(func() { ts.Close(); srv.Close() })
	creds, err := srv.Seed(context.Background(), ts.URL, &devseed.Options{NoExecution: true})
	if err != nil {
		t.Fatal(err)
	}
	return &rig{srv: srv, url: ts.URL, creds: creds, rec: &recorder{}}
}

// keyClient is a client with the seeded test key through the seeded connection.
func (r *rig) keyClient(t *testing.T, retry *client.RetryPolicy) *client.Client {
	t.Helper()
	c, err := client.New(r.url, client.APIKey(r.creds.TestAPIKey),
		&client.Options{ConnectionID: r.creds.ConnectionID, HTTPClient: &http.Client{Transport: r.rec}, Retry: retry})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// folder connects a local folder of n two-year-old files in the test tenant.
func (r *rig) folder(t *testing.T, n int) (root, sourceID string) {
	t.Helper()
	root = t.TempDir()
	old := time.Now().AddDate(-2, 0, 0)
	for i := range n {
		p := filepath.Join(root, fmt.Sprintf("doc-%02d.txt", i))
		if err := os.WriteFile(p, []byte(strings.Repeat("x", 100*(i+1))), 0o600); err != nil {
			t.Fatal(err)
		}
		os.Chtimes(p, old, old)
	}
	src, err := r.srv.ConnectSource(context.Background(), platform.Tenant{Owner: r.creds.UserID, Mode: platform.ModeTest},
		server.SourceSpec{Provider: providers.VendorDLocal, Config: providers.Config{"root": root}, Kind: "folder", DisplayName: "Documents"})
	if err != nil {
		t.Fatal(err)
	}
	return root, src.Id
}

var fast = &client.RetryPolicy{MaxAttempts: 4, BaseDelay: time.Millisecond, MaxDelay: 3 * time.Second}

func policy() *svcv1.SourcePolicy { return &svcv1.SourcePolicy{MinAgeDays: proto.Int64(30)} }

// The whole loop through the client: plan, authorize by hash, execute, wait, verify the
// receipt against the published keys.
func TestPlanExecuteVerify(t *testing.T) {
	r := newRig(t, nil)
	root, src := r.folder(t, 5)
	c := r.keyClient(t, fast)
	ctx := context.Background()
	p, err := c.Plans.CreatePlan(ctx, connect.NewRequest(&svcv1.CreatePlanRequest{Intent: svcv1.PlanIntent_PLAN_INTENT_SVC,
		SourceIds: []string{src}, Policy: policy()}))
	if err != nil {
		t.Fatal(err)
	}
	if n := len(p.Msg.GetObjects()); n != 5 {
		t.Fatalf("plan has %d objects", n)
	}
	id := p.Msg.GetPlanId()
	if _, err := c.Plans.AuthorizePlan(ctx, connect.NewRequest(&svcv1.AuthorizePlanRequest{Id: id, PlanHash: p.Msg.GetHash()})); err != nil {
		t.Fatal(err)
	}
	x, err := c.Executions.ExecutePlan(ctx, connect.NewRequest(&svcv1.ExecutePlanRequest{Id: id}))
	if err != nil {
		t.Fatal(err)
	}
	exe := x.Msg
	for deadline := time.Now().Add(30 * time.Second); exe.GetReceiptId() == ""; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no receipt: %v", exe)
		}
		res, err := c.Executions.GetExecution(ctx, connect.NewRequest(&svcv1.GetExecutionRequest{Id: exe.GetId()}))
		if err != nil {
			t.Fatal(err)
		}
		exe = res.Msg
	}
	v, err := c.VerifyReceipt(ctx, exe.GetReceiptId())
	if err != nil {
		t.Fatal(err)
	}
	if v.ExecutionID != exe.GetId() || v.PlanID != id {
		t.Fatalf("verified %+v for execution %s", v, exe.GetId())
	}
	if left, _ := os.ReadDir(root); len(left) != 0 {
		t.Fatalf("%d files left", len(left))
	}
	// Every mutating call carried an Idempotency-Key; reads did not.
	for _, s := range r.rec.sent {
		mutating := strings.HasSuffix(s.path, "/CreatePlan") || strings.HasSuffix(s.path, "/AuthorizePlan") || strings.HasSuffix(s.path, "/ExecutePlan")
		if mutating != (s.key != "") {
			t.Errorf("%s sent Idempotency-Key %q", s.path, s.key)
		}
	}
	// A tampered receipt does not verify: the same check VerifyReceipt runs.
	raw, err := c.ReceiptJSON(ctx, exe.GetReceiptId())
	if err != nil {
		t.Fatal(err)
	}
	keys, _ := c.ReceiptKeys(ctx)
	bad := strings.Replace(string(raw), `"completed":5`, `"completed":6`, 1)
	if bad == string(raw) {
		t.Fatalf("receipt has no completed count:\n%s", raw)
	}
	if _, err := receipt.Verify([]byte(bad), keys); err == nil {
		t.Fatal("a tampered receipt verified")
	}
}

// List iterators follow the cursor to the last page, and stop when the caller does.
func TestListFollowsCursors(t *testing.T) {
	r := newRig(t, nil)
	_, src := r.folder(t, 1)
	c := r.keyClient(t, fast)
	ctx := context.Background()
	want := map[string]bool{}
	for range 5 {
		p, err := c.Plans.CreatePlan(ctx, connect.NewRequest(&svcv1.CreatePlanRequest{Intent: svcv1.PlanIntent_PLAN_INTENT_SVC,
			SourceIds: []string{src}, Policy: policy()}))
		if err != nil {
			t.Fatal(err)
		}
		want[p.Msg.GetPlanId()] = true
	}
	req := &svcv1.ListPlansRequest{Limit: proto.Int32(2)}
	got := map[string]bool{}
	for p, err := range c.ListPlans(ctx, req) {
		if err != nil {
			t.Fatal(err)
		}
		got[p.GetPlanId()] = true
	}
	for id := range want {
		if !got[id] {
			t.Errorf("plan %s not listed (got %d plans)", id, len(got))
		}
	}
	if req.Cursor != nil {
		t.Error("the iterator changed the caller's request")
	}
	if pages := len(r.rec.to("/ListPlans")); pages < 3 {
		t.Errorf("%d pages of 2 for %d plans", pages, len(got))
	}
	n := 0
	for range c.ListPlans(ctx, req) {
		if n++; n == 3 {
			break
		}
	}
	if n != 3 {
		t.Fatalf("broke after %d", n)
	}
}

// Errors are typed from the problem document.
func TestTypedErrors(t *testing.T) {
	r := newRig(t, nil)
	c := r.keyClient(t, fast)
	ctx := context.Background()
	_, err := c.Plans.GetPlan(ctx, connect.NewRequest(&svcv1.GetPlanRequest{Id: "pln_01JZZZZZZZZZZZZZZZZZZZZZZZ"}))
	var e *client.Error
	if !errors.As(err, &e) || e.Status != 404 || e.Code != "not_found" || e.RequestID == "" || e.Type == "" {
		t.Fatalf("missing plan: %#v", err)
	}
	_, err = c.Plans.ListPlans(ctx, connect.NewRequest(&svcv1.ListPlansRequest{Limit: proto.Int32(500)}))
	if !errors.As(err, &e) || e.Status != 400 || e.Code != "validation_failed" {
		t.Fatalf("limit 500: %v", err)
	}
	if _, ok := e.Field("limit"); !ok {
		t.Fatalf("no field path limit in %+v", e.Fields)
	}
	var ce *connect.Error
	if !errors.As(err, &ce) || ce.Code() != connect.CodeInvalidArgument {
		t.Fatalf("the Connect error is not underneath: %v", err)
	}
	bad, _ := client.New(r.url, client.APIKey("sk_test_nope"), &client.Options{Retry: fast})
	if _, err = bad.Plans.ListPlans(ctx, connect.NewRequest(&svcv1.ListPlansRequest{})); !errors.As(err, &e) || e.Status != 401 || e.Code != "unauthenticated" {
		t.Fatalf("bad key: %v", err)
	}
	// REST documents are typed the same way.
	if _, err = c.ReceiptJSON(ctx, "rcp_01JZZZZZZZZZZZZZZZZZZZZZZZ"); !errors.As(err, &e) || e.Status != 404 || e.Code != "not_found" || !strings.HasPrefix(e.Procedure, "GET /v1/receipts/") {
		t.Fatalf("missing receipt: %v", err)
	}
	if _, err := client.New("ftp://x", client.APIKey("k"), nil); err == nil {
		t.Fatal("an ftp base URL was accepted")
	}
}

// The caller's Idempotency-Key replays the first response instead of creating a second plan.
func TestCallersIdempotencyKey(t *testing.T) {
	r := newRig(t, nil)
	_, src := r.folder(t, 1)
	c := r.keyClient(t, fast)
	ctx := client.WithIdempotencyKey(context.Background(), "order-42")
	req := &svcv1.CreatePlanRequest{Intent: svcv1.PlanIntent_PLAN_INTENT_SVC, SourceIds: []string{src}, Policy: policy()}
	a, err := c.Plans.CreatePlan(ctx, connect.NewRequest(req))
	if err != nil {
		t.Fatal(err)
	}
	b, err := c.Plans.CreatePlan(ctx, connect.NewRequest(req))
	if err != nil {
		t.Fatal(err)
	}
	if a.Msg.GetPlanId() != b.Msg.GetPlanId() {
		t.Fatalf("two plans under one key: %s %s", a.Msg.GetPlanId(), b.Msg.GetPlanId())
	}
	for _, s := range r.rec.to("/CreatePlan") {
		if s.key != "order-42" {
			t.Fatalf("sent key %q", s.key)
		}
	}
	// The same key with another body is a typed 409.
	req.PreservationRequired = proto.Bool(false)
	_, err = c.Plans.CreatePlan(ctx, connect.NewRequest(req))
	var e *client.Error
	if !errors.As(err, &e) || e.Status != 409 || e.Code != "idempotency_key_reused" {
		t.Fatalf("reused key: %v", err)
	}
}

// flaky answers the first n requests to a procedure with 503, as a restarting server or a
// proxy in front of it would, then lets requests through to the real server.
func flaky(suffix string, n int, retryAfter string) func(http.Handler) http.Handler {
	var mu sync.Mutex
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
			mu.Lock()
			fail := strings.HasSuffix(req.URL.Path, suffix) && n > 0
			if fail {
				n--
			}
			mu.Unlock()
			if fail {
				if retryAfter != "" {
					w.Header().Set("Retry-After", retryAfter)
				}
				http.Error(w, "restarting", http.StatusServiceUnavailable)
				return
			}
			next.ServeHTTP(w, req)
		})
	}
}

// A mutating call that meets 503s is retried under one Idempotency-Key, and applied once.
func TestRetryOn5xxKeepsTheKey(t *testing.T) {
	r := newRig(t, flaky("/CreatePlan", 2, ""))
	_, src := r.folder(t, 1)
	c := r.keyClient(t, fast)
	ctx := context.Background()
	p, err := c.Plans.CreatePlan(ctx, connect.NewRequest(&svcv1.CreatePlanRequest{Intent: svcv1.PlanIntent_PLAN_INTENT_SVC,
		SourceIds: []string{src}, Policy: policy()}))
	if err != nil {
		t.Fatal(err)
	}
	sent := r.rec.to("/CreatePlan")
	if len(sent) != 3 || sent[0].status != 503 || sent[2].status != 200 {
		t.Fatalf("attempts %+v", sent)
	}
	if sent[0].key == "" || sent[0].key != sent[1].key || sent[1].key != sent[2].key {
		t.Fatalf("keys differ across retries: %+v", sent)
	}
	n := 0
	for q, err := range c.ListPlans(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		if q.GetPlanId() != p.Msg.GetPlanId() {
			t.Fatalf("another plan %s", q.GetPlanId())
		}
		n++
	}
	if n != 1 {
		t.Fatalf("%d plans", n)
	}
}

// A call with side effects and no Idempotency-Key (sign-out) is not retried on a 503: the
// server may have done it.
func TestNoRetryWithoutKey(t *testing.T) {
	r := newRig(t, flaky("/SignOut", 1, ""))
	c, err := client.New(r.url, client.Session{Cookie: r.creds.SessionCookie},
		&client.Options{HTTPClient: &http.Client{Transport: r.rec}, Retry: fast})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Account.SignOut(context.Background(), connect.NewRequest(&emptypb.Empty{}))
	var e *client.Error
	if !errors.As(err, &e) || e.Status != 503 {
		t.Fatalf("sign-out: %v", err)
	}
	if n := len(r.rec.to("/SignOut")); n != 1 {
		t.Fatalf("sent %d times", n)
	}
}

// Retry-After is honoured; one longer than MaxDelay is returned instead of waited for.
func TestRetryAfter(t *testing.T) {
	r := newRig(t, flaky("/ListPlans", 1, "1"))
	c := r.keyClient(t, fast)
	start := time.Now()
	if _, err := c.Plans.ListPlans(context.Background(), connect.NewRequest(&svcv1.ListPlansRequest{})); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < time.Second {
		t.Fatalf("retried after %v, before Retry-After: 1", d)
	}
	r2 := newRig(t, flaky("/ListPlans", 1, "120"))
	c2 := r2.keyClient(t, fast)
	_, err := c2.Plans.ListPlans(context.Background(), connect.NewRequest(&svcv1.ListPlansRequest{}))
	var e *client.Error
	if !errors.As(err, &e) || e.RetryAfter != 120*time.Second {
		t.Fatalf("Retry-After 120: %v", err)
	}
	if n := len(r2.rec.to("/ListPlans")); n != 1 {
		t.Fatalf("sent %d times", n)
	}
}

// The server's own rate limit: a burst past the allowance gets 429s, which the client waits
// out (Retry-After), so every call succeeds.
func TestRateLimited(t *testing.T) {
	r := newRig(t, nil, func(c *server.Config) { c.RateLimit = platform.RateLimit{Limit: 3, Window: time.Second} })
	c := r.keyClient(t, fast)
	for i := range 6 {
		if _, err := c.Plans.ListPlans(context.Background(), connect.NewRequest(&svcv1.ListPlansRequest{})); err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
	}
	limited := 0
	for _, s := range r.rec.to("/ListPlans") {
		if s.status == 429 {
			limited++
		}
	}
	if limited == 0 {
		t.Fatal("no 429 seen: the test did not exercise the limit")
	}
}

func TestVerifyWebhook(t *testing.T) {
	body := []byte(`[{"specversion":"1.0","id":"evt_1"}]`)
	now := time.Now()
	h := webhook.Sign(now, body, "whsec_new")
	if err := client.VerifyWebhook(h, body, now, "whsec_old", "whsec_new"); err != nil {
		t.Fatalf("rotated secret: %v", err)
	}
	if err := client.VerifyWebhook(h, []byte(`[]`), now, "whsec_new"); !errors.Is(err, client.ErrWebhookSignatureMismatch) {
		t.Fatalf("altered body: %v", err)
	}
	if err := client.VerifyWebhook(h, body, now.Add(6*time.Minute), "whsec_new"); !errors.Is(err, client.ErrWebhookTimestamp) {
		t.Fatalf("old delivery: %v", err)
	}
	if err := client.VerifyWebhook("", body, now, "whsec_new"); !errors.Is(err, client.ErrWebhookNoSignature) {
		t.Fatalf("unsigned: %v", err)
	}
}

// signForExample signs as the server's webhook deliveries do.
func signForExample(t time.Time, body []byte, secret string) string {
	return webhook.Sign(t, body, secret)
}

// REST reads (the receipt key set) are retried like calls without side effects.
func TestRESTRetry(t *testing.T) {
	r := newRig(t, flaky("/svc-receipts.json", 2, "0"))
	c := r.keyClient(t, fast)
	keys, err := c.ReceiptKeys(context.Background())
	if err != nil || !strings.Contains(string(keys), `"keys"`) {
		t.Fatalf("key set: %v %s", err, keys)
	}
	if sent := r.rec.to("/svc-receipts.json"); len(sent) != 3 || sent[2].status != 200 {
		t.Fatalf("attempts %+v", sent)
	}
}

// A policy with zero delays still backs off (the defaults), and MaxAttempts below 1 is 1.
func TestRetryPolicyDefaults(t *testing.T) {
	r := newRig(t, flaky("/ListPlans", 1, ""))
	c := r.keyClient(t, &client.RetryPolicy{MaxAttempts: 0})
	_, err := c.Plans.ListPlans(context.Background(), connect.NewRequest(&svcv1.ListPlansRequest{}))
	var e *client.Error
	if !errors.As(err, &e) || e.Status != 503 || len(r.rec.to("/ListPlans")) != 1 {
		t.Fatalf("MaxAttempts 0: %v, %d sent", err, len(r.rec.to("/ListPlans")))
	}
	c = r.keyClient(t, &client.RetryPolicy{MaxAttempts: 2})
	if _, err := c.Plans.ListPlans(context.Background(), connect.NewRequest(&svcv1.ListPlansRequest{})); err != nil {
		t.Fatal(err)
	}
}
