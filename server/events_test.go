package server_test

import (
	"encoding/json"
	"testing"
)

type eventPage struct {
	Data []struct {
		ID           string         `json:"id"`
		Type         string         `json:"type"`
		Subject      string         `json:"subject"`
		Svcsimulated bool           `json:"svcsimulated"`
		Data         map[string]any `json:"data"`
	} `json:"data"`
}

func TestEventsFollowPlans(t *testing.T) {
	e := newPlanEnv(t, 4)
	_, p := e.create(t, `{"intent":"rescue","source_ids":["`+e.source+`"]}`)
	e.do("POST", "/v1/plans/"+p["planId"].(string)+"/cancel"+e.cx(), "", e.key()...)

	// The application's stream: newest first, test mode marked simulated.
	r := e.do("GET", "/v1/events?types=svc.plan.*", "", e.key()...)
	var pg eventPage
	json.Unmarshal(r.body, &pg)
	if r.status != 200 || len(pg.Data) != 2 || pg.Data[0].Type != "svc.plan.cancelled" || pg.Data[1].Type != "svc.plan.created" {
		t.Fatalf("events: %d %s", r.status, r.body)
	}
	if !pg.Data[0].Svcsimulated || pg.Data[0].Subject != p["planId"] || pg.Data[0].Data["state"] != "cancelled" {
		t.Fatalf("event: %+v", pg.Data[0])
	}
	// Filters: exact types, and since.
	r = e.do("GET", "/v1/events?types=svc.source.connected,svc.job.succeeded", "", e.key()...)
	json.Unmarshal(r.body, &pg)
	if len(pg.Data) != 5 { // the seeded mailbox and drive, the fake source, the seed job, the seeded export
		t.Fatalf("filtered events: %s", r.body)
	}
	r = e.do("GET", "/v1/events?since=2030-01-01T00:00:00Z", "", e.key()...)
	json.Unmarshal(r.body, &pg)
	if len(pg.Data) != 0 {
		t.Fatalf("events since 2030: %s", r.body)
	}
	checkProblem(t, e.do("GET", "/v1/events?since=yesterday", "", e.key()...), 400, "validation_failed")
	// A live key of the same application reads the live stream, which is empty.
	r = e.do("GET", "/v1/events", "", e.liveKey()...)
	json.Unmarshal(r.body, &pg)
	if len(pg.Data) != 0 {
		t.Fatalf("live stream has test events: %s", r.body)
	}
	// The user sees their test tenant's events with Svc-Mode: test.
	r = e.do("GET", "/v1/events?types=svc.plan.created", "", with(e.session(), "Svc-Mode", "test")...)
	json.Unmarshal(r.body, &pg)
	if len(pg.Data) != 1 {
		t.Fatalf("user's events: %s", r.body)
	}
}
