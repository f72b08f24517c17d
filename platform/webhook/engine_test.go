package webhook_test

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/id"
	"svc.dev/svc/platform"
	"svc.dev/svc/platform/event"
	"svc.dev/svc/platform/webhook"
	"svc.dev/svc/wire"
)

func TestModesAndEventTypesRoute(t *testing.T) {
	e := newEnv(t)
	testAll, liveAll, testPlans, testExact := newReceiver(t), newReceiver(t), newReceiver(t), newReceiver(t)
	e.create(testAll.URL, platform.ModeTest, "*")
	e.create(liveAll.URL, platform.ModeLive, "*")
	e.create(testPlans.URL, platform.ModeTest, "svc.plan.*")
	e.create(testExact.URL, platform.ModeTest, "svc.vault.object.corrupt", "svc.execution.failed")

	plan := e.event(event.PlanStale, platform.ModeTest)
	corrupt := e.event(event.VaultObjectCorrupt, platform.ModeTest)
	committed := e.event(event.VaultObjectCommitted, platform.ModeTest)
	live := e.event(event.PlanStale, platform.ModeLive)
	e.publish(platform.ModeTest, plan, corrupt, committed)
	e.publish(platform.ModeLive, live)
	// An application with no webhooks, and one not listed, get nothing.
	if n, err := e.eng.Publish(e.ctx, platform.ModeTest, e.event(event.PlanStale, platform.ModeTest), []string{id.NewAt("app", time.Now())}); n != 0 || err != nil {
		t.Errorf("Publish to another app: %d, %v", n, err)
	}
	e.tick()
	for name, c := range map[string]struct {
		rc   *receiver
		want []string
	}{
		"test *":          {testAll, []string{plan.GetId(), corrupt.GetId(), committed.GetId()}},
		"live *":          {liveAll, []string{live.GetId()}},
		"test svc.plan.*": {testPlans, []string{plan.GetId()}},
		"test exact":      {testExact, []string{corrupt.GetId()}},
	} {
		if got := c.rc.eventIDs(); !sameSet(got, c.want) || len(got) != len(c.want) {
			t.Errorf("%s got %v, want %v", name, got, c.want)
		}
	}
	for _, r := range testAll.got() {
		for _, ev := range r.events {
			if ev["svcsimulated"] != true {
				t.Errorf("test-mode event without svcsimulated: %v", ev)
			}
		}
	}
	if ev := liveAll.got()[0].events[0]; ev["svcsimulated"] != false {
		t.Errorf("live event svcsimulated = %v", ev["svcsimulated"])
	}

	// The mode an event is published in must match its svcsimulated flag.
	if _, err := e.eng.Publish(e.ctx, platform.ModeLive, e.event(event.PlanStale, platform.ModeTest), []string{e.app}); !errors.Is(err, webhook.ErrModeMismatch) {
		t.Errorf("test event published live: %v", err)
	}
	if _, err := e.eng.Publish(e.ctx, platform.ModeTest, e.event(event.PlanStale, platform.ModeLive), []string{e.app}); !errors.Is(err, webhook.ErrModeMismatch) {
		t.Errorf("live event published in test: %v", err)
	}
	for _, bad := range []*svcv1.Event{nil, {Specversion: "0.3", Id: plan.GetId(), Type: "x", Svcsimulated: true}, {Specversion: "1.0", Id: "evt_1", Type: "x", Svcsimulated: true}} {
		if _, err := e.eng.Publish(e.ctx, platform.ModeTest, bad, []string{e.app}); !errors.Is(err, webhook.ErrInvalidEvent) {
			t.Errorf("Publish(%v) = %v", bad, err)
		}
	}
}

func TestBatchesOfAtMost20(t *testing.T) {
	e := newEnv(t)
	rc := newReceiver(t)
	ep, _ := e.create(rc.URL, platform.ModeTest)
	var sent []string
	for range 45 {
		ev := e.event(event.JobSucceeded, platform.ModeTest)
		sent = append(sent, ev.GetId())
		e.publish(platform.ModeTest, ev)
	}
	if n := e.tick(); n != 3 {
		t.Fatalf("%d requests for 45 events, want 3", n)
	}
	var sizes []int
	var got []string
	for _, r := range rc.got() {
		sizes = append(sizes, len(r.events))
		got = append(got, r.eventIDs()...)
	}
	slices.Sort(sizes)
	if !slices.Equal(sizes, []int{5, 20, 20}) {
		t.Errorf("batch sizes %v, want 20, 20, 5", sizes)
	}
	if !sameSet(got, sent) || len(got) != 45 {
		t.Errorf("got %d events", len(got))
	}
	for _, d := range e.deliveries(ep.ID) {
		if len(d.EventIDs) > webhook.MaxBatch || len(d.EventIDs) != len(d.Events) {
			t.Errorf("delivery with %d event ids and %d events", len(d.EventIDs), len(d.Events))
		}
	}
	// Publishing the same event again (an emitter retrying) before it is sent queues it once.
	ev := e.event(event.JobSucceeded, platform.ModeTest)
	e.publish(platform.ModeTest, ev, ev)
	e.tick()
	if last := rc.got()[3]; len(last.events) != 1 {
		t.Errorf("republished event sent %d times", len(last.events))
	}
}

// A receiver that hangs holds only its own webhook's slots: another webhook's deliveries go
// out meanwhile, and Publish (the API path) does not wait for either.
func TestSlowReceiverDoesNotDelayOthers(t *testing.T) {
	e := newEnv(t, func(o *webhook.Options) { o.Now = time.Now; o.PerWebhook = 2 })
	release := make(chan struct{})
	slow, fast := newReceiver(t), newReceiver(t)
	slow.setRespond(func(request) int {
		select {
		case <-release:
		case <-time.After(8 * time.Second):
		}
		return 200
	})
	var fastGot atomic.Int32
	fast.setRespond(func(r request) int { fastGot.Add(int32(len(r.events))); return 200 })
	e.create(slow.URL, platform.ModeLive)
	e.create(fast.URL, platform.ModeLive)

	ctx, cancel := context.WithCancel(e.ctx)
	done := make(chan error)
	go func() { done <- e.eng.Run(ctx) }()
	defer func() {
		close(release)
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()

	for i := range 3 {
		began := time.Now()
		e.publish(platform.ModeLive, e.event(event.ExecutionCompleted, platform.ModeLive))
		if d := time.Since(began); d > 500*time.Millisecond {
			t.Errorf("Publish took %s while a receiver hangs", d)
		}
		deadline := time.Now().Add(3 * time.Second)
		for fastGot.Load() < int32(i+1) && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
		if fastGot.Load() < int32(i+1) {
			t.Fatalf("event %d not delivered to the fast receiver while the slow one hangs", i+1)
		}
	}
	for deadline := time.Now().Add(2 * time.Second); len(slow.got()) == 0 && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
	}
	if n := len(slow.got()); n == 0 || n > 2 {
		t.Errorf("slow receiver has %d requests in flight, want 1 or 2 (PerWebhook)", n)
	}
}

func TestRunDeliversAndStops(t *testing.T) {
	e := newEnv(t, func(o *webhook.Options) { o.Now = time.Now })
	rc := newReceiver(t)
	ep, _ := e.create(rc.URL, platform.ModeTest)
	e.publish(platform.ModeTest, e.event(event.JobStarted, platform.ModeTest)) // queued before Run
	ctx, cancel := context.WithCancel(e.ctx)
	done := make(chan error)
	go func() { done <- e.eng.Run(ctx) }()
	e.publish(platform.ModeTest, e.event(event.JobSucceeded, platform.ModeTest))
	deadline := time.Now().Add(5 * time.Second)
	settled := func() bool {
		ds := e.deliveries(ep.ID)
		n := 0
		for _, d := range ds {
			if d.Status != webhook.DeliverySucceeded {
				return false
			}
			n += len(d.EventIDs)
		}
		return n == 2
	}
	for !settled() && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if err := e.eng.Run(ctx); !errors.Is(err, webhook.ErrRunning) {
		t.Errorf("second Run: %v", err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got := rc.eventIDs(); len(got) != 2 {
		t.Fatalf("Run delivered %d events", len(got))
	}
	for _, d := range e.deliveries(ep.ID) {
		if d.Status != webhook.DeliverySucceeded {
			t.Errorf("delivery %s", d.Status)
		}
	}
}

func TestTimeoutsAndRedirectsFail(t *testing.T) {
	e := newEnv(t, func(o *webhook.Options) { o.Timeout = 200 * time.Millisecond })
	slow, redirect := newReceiver(t), newReceiver(t)
	slow.setRespond(func(request) int { time.Sleep(time.Second); return 200 })
	redirect.setRespond(func(request) int { return http.StatusFound })
	a, _ := e.create(slow.URL, platform.ModeTest)
	b, _ := e.create(redirect.URL, platform.ModeTest)
	e.publish(platform.ModeTest, e.event(event.JobFailed, platform.ModeTest))
	e.tick()
	da, db := e.deliveries(a.ID)[0], e.deliveries(b.ID)[0]
	if da.Status != webhook.DeliveryFailed || !strings.Contains(da.LastError, "timeout") || da.LastResponseStatus != 0 {
		t.Errorf("slow receiver: %s %d %q", da.Status, da.LastResponseStatus, da.LastError)
	}
	if db.Status != webhook.DeliveryFailed || db.LastResponseStatus != 302 || !strings.Contains(db.LastError, "redirect") {
		t.Errorf("redirect: %s %d %q", db.Status, db.LastResponseStatus, db.LastError)
	}
}

func TestSendTest(t *testing.T) {
	e := newEnv(t)
	rc := newReceiver(t)
	ep, secret := e.create(rc.URL, platform.ModeLive, "svc.plan.created") // not subscribed to svc.webhook.test
	d, err := e.eng.SendTest(e.ctx, ep.ID)
	if err != nil || d.Status != webhook.DeliveryPending || d.WebhookID != ep.ID || len(d.EventIDs) != 1 {
		t.Fatalf("SendTest = %+v, %v", d, err)
	}
	e.tick()
	r := rc.got()[0]
	if err := webhook.Verify(r.header.Get("Svc-Signature"), r.body, secret, e.clock.Now(), webhook.Tolerance); err != nil {
		t.Error(err)
	}
	ev := r.events[0]
	if ev["type"] != event.WebhookTest || ev["subject"] != ep.ID || ev["svcsimulated"] != false || ev["id"] != d.EventIDs[0] {
		t.Errorf("test event %v", ev)
	}
	if got, _ := e.eng.Delivery(e.ctx, d.ID); got.Status != webhook.DeliverySucceeded {
		t.Errorf("test delivery %s", got.Status)
	}

	paused := webhook.StatusPaused
	if _, err := e.eng.Update(e.ctx, ep.ID, webhook.Update{Status: &paused}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.eng.SendTest(e.ctx, ep.ID); !errors.Is(err, webhook.ErrNotActive) {
		t.Errorf("SendTest to a paused webhook: %v", err)
	}
	if _, err := e.eng.SendTest(e.ctx, id.NewAt("whk", time.Now())); !errors.Is(err, platform.ErrNotFound) {
		t.Errorf("SendTest to a missing webhook: %v", err)
	}
}

func TestPausedHoldsDisabledDrops(t *testing.T) {
	e := newEnv(t)
	rc := newReceiver(t)
	ep, _ := e.create(rc.URL, platform.ModeTest)
	st := func(s webhook.Status) {
		t.Helper()
		got, err := e.eng.Update(e.ctx, ep.ID, webhook.Update{Status: &s})
		if err != nil || got.Status != s {
			t.Fatalf("update to %s: %v", s, err)
		}
	}
	st(webhook.StatusPaused)
	e.publish(platform.ModeTest, e.event(event.SourceRevoked, platform.ModeTest))
	if n := e.tick(); n != 0 || e.store.QueueLen(ep.ID) != 1 {
		t.Fatalf("paused webhook: %d requests, queue %d", n, e.store.QueueLen(ep.ID))
	}
	st(webhook.StatusActive)
	if n := e.tick(); n != 1 {
		t.Fatalf("resumed webhook: %d requests", n)
	}

	// A failing delivery waits while the webhook is paused and resumes on its schedule.
	rc.setRespond(func(request) int { return 500 })
	e.publish(platform.ModeTest, e.event(event.SourceRevoked, platform.ModeTest))
	e.tick()
	st(webhook.StatusPaused)
	e.clock.Advance(time.Hour)
	if n := e.tick(); n != 0 {
		t.Fatalf("paused webhook retried (%d)", n)
	}
	rc.setRespond(nil)
	st(webhook.StatusActive)
	if n := e.tick(); n != 1 || e.deliveries(ep.ID)[0].Status != webhook.DeliverySucceeded {
		t.Fatalf("after resume: %d requests", n)
	}

	st(webhook.StatusDisabled)
	if n, _ := e.eng.Publish(e.ctx, platform.ModeTest, e.event(event.SourceRevoked, platform.ModeTest), []string{e.app}); n != 0 {
		t.Errorf("disabled webhook queued %d", n)
	}
}

func TestWebhookLifecycleAndValidation(t *testing.T) {
	e := newEnv(t)
	rc := newReceiver(t)
	ep, secret := e.create(rc.URL, platform.ModeTest, "svc.plan.*", "svc.plan.*", "svc.execution.completed")
	if len(ep.EventTypes) != 2 || ep.Status != webhook.StatusActive || !id.Valid("whk", ep.ID) || ep.AppID != e.app {
		t.Errorf("created %+v", ep)
	}
	// The secret is sealed at rest: the store never holds it in the clear.
	if strings.Contains(e.store.Dump(), secret) || strings.Contains(e.store.Dump(), strings.TrimPrefix(secret, "whsec_")) {
		t.Error("the store holds the secret in the clear")
	}
	// The API form carries the secret only when given.
	w := ep.Proto(secret)
	if w.GetSecret() != secret || w.GetMode() != svcv1.WebhookMode_WEBHOOK_MODE_TEST || w.GetStatus() != svcv1.WebhookStatus_WEBHOOK_STATUS_ACTIVE {
		t.Errorf("Proto = %v", w)
	}
	j, err := wire.Marshal(ep.Proto(""))
	if err != nil || strings.Contains(string(j), "secret") || !strings.Contains(string(j), `"mode":"test"`) {
		t.Errorf("wire JSON %s, %v", j, err)
	}

	url := rc.URL + "/v2"
	types := []string{"*"}
	got, err := e.eng.Update(e.ctx, ep.ID, webhook.Update{URL: &url, EventTypes: types})
	if err != nil || got.URL != url || len(got.EventTypes) != 1 {
		t.Fatalf("Update = %+v, %v", got, err)
	}
	list, err := e.eng.List(e.ctx, e.app)
	if err != nil || len(list) != 1 || list[0].URL != url {
		t.Fatalf("List = %v, %v", list, err)
	}

	for _, c := range []struct {
		p     webhook.Params
		field string
	}{
		{webhook.Params{URL: rc.URL, EventTypes: nil, Mode: platform.ModeTest}, "event_types"},
		{webhook.Params{URL: rc.URL, EventTypes: []string{"svc.plna.created"}, Mode: platform.ModeTest}, "event_types"},
		{webhook.Params{URL: rc.URL, EventTypes: []string{"svc.plan*"}, Mode: platform.ModeTest}, "event_types"},
		{webhook.Params{URL: rc.URL, EventTypes: []string{"*"}, Mode: "prod"}, "mode"},
		{webhook.Params{URL: "ftp://example.com", EventTypes: []string{"*"}, Mode: platform.ModeTest}, "url"},
	} {
		_, _, err := e.eng.Create(e.ctx, e.app, c.p)
		var fe *webhook.FieldError
		if !errors.Is(err, webhook.ErrInvalid) || !errors.As(err, &fe) || fe.Field != c.field {
			t.Errorf("Create(%+v) = %v, want an invalid %s", c.p, err, c.field)
		}
	}
	bad := webhook.Status("sleeping")
	if _, err := e.eng.Update(e.ctx, ep.ID, webhook.Update{Status: &bad}); !errors.Is(err, webhook.ErrInvalid) {
		t.Errorf("bad status: %v", err)
	}
	if _, err := e.eng.Update(e.ctx, id.NewAt("whk", time.Now()), webhook.Update{}); !errors.Is(err, platform.ErrNotFound) {
		t.Errorf("update missing: %v", err)
	}

	for range webhook.MaxWebhooksPerApp - 1 {
		e.create(rc.URL, platform.ModeLive)
	}
	if _, _, err := e.eng.Create(e.ctx, e.app, webhook.Params{URL: rc.URL, EventTypes: []string{"*"}, Mode: platform.ModeLive}); !errors.Is(err, webhook.ErrTooManyWebhooks) {
		t.Errorf("webhook %d: %v", webhook.MaxWebhooksPerApp+1, err)
	}

	e.publish(platform.ModeTest, e.event(event.PlanCreated, platform.ModeTest))
	e.tick()
	if err := e.eng.Delete(e.ctx, ep.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := e.eng.Deliveries(e.ctx, ep.ID, "", 10); !errors.Is(err, platform.ErrNotFound) {
		t.Errorf("deliveries of a deleted webhook: %v", err)
	}
	if _, err := e.eng.Get(e.ctx, ep.ID); !errors.Is(err, platform.ErrNotFound) {
		t.Errorf("get deleted: %v", err)
	}
}

func TestDeliveriesListingPages(t *testing.T) {
	e := newEnv(t)
	rc := newReceiver(t)
	rc.setRespond(func(r request) int { return 500 })
	ep, _ := e.create(rc.URL, platform.ModeTest)
	for range 5 {
		e.publish(platform.ModeTest, e.event(event.MeterDetected, platform.ModeTest))
		e.tick()
		e.clock.Advance(time.Second)
	}
	page1, err := e.eng.Deliveries(e.ctx, ep.ID, "", 3)
	if err != nil || len(page1) != 3 {
		t.Fatal(len(page1), err)
	}
	page2, err := e.eng.Deliveries(e.ctx, ep.ID, page1[2].ID, 3)
	if err != nil || len(page2) != 2 || page2[0].ID >= page1[2].ID {
		t.Fatal(len(page2), err)
	}
	for _, d := range append(page1, page2...) {
		if d.Status != webhook.DeliveryFailed || d.NextAttemptAt == nil || d.LastResponseStatus != 500 || len(d.Attempts) != 1 {
			t.Errorf("delivery %+v", d)
		}
	}
}

func TestSecretsNeedTheSealingKey(t *testing.T) {
	e := newEnv(t)
	rc := newReceiver(t)
	e.create(rc.URL, platform.ModeTest)
	e.publish(platform.ModeTest, e.event(event.TrialDecided, platform.ModeTest))
	e.opts.Sealer = newSealer(t) // restarted with the wrong key
	e.restart()
	if n := e.tick(); n != 0 || len(rc.got()) != 0 {
		t.Fatalf("sent %d requests without being able to sign", n)
	}
	if _, err := webhook.New(e.ctx, e.store, webhook.Options{}); err == nil {
		t.Error("New without a Sealer")
	}
}

// Final deliveries are listed for the retention period, then pruned; deliveries still being
// retried are kept.
func TestDeliveriesArePrunedAfterRetention(t *testing.T) {
	e := newEnv(t, func(o *webhook.Options) { o.DeliveryRetention = 7 * 24 * time.Hour })
	ok := newReceiver(t)
	down := newReceiver(t)
	down.setRespond(func(request) int { return http.StatusServiceUnavailable })
	good, _ := e.create(ok.URL, platform.ModeTest)
	bad, _ := e.create(down.URL, platform.ModeTest)
	e.publish(platform.ModeTest, e.event("svc.plan.created", platform.ModeTest))
	e.tick()
	if len(e.deliveries(good.ID)) != 1 || len(e.deliveries(bad.ID)) != 1 {
		t.Fatal("no deliveries")
	}
	e.clock.Advance(6 * 24 * time.Hour)
	if n, err := e.eng.PruneDeliveries(e.ctx); err != nil || n != 0 {
		t.Fatalf("pruned %d within the retention (%v)", n, err)
	}
	e.clock.Advance(2 * 24 * time.Hour)
	if n, err := e.eng.PruneDeliveries(e.ctx); err != nil || n != 1 {
		t.Fatalf("pruned %d, want the succeeded one (%v)", n, err)
	}
	if len(e.deliveries(good.ID)) != 0 {
		t.Fatal("the succeeded delivery is still listed")
	}
	// The failing one died after three days of retries; it goes once it is old enough too.
	e.tick()
	if ds := e.deliveries(bad.ID); len(ds) != 1 || ds[0].Status != webhook.DeliveryDead {
		t.Fatalf("failing delivery: %+v", ds)
	}
	if n, _ := e.eng.PruneDeliveries(e.ctx); n != 1 || len(e.deliveries(bad.ID)) != 0 {
		t.Fatalf("dead delivery not pruned: %d", n)
	}
}
