package platform_test

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"time"

	"svc.dev/svc/platform"
)

// memIdem is a trivial in-memory IdempotencyStore.
type memIdem struct {
	mu   sync.Mutex
	recs map[string]platform.IdempotencyRecord
}

func (m *memIdem) ClaimIdempotency(_ context.Context, key string, rec *platform.IdempotencyRecord, notBefore, unfinishedBefore time.Time) (*platform.IdempotencyRecord, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if old, ok := m.recs[key]; ok && !old.CreatedAt.Before(notBefore) && (old.Done || !old.CreatedAt.Before(unfinishedBefore)) {
		return &old, nil
	}
	m.recs[key] = *rec
	return nil, nil
}
func (m *memIdem) FinishIdempotency(_ context.Context, key string, rec *platform.IdempotencyRecord) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.recs[key] = *rec
	return nil
}
func (m *memIdem) ReleaseIdempotency(_ context.Context, key string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.recs, key)
	return nil
}
func (m *memIdem) PurgeIdempotency(_ context.Context, before time.Time, unfinished bool) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for k, r := range m.recs {
		if r.CreatedAt.Before(before) || (unfinished && !r.Done) {
			delete(m.recs, k)
			n++
		}
	}
	return n, nil
}

func TestIdempotencyOutcomes(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	st := &memIdem{recs: map[string]platform.IdempotencyRecord{}}
	idem := platform.NewIdempotency(st, func() time.Time { return now })
	key := idem.Key("usr_1", "k")

	v, rec, err := idem.Begin(ctx, key, "/a", "h1")
	if err != nil || v != platform.IdempotencyProceed {
		t.Fatalf("first: %v %v", v, err)
	}
	if v, _, _ := idem.Begin(ctx, key, "/a", "h1"); v != platform.IdempotencyInUse {
		t.Fatalf("while running: %v", v)
	}
	if v, _, _ := idem.Begin(ctx, key, "/a", "h2"); v != platform.IdempotencyReused {
		t.Fatalf("other body while running: %v", v)
	}
	if err := idem.Finish(ctx, key, rec, 201, http.Header{"Location": {"/x"}}, []byte("body")); err != nil {
		t.Fatal(err)
	}
	v, got, _ := idem.Begin(ctx, key, "/a", "h1")
	if v != platform.IdempotencyReplay || got.Status != 201 || string(got.Body) != "body" || got.Header.Get("Location") != "/x" {
		t.Fatalf("replay: %v %+v", v, got)
	}
	if v, _, _ := idem.Begin(ctx, key, "/b", "h1"); v != platform.IdempotencyReused {
		t.Fatalf("other endpoint: %v", v)
	}
	now = now.Add(platform.IdempotencyWindow + time.Second)
	if v, _, _ := idem.Begin(ctx, key, "/b", "h9"); v != platform.IdempotencyProceed {
		t.Fatalf("after the window: %v", v)
	}
	// A released key may be retried; purge at start-up drops unfinished records.
	if err := idem.Release(ctx, key); err != nil {
		t.Fatal(err)
	}
	idem.Begin(ctx, idem.Key("usr_1", "stuck"), "/a", "h")
	if n, _ := idem.Purge(ctx, true); n != 1 {
		t.Fatalf("purged %d, want the stuck record", n)
	}

	// A key left claimed by a process that died (another replica: nobody purges it) is in use
	// until the in-flight limit, then claimed again; a finished one is replayed all its window.
	stuck := idem.Key("usr_1", "dead-replica")
	if v, _, _ := idem.Begin(ctx, stuck, "/a", "h"); v != platform.IdempotencyProceed {
		t.Fatalf("first claim: %v", v)
	}
	now = now.Add(platform.DefaultIdempotencyInFlight - time.Second)
	if v, _, _ := idem.Begin(ctx, stuck, "/a", "h"); v != platform.IdempotencyInUse {
		t.Fatalf("within the in-flight limit: %v", v)
	}
	now = now.Add(2 * time.Second)
	v, rec, _ = idem.Begin(ctx, stuck, "/a", "h")
	if v != platform.IdempotencyProceed {
		t.Fatalf("past the in-flight limit: %v, want the abandoned key claimed again", v)
	}
	idem.Finish(ctx, stuck, rec, 201, nil, []byte("done"))
	now = now.Add(2 * platform.DefaultIdempotencyInFlight)
	if v, got, _ := idem.Begin(ctx, stuck, "/a", "h"); v != platform.IdempotencyReplay || string(got.Body) != "done" {
		t.Fatalf("a finished key past the in-flight limit: %v, want a replay", v)
	}
	short := platform.NewIdempotency(st, func() time.Time { return now }).AbandonAfter(time.Minute)
	k := short.Key("usr_1", "short")
	short.Begin(ctx, k, "/a", "h")
	now = now.Add(61 * time.Second)
	if v, _, _ := short.Begin(ctx, k, "/a", "h"); v != platform.IdempotencyProceed {
		t.Fatalf("AbandonAfter(1m), 61 s on: %v", v)
	}
}
