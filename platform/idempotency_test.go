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

func (m *memIdem) ClaimIdempotency(_ context.Context, key string, rec *platform.IdempotencyRecord, notBefore time.Time) (*platform.IdempotencyRecord, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if old, ok := m.recs[key]; ok && !old.CreatedAt.Before(notBefore) {
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
}
