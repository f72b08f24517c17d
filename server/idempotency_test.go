package server_test

import (
	"bytes"
	"sync"
	"testing"
	"time"
)

func TestIdempotencyReplay(t *testing.T) {
	e := newEnv(t)
	cookie := e.signUp(t, "cy@example.com")
	hdr := with(cookie, "Idempotency-Key", "org-1")
	first := e.do("POST", "/v1/developer/orgs", `{"name":"Acme"}`, hdr...)
	if first.status != 201 || first.header.Get("Idempotent-Replayed") != "" {
		t.Fatalf("first: %d %v", first.status, first.header)
	}
	// Same key, same body (spaced differently): the original response, marked replayed.
	again := e.do("POST", "/v1/developer/orgs", `{ "name" : "Acme" }`, hdr...)
	if again.status != 201 || !bytes.Equal(again.body, first.body) || again.header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("replay: %d %s %v", again.status, again.body, again.header)
	}
	checkRateHeaders(t, again)
	// Same key, another body: 409.
	r := e.do("POST", "/v1/developer/orgs", `{"name":"Other"}`, hdr...)
	checkProblem(t, r, 409, "idempotency_key_reused")
	// Same key on another endpoint: 409 too.
	r = e.do("PATCH", "/v1/account", `{"name":"Acme"}`[:0]+`{"locale":"en"}`, hdr...)
	checkProblem(t, r, 409, "idempotency_key_reused")
	// Keys are per principal: another user may use the same key.
	other := e.signUp(t, "dee@example.com")
	if r := e.do("POST", "/v1/developer/orgs", `{"name":"Acme"}`, with(other, "Idempotency-Key", "org-1")...); r.status != 201 || r.header.Get("Idempotent-Replayed") != "" {
		t.Fatalf("other principal: %d %v", r.status, r.header)
	}
	if n := e.orgCount(t, cookie); n != 1 {
		t.Fatalf("%d orgs created, want 1", n)
	}
	// Errors from the handler replay as well; a key longer than 255 characters is refused.
	long := make([]byte, 256)
	for i := range long {
		long[i] = 'k'
	}
	r = e.do("POST", "/v1/developer/orgs", `{"name":"Acme"}`, with(cookie, "Idempotency-Key", string(long))...)
	checkProblem(t, r, 400, "validation_failed")
}

func TestIdempotencyWindow(t *testing.T) {
	e := newEnv(t)
	cookie := e.signUp(t, "eve@example.com")
	hdr := with(cookie, "Idempotency-Key", "k")
	e.do("POST", "/v1/developer/orgs", `{"name":"Acme"}`, hdr...)
	e.clock.Advance(23*time.Hour + 59*time.Minute)
	if r := e.do("POST", "/v1/developer/orgs", `{"name":"Acme"}`, hdr...); r.header.Get("Idempotent-Replayed") != "true" {
		t.Fatal("not replayed within 24 h")
	}
	e.clock.Advance(2 * time.Minute)
	if r := e.do("POST", "/v1/developer/orgs", `{"name":"Acme"}`, hdr...); r.status != 201 || r.header.Get("Idempotent-Replayed") != "" {
		t.Fatalf("after 24 h the key must be new: %d %v", r.status, r.header)
	}
	if n := e.orgCount(t, cookie); n != 2 {
		t.Fatalf("%d orgs, want 2", n)
	}
}

func TestIdempotencyConcurrent(t *testing.T) {
	e := newEnv(t)
	cookie := e.signUp(t, "fay@example.com")
	hdr := with(cookie, "Idempotency-Key", "burst")
	var wg sync.WaitGroup
	results := make([]*resp, 16)
	start := make(chan struct{})
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			results[i] = e.do("POST", "/v1/developer/orgs", `{"name":"Burst"}`, hdr...)
		}()
	}
	close(start)
	wg.Wait()
	var created []byte
	for _, r := range results {
		switch {
		case r.status == 201:
			if created != nil && !bytes.Equal(created, r.body) {
				t.Fatalf("two different 201 bodies:\n%s\n%s", created, r.body)
			}
			created = r.body
		case r.status == 409:
			checkProblem(t, r, 409, "idempotency_key_in_use")
		default:
			t.Fatalf("unexpected %d %s", r.status, r.body)
		}
	}
	if n := e.orgCount(t, cookie); n != 1 {
		t.Fatalf("16 concurrent identical requests created %d orgs, want 1", n)
	}
	// Afterwards the key replays.
	if r := e.do("POST", "/v1/developer/orgs", `{"name":"Burst"}`, hdr...); r.header.Get("Idempotent-Replayed") != "true" || !bytes.Equal(r.body, created) {
		t.Fatalf("after the burst: %d %s", r.status, r.body)
	}
}

func (e *env) orgCount(t *testing.T, cookie []string) int {
	t.Helper()
	r := e.do("GET", "/v1/account", "", cookie...)
	dev, _ := r.json(t)["developer"].(map[string]any)
	ids, _ := dev["org_ids"].([]any)
	return len(ids)
}
