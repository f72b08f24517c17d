package server_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gowebpki/jcs"

	"svc.dev/svc/plan"
	"svc.dev/svc/platform"
	"svc.dev/svc/providers"
	"svc.dev/svc/providers/builtin"
	"svc.dev/svc/server"
)

// fakeMail is a provider whose content the test controls. Planning may list and ask for
// changes; any mutating call (or a fetch) fails the test.
type fakeMail struct {
	t    testing.TB
	mu   sync.Mutex
	objs []providers.Object
	rev  int
}

func (f *fakeMail) Describe(context.Context) (providers.Description, error) {
	return providers.Description{Name: providers.VendorAMail, ProtocolVersion: providers.ProtocolVersion, DisplayName: "Fake mail",
		OperationClasses: providers.OperationClasses, Capabilities: []providers.Capability{providers.CapTrash, providers.CapRemove, providers.CapUntrash, providers.CapWrite, providers.CapQuota},
		ObjectKinds: []providers.Kind{providers.KindMessage}, MarkerKinds: []providers.MarkerKind{providers.MarkerHistoryID}}, nil
}

func (f *fakeMail) marker() providers.Marker {
	return providers.Marker{Kind: providers.MarkerHistoryID, Value: fmt.Sprint(f.rev)}
}

func (f *fakeMail) List(_ context.Context, req providers.ListRequest) (providers.Page, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	start := 0
	fmt.Sscan(req.PageToken, &start)
	end := min(start+max(req.PageSize, 1), len(f.objs))
	pg := providers.Page{Objects: append([]providers.Object(nil), f.objs[start:end]...), Marker: f.marker()}
	if end < len(f.objs) {
		pg.NextPageToken = fmt.Sprint(end)
	}
	return pg, nil
}

func (f *fakeMail) Changes(_ context.Context, req providers.ChangesRequest) (providers.ChangePage, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if req.Since.Value == fmt.Sprint(f.rev) {
		return providers.ChangePage{Marker: f.marker()}, nil
	}
	// What moved is the first message, which plans over the mailbox hold: a plan is stale
	// only when its own objects change.
	return providers.ChangePage{Changes: []providers.Change{{Type: providers.ChangeDelete, ObjectID: f.objs[0].ID}}, Marker: f.marker()}, nil
}

func (f *fakeMail) Fetch(context.Context, providers.FetchRequest) (*providers.Content, error) {
	f.t.Error("planning fetched content")
	return nil, providers.ErrUnsupported
}
func (f *fakeMail) Trash(context.Context, providers.ActionRequest) (providers.ActionResult, error) {
	f.t.Error("planning trashed an object")
	return providers.ActionResult{}, providers.ErrUnsupported
}
func (f *fakeMail) Remove(context.Context, providers.ActionRequest) (providers.ActionResult, error) {
	f.t.Error("planning removed an object")
	return providers.ActionResult{}, providers.ErrUnsupported
}
func (f *fakeMail) Untrash(context.Context, providers.UntrashRequest) (providers.Object, error) {
	f.t.Error("planning untrashed an object")
	return providers.Object{}, providers.ErrUnsupported
}
func (f *fakeMail) Write(context.Context, providers.WriteRequest, io.Reader) (providers.Object, error) {
	f.t.Error("planning wrote content")
	return providers.Object{}, providers.ErrUnsupported
}
func (f *fakeMail) Quota(context.Context, string) (providers.Quota, error) {
	return providers.Quota{UsedBytes: 8 << 30, LimitBytes: 10 << 30, ObservedAt: time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)}, nil
}

// bump changes the mailbox: its marker moves.
func (f *fakeMail) bump() {
	f.mu.Lock()
	f.rev++
	f.mu.Unlock()
}

func newFakeMail(t testing.TB, n int) *fakeMail {
	f := &fakeMail{t: t}
	base := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	for i := range n {
		f.objs = append(f.objs, providers.Object{ID: fmt.Sprintf("msg-%04d", i), Version: "v1", Kind: providers.KindMessage,
			Name: fmt.Sprintf("Message %d", i), SizeBytes: int64(1000 + i), ModifiedAt: base.AddDate(0, 0, -10*i),
			Message: &providers.MessageHeaders{From: "news@shop.example", Subject: "Deals", ListUnsubscribe: "<mailto:u@shop.example>"}})
	}
	return f
}

// planEnv is an env whose registry also has the fake mailbox, connected in the dev user's test
// tenant.
type planEnv struct {
	*env
	fake   *fakeMail
	source string
}

func newPlanEnv(t *testing.T, n int) *planEnv {
	fake := newFakeMail(t, n)
	reg, err := builtin.Registry(builtin.Options{})
	if err != nil {
		t.Fatal(err)
	}
	desc, _ := fake.Describe(context.Background())
	reg.Register(providers.InProcess(desc, func(context.Context, providers.Config) (providers.Provider, error) { return fake, nil }))
	t.Cleanup(func() { reg.Close() })
	e := newEnv(t, func(c *server.Config) { c.Providers = reg })
	src, err := e.srv.ConnectSource(context.Background(), e.userTestTenant(), server.SourceSpec{Provider: providers.VendorAMail, SourceRef: "inbox", Kind: "mail", DisplayName: "Fake"})
	if err != nil {
		t.Fatal(err)
	}
	return &planEnv{env: e, fake: fake, source: src.Id}
}

func (e *planEnv) cx() string { return "?connection_id=" + e.creds.ConnectionID }

func (e *planEnv) create(t *testing.T, body string, hdr ...string) (*resp, map[string]any) {
	t.Helper()
	r := e.do("POST", "/v1/plans"+e.cx(), body, append(e.key(), hdr...)...)
	if r.status != 201 {
		return r, nil
	}
	return r, r.json(t)
}

func TestCreatePlanOverSimulatedSources(t *testing.T) {
	e := newEnv(t)
	r := e.do("POST", "/v1/plans?connection_id="+e.creds.ConnectionID, `{"intent":"svc","policy":{"minAgeDays":30,"removePromotional":true}}`, e.key()...)
	if r.status != 201 {
		t.Fatalf("%d %s", r.status, r.body)
	}
	p := r.json(t)
	if p["state"] != "validated" || p["simulated"] != true || len(p["sourceMarkers"].([]any)) != 2 {
		t.Fatalf("plan: state %v simulated %v markers %v", p["state"], p["simulated"], p["sourceMarkers"])
	}
	objs := p["objects"].([]any)
	proj := p["projection"].(map[string]any)
	if len(objs) == 0 || proj["objectCount"] != float64(len(objs)) || proj["bytesToRemove"].(float64) <= 0 {
		t.Fatalf("%d objects, projection %v", len(objs), proj)
	}
	if got := independentPlanHash(t, r.body); got != p["hash"] {
		t.Fatalf("served hash %v, recomputed %s", p["hash"], got)
	}
	// It is stored: GET returns the same bytes, and the list has it.
	g := e.do("GET", "/v1/plans/"+p["planId"].(string)+"?connection_id="+e.creds.ConnectionID, "", e.key()...)
	if g.status != 200 || string(g.body) != string(r.body) {
		t.Fatalf("GET differs: %d", g.status)
	}
	if ids := e.walk(t, e.plansPath(), e.key()); len(ids) != 1 || ids[0] != p["planId"] {
		t.Fatalf("list: %v", ids)
	}
}

// independentPlanHash recomputes a served plan's hash with gowebpki/jcs (docs/plans.md).
func independentPlanHash(t *testing.T, served []byte) string {
	var all map[string]json.RawMessage
	if err := json.Unmarshal(served, &all); err != nil {
		t.Fatal(err)
	}
	material := map[string]json.RawMessage{}
	for _, k := range plan.MaterialFields {
		material[k] = all[k]
	}
	// docs/plans.md: storageClassReason explains and is not material.
	var objs []map[string]json.RawMessage
	if err := json.Unmarshal(all["objects"], &objs); err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		delete(o, "storageClassReason")
	}
	material["objects"], _ = json.Marshal(objs)
	js, _ := json.Marshal(material)
	canon, err := jcs.Transform(js)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(canon)
	return hex.EncodeToString(sum[:])
}

func TestAuthorizeAndCancel(t *testing.T) {
	e := newPlanEnv(t, 12)
	_, p := e.create(t, `{"intent":"svc","source_ids":["`+e.source+`"],"policy":{"removePromotional":true}}`)
	id, hash := p["planId"].(string), p["hash"].(string)
	path := "/v1/plans/" + id

	r := e.do("POST", path+"/authorize"+e.cx(), `{"plan_hash":"`+strings.Repeat("0", 64)+`"}`, e.key()...)
	checkProblem(t, r, 409, "plan_stale")
	r = e.do("POST", path+"/authorize"+e.cx(), `{"plan_hash":"nothex"}`, e.key()...)
	checkProblem(t, r, 400, "validation_failed")

	r = e.do("POST", path+"/authorize"+e.cx(), `{"plan_hash":"`+hash+`"}`, e.key()...)
	if r.status != 200 {
		t.Fatalf("authorize: %d %s", r.status, r.body)
	}
	a := r.json(t)
	auth, _ := a["authorization"].(map[string]any)
	if a["state"] != "authorized" || a["hash"] != hash || auth["planHashAtAuthorization"] != hash || auth["authorizedBy"] == "" || auth["actionDecisionId"] == "" {
		t.Fatalf("authorized plan: %s", r.body)
	}
	// Authorizing again is a state conflict; cancelling an authorized plan works once.
	checkProblem(t, e.do("POST", path+"/authorize"+e.cx(), `{"plan_hash":"`+hash+`"}`, e.key()...), 409, "invalid_state")
	if r := e.do("POST", path+"/cancel"+e.cx(), "", e.key()...); r.status != 200 || r.json(t)["state"] != "cancelled" {
		t.Fatalf("cancel: %d %s", r.status, r.body)
	}
	checkProblem(t, e.do("POST", path+"/cancel"+e.cx(), "", e.key()...), 409, "invalid_state")
}

func TestStaleAndExpiredPlans(t *testing.T) {
	e := newPlanEnv(t, 5)
	_, p := e.create(t, `{"intent":"rescue","source_ids":["`+e.source+`"]}`)
	e.fake.bump() // the mailbox changes after the plan was built
	r := e.do("POST", "/v1/plans/"+p["planId"].(string)+"/authorize"+e.cx(), `{"plan_hash":"`+p["hash"].(string)+`"}`, e.key()...)
	checkProblem(t, r, 409, "plan_stale")
	if g := e.do("GET", "/v1/plans/"+p["planId"].(string)+e.cx(), "", e.key()...); g.json(t)["state"] != "stale" {
		t.Fatalf("state after a moved source: %s", g.body)
	}

	_, p = e.create(t, `{"intent":"rescue","source_ids":["`+e.source+`"]}`)
	e.clock.Advance(plan.DefaultTTL + time.Minute)
	if g := e.do("GET", "/v1/plans/"+p["planId"].(string)+e.cx(), "", e.key()...); g.json(t)["state"] != "expired" {
		t.Fatalf("state after expiresAt: %s", g.body)
	}
	r = e.do("POST", "/v1/plans/"+p["planId"].(string)+"/authorize"+e.cx(), `{"plan_hash":"`+p["hash"].(string)+`"}`, e.key()...)
	checkProblem(t, r, 409, "invalid_state")
}

func TestStepUpAndApproval(t *testing.T) {
	e := newPlanEnv(t, plan.DelegatedRemovalObjects+5)
	_, p := e.create(t, `{"intent":"svc","source_ids":["`+e.source+`"],"policy":{"removePromotional":true}}`)
	pol := p["policy"].(map[string]any)
	if pol["decision"] != "step_up_required" {
		t.Fatalf("decision %v", pol)
	}
	authorize := `{"plan_hash":"` + p["hash"].(string) + `"}`
	r := e.do("POST", "/v1/plans/"+p["planId"].(string)+"/authorize"+e.cx(), authorize, e.key()...)
	prob := checkProblem(t, r, 403, "step_up_required")
	if ap, _ := prob["required_approvals"].([]any); len(ap) != 1 || ap[0] != "human_user" {
		t.Fatalf("required approvals: %s", r.body)
	}
	// The end user, signed in and looking at their test tenant, approves it.
	r = e.do("POST", "/v1/plans/"+p["planId"].(string)+"/authorize", authorize, with(e.session(), "Svc-Mode", "test")...)
	if r.status != 200 || r.json(t)["state"] != "authorized" {
		t.Fatalf("user approval: %d %s", r.status, r.body)
	}
}

func TestPlanGrantsAndScopes(t *testing.T) {
	e := newPlanEnv(t, 3)
	ctx := context.Background()
	devs := e.srv.Developers()
	// A grant limited to another source cannot plan over this one.
	other, err := devs.Connect(ctx, e.creds.ApplicationID, e.creds.UserID, platform.ModeTest,
		platform.Grant{OperationClasses: platform.OperationClasses, SourceIDs: []string{"src_01JD0000000000000000000000"}})
	if err != nil {
		t.Fatal(err)
	}
	r := e.do("POST", "/v1/plans?connection_id="+other.ID, `{"intent":"rescue","source_ids":["`+e.source+`"]}`, e.key()...)
	checkProblem(t, r, 403, "forbidden")
	// A grant without remove makes a clean-up plan need a scope step-up.
	noRemove, _ := devs.Connect(ctx, e.creds.ApplicationID, e.creds.UserID, platform.ModeTest,
		platform.Grant{OperationClasses: []string{"discover", "preserve"}})
	r = e.do("POST", "/v1/plans?connection_id="+noRemove.ID, `{"intent":"svc","source_ids":["`+e.source+`"],"policy":{"removePromotional":true}}`, e.key()...)
	p := r.json(t)
	if pol := p["policy"].(map[string]any); pol["decision"] != "step_up_required" || pol["requiredApprovals"].([]any)[0] != "scope_step_up" {
		t.Fatalf("policy %v", pol)
	}
	// An unknown source is not found; export without a destination is invalid.
	r = e.do("POST", "/v1/plans"+e.cx(), `{"intent":"rescue","source_ids":["src_01JD0000000000000000000000"]}`, e.key()...)
	checkProblem(t, r, 404, "not_found")
	r = e.do("POST", "/v1/plans"+e.cx(), `{"intent":"export"}`, e.key()...)
	if got := errorPath(t, checkProblem(t, r, 400, "validation_failed")); got != "destination_id" {
		t.Fatalf("path %q", got)
	}
	r = e.do("POST", "/v1/plans"+e.cx(), `{}`, e.key()...)
	if got := errorPath(t, checkProblem(t, r, 400, "validation_failed")); got != "intent" {
		t.Fatalf("path %q", got)
	}
}

func TestPlanIdempotency(t *testing.T) {
	e := newPlanEnv(t, 3)
	body := `{"intent":"rescue","source_ids":["` + e.source + `"]}`
	r1, p1 := e.create(t, body, "Idempotency-Key", "plan-1")
	r2, p2 := e.create(t, body, "Idempotency-Key", "plan-1")
	if r2.header.Get("Idempotent-Replayed") != "true" || p1["planId"] != p2["planId"] || string(r1.body) != string(r2.body) {
		t.Fatalf("replay: %v %v", p1["planId"], p2["planId"])
	}
	if ids := e.walk(t, e.plansPath(), e.key()); len(ids) != 1 {
		t.Fatalf("%d plans after a replay", len(ids))
	}
}

func TestSourcesAndPolicy(t *testing.T) {
	e := newPlanEnv(t, 4)
	var list struct {
		Data []map[string]any `json:"data"`
	}
	r := e.do("GET", "/v1/sources"+e.cx(), "", e.key()...)
	json.Unmarshal(r.body, &list)
	if r.status != 200 || len(list.Data) != 3 { // two simulated sources and the fake mailbox
		t.Fatalf("sources: %d %s", r.status, r.body)
	}
	r = e.do("GET", "/v1/sources/"+e.source+e.cx(), "", e.key()...)
	src := r.json(t)
	if src["status"] != "connected" || src["provider"] != "vendor_a_mail" || src["simulated"] != true {
		t.Fatalf("source %s", r.body)
	}
	r = e.do("PUT", "/v1/sources/"+e.source+"/policy"+e.cx(), `{"excludeSenders":["news@shop.example"]}`, e.key()...)
	pol := r.json(t)["policy"].(map[string]any)
	if r.status != 200 || pol["version"] != "1" || pol["excludeSenders"].([]any)[0] != "news@shop.example" {
		t.Fatalf("policy: %d %s", r.status, r.body)
	}
	r = e.do("PUT", "/v1/sources/"+e.source+"/policy"+e.cx(), `{"excludeSenders":["news@shop.example"],"minAgeDays":-1}`, e.key()...)
	checkProblem(t, r, 400, "validation_failed")
	r = e.do("PUT", "/v1/sources/"+e.source+"/policy"+e.cx(), `{"excludeSenders":["news@shop.example"],"unknown":1}`, e.key()...)
	checkProblem(t, r, 400, "validation_failed")
	// The source's policy applies to the next plan: every message is excluded by sender.
	_, p := e.create(t, `{"intent":"svc","source_ids":["`+e.source+`"]}`)
	if len(p["objects"].([]any)) != 0 || len(p["excluded"].([]any)) != 4 {
		t.Fatalf("policy not applied: %d objects, %d excluded", len(p["objects"].([]any)), len(p["excluded"].([]any)))
	}
}
