package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"google.golang.org/protobuf/proto"

	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/id"
	"svc.dev/svc/server"
	"svc.dev/svc/wire"
)

// bigPlan is samplePlan with n objects, sorted by asset id as the builder sorts them.
func bigPlan(e *env, n int) *svcv1.Plan {
	p := samplePlan(e.userTestTenant(), 0)
	tmpl := p.Objects[0]
	p.Objects = nil
	for i := range n {
		o := proto.CloneOf(tmpl)
		o.AssetId = id.New("ast")
		o.ProviderObjectId = fmt.Sprintf("msg-%07d", i)
		p.Objects = append(p.Objects, o)
	}
	return p
}

// TestPlansServedWholeFromChunks stores plans across chunk boundaries and checks that every
// way of reading them (REST get and list, streamed; Connect; the objects pages) serves exactly
// the plan that was stored.
func TestPlansServedWholeFromChunks(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	for _, n := range []int{0, 1, server.PlanChunk, server.PlanChunk + 1, 2*server.PlanChunk + 500, server.InlineObjects + 1} { // the last is streamed
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			p := bigPlan(e, n)
			if err := e.srv.PutPlan(ctx, e.userTestTenant(), p); err != nil {
				t.Fatal(err)
			}
			if len(p.Objects) != n {
				t.Fatalf("PutPlan left %d objects in the caller's plan", len(p.Objects))
			}
			want, err := wire.Marshal(p)
			if err != nil {
				t.Fatal(err)
			}
			r := e.do("GET", "/v1/plans/"+p.PlanId, "", with(e.session(), "Svc-Mode", "test")...)
			if r.status != 200 || !bytes.Equal(r.body, want) {
				t.Fatalf("REST get: %d, %d bytes, want %d bytes equal to the stored plan", r.status, len(r.body), len(want))
			}
			// The first page of the list holds this plan, newest: its JSON is the same.
			r = e.do("GET", "/v1/plans?limit=1", "", with(e.session(), "Svc-Mode", "test")...)
			var page struct {
				Data []json.RawMessage `json:"data"`
			}
			if err := json.Unmarshal(r.body, &page); err != nil || len(page.Data) != 1 {
				t.Fatalf("list: %v %s", err, r.body[:min(200, len(r.body))])
			}
			var got, exp any
			json.Unmarshal(page.Data[0], &got)
			json.Unmarshal(want, &exp)
			if fmt.Sprint(got) != fmt.Sprint(exp) {
				t.Fatal("the listed plan differs from the stored one")
			}
			// The objects, a page of 1000 at a time, are the plan's, in order.
			var ids []string
			cursor := ""
			for pages := 0; ; pages++ {
				path := "/v1/plans/" + p.PlanId + "/objects?limit=1000"
				if cursor != "" {
					path += "&cursor=" + cursor
				}
				r := e.do("GET", path, "", with(e.session(), "Svc-Mode", "test")...)
				var op struct {
					Data       []map[string]any `json:"data"`
					NextCursor *string          `json:"next_cursor"`
				}
				if err := json.Unmarshal(r.body, &op); r.status != 200 || err != nil {
					t.Fatalf("objects page: %d %s", r.status, r.body)
				}
				for _, o := range op.Data {
					ids = append(ids, o["assetId"].(string))
				}
				if op.NextCursor == nil {
					break
				}
				if len(op.Data) != 1000 {
					t.Fatalf("a page of %d with more to follow", len(op.Data))
				}
				cursor = *op.NextCursor
			}
			if len(ids) != n {
				t.Fatalf("paged %d objects, want %d", len(ids), n)
			}
			for i, o := range p.Objects {
				if ids[i] != o.AssetId {
					t.Fatalf("object %d is %s, want %s", i, ids[i], o.AssetId)
				}
			}
		})
	}
	checkProblem(t, e.do("GET", "/v1/plans/"+id.New("pln")+"/objects", "", with(e.session(), "Svc-Mode", "test")...), 404, "not_found")
	checkProblem(t, e.do("GET", "/v1/plans/"+id.New("pln")+"/objects?limit=1001", "", with(e.session(), "Svc-Mode", "test")...), 400, "validation_failed")
}
