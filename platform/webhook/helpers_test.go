package webhook_test

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/id"
	"svc.dev/svc/platform"
	"svc.dev/svc/platform/event"
	"svc.dev/svc/platform/webhook"
	"svc.dev/svc/platform/webhook/webhooktest"
)

// clock is a fake clock the tests advance by hand.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock(t time.Time) *clock { return &clock{t: t} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func (c *clock) Set(t time.Time) {
	c.mu.Lock()
	c.t = t
	c.mu.Unlock()
}

func newSealer(t testing.TB) *platform.Sealer {
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		t.Fatal(err)
	}
	s, err := platform.NewSealer(key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// request is what a receiver got.
type request struct {
	header http.Header
	body   []byte
	events []map[string]any
}

func (r request) eventIDs() []string {
	out := make([]string, len(r.events))
	for i, e := range r.events {
		out[i], _ = e["id"].(string)
	}
	return out
}

// receiver is a webhook receiver on 127.0.0.1 that records every request and answers with
// the status its respond function returns (200 by default).
type receiver struct {
	*httptest.Server
	mu       sync.Mutex
	requests []request
	respond  func(r request) int
}

func newReceiver(t testing.TB) *receiver {
	rc := &receiver{}
	rc.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		req := request{header: r.Header.Clone(), body: body}
		_ = json.Unmarshal(body, &req.events)
		rc.mu.Lock()
		rc.requests = append(rc.requests, req)
		respond := rc.respond
		rc.mu.Unlock()
		status := http.StatusOK
		if respond != nil {
			status = respond(req)
		}
		w.WriteHeader(status)
	}))
	t.Cleanup(rc.Close)
	return rc
}

func (rc *receiver) setRespond(f func(request) int) {
	rc.mu.Lock()
	rc.respond = f
	rc.mu.Unlock()
}

func (rc *receiver) got() []request {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]request(nil), rc.requests...)
}

func (rc *receiver) eventIDs() []string {
	var out []string
	for _, r := range rc.got() {
		out = append(out, r.eventIDs()...)
	}
	return out
}

type env struct {
	t      testing.TB
	ctx    context.Context
	clock  *clock
	store  *webhooktest.Store
	sealer *platform.Sealer
	opts   webhook.Options
	eng    *webhook.Engine
	app    string
}

// newEnv returns an engine in dev mode (loopback receivers allowed) on a fake clock.
func newEnv(t testing.TB, mod ...func(*webhook.Options)) *env {
	e := &env{t: t, ctx: context.Background(), clock: newClock(time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC)),
		store: webhooktest.NewStore(), sealer: newSealer(t)}
	e.app = id.NewAt("app", e.clock.Now())
	e.opts = webhook.Options{Sealer: e.sealer, Dev: true, Now: e.clock.Now}
	for _, m := range mod {
		m(&e.opts)
	}
	e.restart()
	return e
}

// restart replaces the engine with a new one over the same store, as after a crash.
func (e *env) restart() {
	eng, err := webhook.New(e.ctx, e.store, e.opts)
	if err != nil {
		e.t.Fatal(err)
	}
	e.eng = eng
}

func (e *env) create(url string, mode platform.Mode, types ...string) (*webhook.Endpoint, string) {
	e.t.Helper()
	if len(types) == 0 {
		types = []string{"*"}
	}
	ep, secret, err := e.eng.Create(e.ctx, e.app, webhook.Params{URL: url, EventTypes: types, Mode: mode})
	if err != nil {
		e.t.Fatal(err)
	}
	return ep, secret
}

// event makes an event of type typ in mode.
func (e *env) event(typ string, mode platform.Mode) *svcv1.Event {
	e.t.Helper()
	info, _ := event.Lookup(typ)
	subject := id.NewAt(info.SubjectPrefix, e.clock.Now())
	if info.SubjectPrefix == "" {
		subject = e.app
	}
	ev, err := event.New(typ, subject, map[string]any{"note": "<b>&</b>", "n": 1}, mode == platform.ModeTest, e.clock.Now())
	if err != nil {
		e.t.Fatal(err)
	}
	return ev
}

func (e *env) publish(mode platform.Mode, evs ...*svcv1.Event) {
	e.t.Helper()
	for _, ev := range evs {
		if _, err := e.eng.Publish(e.ctx, mode, ev, []string{e.app}); err != nil {
			e.t.Fatal(err)
		}
	}
}

func (e *env) tick() int {
	e.t.Helper()
	n, err := e.eng.Tick(e.ctx)
	if err != nil {
		e.t.Fatal(err)
	}
	return n
}

func (e *env) deliveries(webhookID string) []*webhook.Delivery {
	e.t.Helper()
	ds, err := e.eng.Deliveries(e.ctx, webhookID, "", 200)
	if err != nil {
		e.t.Fatal(err)
	}
	return ds
}
