package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"svc.dev/svc/server/devseed"
	"sync"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/legacy"
	"google.golang.org/protobuf/types/known/timestamppb"

	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/id"
	"svc.dev/svc/platform"
	"svc.dev/svc/server"

	"svc.dev/svc/storage/bolt"
)

// clock is a settable clock for the 24-hour idempotency window and rate limits.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// env is a running server on a real loopback listener, seeded like --dev.
type env struct {
	t      testing.TB
	srv    *server.Server
	ts     *httptest.Server
	creds  *devseed.Credentials
	clock  *clock
	router routers.Router
}

// cheap argon2id parameters keep the tests fast; production uses the OWASP defaults.
var cheapPasswords = platform.PasswordParams{Memory: 64, Time: 1, Threads: 1}

func newEnv(t testing.TB, opts ...func(*server.Config)) *env {
	t.Helper()
	return startEnv(t, &devseed.Options{NoExecution: true}, opts...)
}

// startEnv starts a server on a loopback listener and seeds it like --dev with seed.
func startEnv(t testing.TB, seed *devseed.Options, opts ...func(*server.Config)) *env {
	t.Helper()
	clk := &clock{t: time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)}
	cfg := server.Config{DataDir: t.TempDir(), Password: cheapPasswords, Now: clk.Now,
		RateLimit: platform.RateLimit{Limit: 100000, Window: time.Minute}}
	for _, o := range opts {
		o(&cfg)
	}
	srv, err := server.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(func() {
		ts.Close()
		srv.Close()
	})
	creds, err := srv.Seed(context.Background(), ts.URL, seed)
	if err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, srv: srv, ts: ts, creds: creds, clock: clk}
	e.router = e.loadOpenAPI()
	return e
}

func (e *env) loadOpenAPI() routers.Router {
	res, err := http.Get(e.ts.URL + "/v1/openapi.json")
	if err != nil {
		e.t.Fatal(err)
	}
	defer res.Body.Close()
	data, _ := io.ReadAll(res.Body)
	doc, err := openapi3.NewLoader().LoadFromData(data)
	if err != nil {
		e.t.Fatalf("load openapi: %v", err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		e.t.Fatalf("openapi document is invalid: %v", err)
	}
	doc.Servers = openapi3.Servers{{URL: e.ts.URL}}
	r, err := legacy.NewRouter(doc)
	if err != nil {
		e.t.Fatal(err)
	}
	return r
}

type resp struct {
	status int
	header http.Header
	body   []byte
}

func (r *resp) json(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.body, &m); err != nil {
		t.Fatalf("response is not a JSON object: %v\n%s", err, r.body)
	}
	return m
}

// do sends a REST request; hdr are header name/value pairs. Every response of a documented
// route is validated against the served OpenAPI document.
func (e *env) do(method, path, body string, hdr ...string) *resp {
	e.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, e.ts.URL+path, rd)
	if err != nil {
		e.t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer res.Body.Close()
	data, _ := io.ReadAll(res.Body)
	r := &resp{status: res.StatusCode, header: res.Header, body: data}
	e.checkOpenAPI(req, r)
	return r
}

func (e *env) checkOpenAPI(req *http.Request, r *resp) {
	e.t.Helper()
	route, params, err := e.router.FindRoute(req)
	if err != nil {
		return // not a documented route (unknown paths answer 404 problems, checked elsewhere)
	}
	in := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route,
			Options: &openapi3filter.Options{ExcludeRequestBody: true}},
		Status:  r.status,
		Header:  r.header,
		Options: &openapi3filter.Options{IncludeResponseStatus: true, MultiError: true},
	}
	in.SetBodyBytes(r.body)
	if err := openapi3filter.ValidateResponse(context.Background(), in); err != nil {
		e.t.Errorf("%s %s -> %d does not match the OpenAPI document: %v\n%s", req.Method, req.URL.Path, r.status, err, r.body)
	}
}

// key, session and conn return the headers of the seeded credentials.
func (e *env) key() []string                { return []string{"Authorization", "Bearer " + e.creds.TestAPIKey} }
func (e *env) liveKey() []string            { return []string{"Authorization", "Bearer " + e.creds.LiveAPIKey} }
func (e *env) session() []string            { return []string{"Cookie", "svc_session=" + e.creds.SessionCookie} }
func (e *env) plansPath() string            { return "/v1/plans?connection_id=" + e.creds.ConnectionID }
func with(a []string, b ...string) []string { return append(append([]string{}, a...), b...) }

// putPlans stores n plans in a tenant directly, as the plan builder would.
func (e *env) putPlans(tenant platform.Tenant, n int, mutate func(i int, p *svcv1.Plan)) []string {
	e.t.Helper()
	plans := bolt.NewCollection(server.DBOf(e.srv), "plans", func() *svcv1.Plan { return &svcv1.Plan{} })
	var ids []string
	for i := range n {
		p := samplePlan(tenant, i)
		if mutate != nil {
			mutate(i, p)
		}
		if err := plans.Put(context.Background(), tenant.String(), p.PlanId, p); err != nil {
			e.t.Fatal(err)
		}
		ids = append(ids, p.PlanId)
	}
	return ids
}

// samplePlan is a realistic plan with a handful of objects.
func samplePlan(tenant platform.Tenant, i int) *svcv1.Plan {
	now := timestamppb.New(time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC))
	src := id.New("src")
	p := &svcv1.Plan{
		PlanId:           id.New("pln"),
		PlanVersion:      "1",
		TenantId:         tenant.String(),
		UserId:           tenant.Owner,
		Actor:            &svcv1.Actor{Type: svcv1.ActorType_ACTOR_TYPE_USER, PrincipalId: tenant.Owner},
		Intent:           svcv1.PlanIntent_PLAN_INTENT_SVC,
		OperationClasses: []svcv1.OperationClass{svcv1.OperationClass_OPERATION_CLASS_DISCOVER, svcv1.OperationClass_OPERATION_CLASS_PRESERVE},
		Simulated:        tenant.Simulated(),
		CreatedAt:        now,
		ExpiresAt:        timestamppb.New(now.AsTime().Add(24 * time.Hour)),
		SourceMarkers: []*svcv1.SourceMarker{{Provider: svcv1.Provider_PROVIDER_SIMULATED, SourceId: src,
			Kind: svcv1.SourceMarkerKind_SOURCE_MARKER_KIND_HISTORY_ID, Value: "h" + string(rune('a'+i%26)), ObservedAt: now}},
		PreservationRequired: true,
		Projection: &svcv1.Projection{ObjectCount: 10, BytesToPreserve: 10 << 20, BytesToRemove: 10 << 20,
			ProjectedQuota: []*svcv1.ProjectedQuota{{SourceId: src, UsedBytesAfter: 1 << 30}}},
		State: svcv1.PlanState_PLAN_STATE_DRAFT,
		Hash:  strings.Repeat("ab", 32),
	}
	for j := range 10 {
		p.Objects = append(p.Objects, &svcv1.PlanObject{AssetId: id.New("ast"), SourceId: src, Provider: svcv1.Provider_PROVIDER_SIMULATED,
			ProviderObjectId: "msg-" + string(rune('a'+j)), ExpectedSizeBytes: 1 << 20,
			StorageClass: svcv1.StorageClass_STORAGE_CLASS_PROMOTIONAL,
			Actions:      []svcv1.PlanAction{svcv1.PlanAction_PLAN_ACTION_PRESERVE, svcv1.PlanAction_PLAN_ACTION_TRASH}, PreservationElected: true})
	}
	return p
}

func (e *env) userTestTenant() platform.Tenant {
	return platform.Tenant{Owner: e.creds.UserID, Mode: platform.ModeTest}
}

var _ = bytes.NewReader
