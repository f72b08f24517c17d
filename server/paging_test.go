package server_test

import (
	"encoding/json"
	"net/url"
	"slices"
	"strings"
	"testing"

	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/platform"
)

type planPage struct {
	Data []struct {
		PlanID string `json:"planId"`
		State  string `json:"state"`
	} `json:"data"`
	NextCursor *string `json:"next_cursor"`
}

// walk lists path page by page and returns the plan ids in order.
func (e *env) walk(t *testing.T, path string, hdr []string) []string {
	t.Helper()
	var ids []string
	cursor := ""
	for pages := 0; ; pages++ {
		p := path
		if cursor != "" {
			p += "&cursor=" + url.QueryEscape(cursor)
		}
		r := e.do("GET", p, "", hdr...)
		if r.status != 200 {
			t.Fatalf("page %d: %d %s", pages, r.status, r.body)
		}
		if !strings.Contains(string(r.body), `"next_cursor":`) {
			t.Fatalf("next_cursor missing: %s", r.body)
		}
		var pg planPage
		if err := json.Unmarshal(r.body, &pg); err != nil {
			t.Fatal(err)
		}
		for _, d := range pg.Data {
			ids = append(ids, d.PlanID)
		}
		if pg.NextCursor == nil {
			return ids
		}
		if len(pg.Data) == 0 {
			t.Fatal("an empty page promised more")
		}
		cursor = *pg.NextCursor
		if pages > 1000 {
			t.Fatal("pagination does not end")
		}
	}
}

func TestPaginationWalk(t *testing.T) {
	e := newEnv(t)
	stored := e.putPlans(e.userTestTenant(), 137, nil)
	slices.Reverse(stored) // newest first
	for _, limit := range []string{"1", "10", "50", "136", "137", "200"} {
		got := e.walk(t, e.plansPath()+"&limit="+limit, e.key())
		if !slices.Equal(got, stored) {
			t.Fatalf("limit %s: walked %d plans, want %d in newest-first order without duplicates or gaps", limit, len(got), len(stored))
		}
	}
	// Default page size is 50.
	r := e.do("GET", e.plansPath(), "", e.key()...)
	var pg planPage
	json.Unmarshal(r.body, &pg)
	if len(pg.Data) != 50 || pg.NextCursor == nil {
		t.Fatalf("default page has %d plans, cursor %v", len(pg.Data), pg.NextCursor)
	}
}

func TestPaginationWithFilter(t *testing.T) {
	e := newEnv(t)
	ids := e.putPlans(e.userTestTenant(), 40, func(i int, p *svcv1.Plan) {
		if i%3 == 0 {
			p.State = svcv1.PlanState_PLAN_STATE_AUTHORIZED
		}
	})
	var want []string
	for i, id := range ids {
		if i%3 == 0 {
			want = append(want, id)
		}
	}
	slices.Reverse(want)
	got := e.walk(t, e.plansPath()+"&state=authorized&limit=4", e.key())
	if !slices.Equal(got, want) {
		t.Fatalf("filtered walk got %d plans, want %d", len(got), len(want))
	}
}

func TestCursorIsTamperProofAndBound(t *testing.T) {
	e := newEnv(t)
	e.putPlans(e.userTestTenant(), 5, nil)
	r := e.do("GET", e.plansPath()+"&limit=2", "", e.key()...)
	var pg planPage
	json.Unmarshal(r.body, &pg)
	cursor := *pg.NextCursor

	tampered := []byte(cursor)
	tampered[3] ^= 1
	for name, c := range map[string]string{
		"flipped bit": string(tampered),
		"garbage":     "not-a-cursor",
		"truncated":   cursor[:len(cursor)-2],
	} {
		r := e.do("GET", e.plansPath()+"&limit=2&cursor="+url.QueryEscape(c), "", e.key()...)
		if got := errorPath(t, checkProblem(t, r, 400, "validation_failed")); got != "cursor" {
			t.Errorf("%s: path %q", name, got)
		}
	}
	// The same cursor with other filters, or for another principal, is refused too.
	r = e.do("GET", e.plansPath()+"&limit=2&state=draft&cursor="+url.QueryEscape(cursor), "", e.key()...)
	checkProblem(t, r, 400, "validation_failed")
	r = e.do("GET", "/v1/plans?limit=2&cursor="+url.QueryEscape(cursor), "", e.session()...)
	checkProblem(t, r, 400, "validation_failed")
	// A different page size keeps the cursor valid: limit is not a filter.
	r = e.do("GET", e.plansPath()+"&limit=3&cursor="+url.QueryEscape(cursor), "", e.key()...)
	if r.status != 200 {
		t.Fatalf("cursor with another limit: %d %s", r.status, r.body)
	}
}

func TestTenancy(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	testPlans := e.putPlans(e.userTestTenant(), 3, nil)
	livePlans := e.putPlans(platform.Tenant{Owner: e.creds.UserID, Mode: platform.ModeLive}, 2, nil)

	// The session sees the user's live tenant only.
	if got := e.walk(t, "/v1/plans?limit=10", e.session()); len(got) != 2 || !slices.Contains(livePlans, got[0]) {
		t.Fatalf("session sees %v, want the 2 live plans", got)
	}
	// The test connection sees the test tenant only.
	if got := e.walk(t, e.plansPath(), e.key()); len(got) != 3 || !slices.Contains(testPlans, got[0]) {
		t.Fatalf("test key sees %v", got)
	}
	// A live key may not use the test connection: another tenant's id is not found.
	r := e.do("GET", e.plansPath(), "", e.liveKey()...)
	checkProblem(t, r, 404, "not_found")

	// A live connection of the same application reaches the live tenant.
	devs := e.srv.Developers()
	liveConn, err := devs.Connect(ctx, e.creds.ApplicationID, e.creds.UserID, platform.ModeLive, platform.Grant{OperationClasses: []string{"discover"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := e.walk(t, "/v1/plans?connection_id="+liveConn.ID, e.liveKey()); len(got) != 2 {
		t.Fatalf("live connection sees %d plans, want 2", len(got))
	}
	// Another application's key cannot use this application's connection.
	other, err := devs.CreateApplication(ctx, e.creds.OrgID, "Other", []string{"discover"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, otherKey, err := devs.CreateKey(ctx, other.ID, platform.ModeLive, nil)
	if err != nil {
		t.Fatal(err)
	}
	r = e.do("GET", "/v1/plans?connection_id="+liveConn.ID, "", "Authorization", "Bearer "+otherKey)
	checkProblem(t, r, 404, "not_found")

	// Another user sees nothing of this one.
	a := e.signUp(t, "other@example.com")
	if got := e.walk(t, "/v1/plans?limit=10", a); len(got) != 0 {
		t.Fatalf("another user sees %v", got)
	}
	// A session may not name a connection.
	r = e.do("GET", e.plansPath(), "", e.session()...)
	checkProblem(t, r, 400, "validation_failed")
}

func TestGrantsAndScopes(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	devs := e.srv.Developers()
	// A connection whose grant lacks discover may not list plans.
	monitorOnly, err := devs.Connect(ctx, e.creds.ApplicationID, e.creds.UserID, platform.ModeTest, platform.Grant{OperationClasses: []string{"monitor"}})
	if err != nil {
		t.Fatal(err)
	}
	r := e.do("GET", "/v1/plans?connection_id="+monitorOnly.ID, "", e.key()...)
	checkProblem(t, r, 403, "forbidden")

	// A key whose scopes lack discover may not either, whatever the grant.
	_, narrowKey, err := devs.CreateKey(ctx, e.creds.ApplicationID, platform.ModeTest, []string{"monitor"})
	if err != nil {
		t.Fatal(err)
	}
	r = e.do("GET", e.plansPath(), "", "Authorization", "Bearer "+narrowKey)
	checkProblem(t, r, 403, "forbidden")

	// A grant limited to some sources hides plans that touch others.
	var src string
	e.putPlans(e.userTestTenant(), 4, func(i int, p *svcv1.Plan) {
		if i == 0 {
			src = p.SourceMarkers[0].SourceId
		}
	})
	narrow, err := devs.Connect(ctx, e.creds.ApplicationID, e.creds.UserID, platform.ModeTest,
		platform.Grant{OperationClasses: []string{"discover"}, SourceIDs: []string{src}})
	if err != nil {
		t.Fatal(err)
	}
	if got := e.walk(t, "/v1/plans?connection_id="+narrow.ID, e.key()); len(got) != 1 {
		t.Fatalf("source-limited grant sees %d plans, want 1", len(got))
	}
}
