package server_test

import (
	"encoding/json"
	"net/url"
	"testing"
)

// An execution's steps are a paged sub-resource: a list of executions leaves them out, and
// GET /v1/executions/{id}/steps pages through all of them, oldest first, in the order the
// execution's own record shows them.
func TestExecutionStepsArePaged(t *testing.T) {
	e, _, src, _ := localEnv(t, 12)
	x := runLocal(t, e, src)
	exe := x["id"].(string)
	cx := "?connection_id=" + e.creds.ConnectionID
	want := x["steps"].([]any)
	if len(want) < 12*3 {
		t.Fatalf("the execution shows %d steps", len(want))
	}

	list := e.do("GET", "/v1/executions"+cx, "", e.key()...)
	for _, item := range list.json(t)["data"].([]any) {
		if steps, ok := item.(map[string]any)["steps"]; ok && len(steps.([]any)) > 0 {
			t.Fatalf("a listed execution inlines %d steps", len(steps.([]any)))
		}
	}

	var got []any
	cursor, pages := "", 0
	for {
		path := "/v1/executions/" + exe + "/steps" + cx + "&limit=7"
		if cursor != "" {
			path += "&cursor=" + url.QueryEscape(cursor)
		}
		r := e.do("GET", path, "", e.key()...)
		if r.status != 200 {
			t.Fatalf("steps: %d %s", r.status, r.body)
		}
		var page struct {
			Data       []any   `json:"data"`
			NextCursor *string `json:"next_cursor"`
		}
		if err := json.Unmarshal(r.body, &page); err != nil {
			t.Fatal(err)
		}
		if len(page.Data) > 7 {
			t.Fatalf("a page of limit 7 holds %d steps", len(page.Data))
		}
		got = append(got, page.Data...)
		if pages++; page.NextCursor == nil {
			break
		}
		cursor = *page.NextCursor
	}
	if len(got) != len(want) || pages != (len(want)+6)/7 {
		t.Fatalf("paged %d steps in %d pages, the execution shows %d", len(got), pages, len(want))
	}
	for i := range want {
		a, _ := json.Marshal(want[i])
		b, _ := json.Marshal(got[i])
		if string(a) != string(b) {
			t.Fatalf("step %d: paged %s, the execution shows %s", i, b, a)
		}
	}
	checkProblem(t, e.do("GET", "/v1/executions/"+exe+"/steps"+cx+"&limit=0", "", e.key()...), 400, "validation_failed")
	checkProblem(t, e.do("GET", "/v1/executions/"+exe+"/steps"+cx+"&cursor=forged", "", e.key()...), 400, "validation_failed")
	checkProblem(t, e.do("GET", "/v1/executions/exe_00000000000000000000000000/steps"+cx, "", e.key()...), 404, "not_found")
}

// A list page of executions stays small whatever the executions did: the seeded clean-up has
// thousands of steps, and its list entry is a few hundred bytes.
func TestExecutionListIsSmall(t *testing.T) {
	e := startEnv(t, nil)
	cx := "?connection_id=" + e.creds.ConnectionID
	list := e.do("GET", "/v1/executions"+cx+"&limit=50", "", e.key()...)
	items := list.json(t)["data"].([]any)
	if len(items) == 0 {
		t.Fatal("no seeded execution")
	}
	x := e.do("GET", "/v1/executions/"+items[0].(map[string]any)["id"].(string)+cx, "", e.key()...)
	t.Logf("GET /v1/executions: %d bytes for %d executions; GET /v1/executions/{id}: %d bytes", len(list.body), len(items), len(x.body))
	if per := len(list.body) / len(items); per > 2048 {
		t.Fatalf("a listed execution takes %d bytes", per)
	}
}
