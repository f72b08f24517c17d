package webhook_test

import (
	"errors"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"svc.dev/svc/platform"
	"svc.dev/svc/platform/webhook"
)

// The attempts of a delivery that never succeeds, as offsets from the first: the spec's
// 1m, 5m, 30m, 2h, 6h, then every 12h while within 3 days.
var wantOffsets = []time.Duration{
	0,
	time.Minute,
	6 * time.Minute,
	36 * time.Minute,
	2*time.Hour + 36*time.Minute,
	8*time.Hour + 36*time.Minute,
	20*time.Hour + 36*time.Minute,
	32*time.Hour + 36*time.Minute,
	44*time.Hour + 36*time.Minute,
	56*time.Hour + 36*time.Minute,
	68*time.Hour + 36*time.Minute,
}

func TestNextAttempt(t *testing.T) {
	first := time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC)
	at := first
	for n := 1; ; n++ {
		next, ok := webhook.NextAttempt(first, at, n)
		if !ok {
			if n != len(wantOffsets) {
				t.Fatalf("dead after attempt %d, want %d", n, len(wantOffsets))
			}
			break
		}
		if n >= len(wantOffsets) || next.Sub(first) != wantOffsets[n] {
			t.Fatalf("attempt %d at +%s", n+1, next.Sub(first))
		}
		at = next
	}
	// A late attempt (engine was down) counts its wait from when it was made.
	if next, ok := webhook.NextAttempt(first, first.Add(10*time.Minute), 2); !ok || next != first.Add(15*time.Minute) {
		t.Errorf("late attempt: %v %v", next, ok)
	}
	if _, ok := webhook.NextAttempt(first, first.Add(71*time.Hour), 11); ok {
		t.Error("a retry 12h after 71h is beyond 3 days")
	}
}

func TestRetryScheduleAndDeathOnTheClock(t *testing.T) {
	var mu sync.Mutex
	var final []*webhook.Delivery
	var disabled []*webhook.Endpoint
	e := newEnv(t, func(o *webhook.Options) {
		o.OnFinal = func(_ *webhook.Endpoint, d *webhook.Delivery) { mu.Lock(); final = append(final, d); mu.Unlock() }
		o.OnDisabled = func(ep *webhook.Endpoint) { mu.Lock(); disabled = append(disabled, ep); mu.Unlock() }
	})
	down := newReceiver(t)
	down.setRespond(func(request) int { return http.StatusServiceUnavailable })
	ep, _ := e.create(down.URL, platform.ModeLive)
	ev := e.event("svc.receipt.created", platform.ModeLive)
	e.publish(platform.ModeLive, ev)

	first := e.clock.Now()
	for i, off := range wantOffsets {
		if i > 0 {
			// One second early: nothing is due.
			e.clock.Set(first.Add(off - time.Second))
			if n := e.tick(); n != 0 {
				t.Fatalf("attempt %d made %s early", i+1, time.Second)
			}
		}
		e.clock.Set(first.Add(off))
		if n := e.tick(); n != 1 {
			t.Fatalf("at +%s Tick made %d requests, want 1", off, n)
		}
		ds := e.deliveries(ep.ID)
		if len(ds) != 1 {
			t.Fatalf("%d deliveries", len(ds))
		}
		d := ds[0]
		if len(d.Attempts) != i+1 || !d.Attempts[i].At.Equal(first.Add(off)) || d.Attempts[i].ResponseStatus != 503 {
			t.Fatalf("after attempt %d: %+v", i+1, d.Attempts)
		}
		if d.LastResponseStatus != 503 || d.LastError != "HTTP 503" {
			t.Errorf("last status %d error %q", d.LastResponseStatus, d.LastError)
		}
		last := i == len(wantOffsets)-1
		switch {
		case !last && (d.Status != webhook.DeliveryFailed || d.NextAttemptAt == nil || !d.NextAttemptAt.Equal(first.Add(wantOffsets[i+1]))):
			t.Fatalf("after attempt %d: status %s next %v, want failed at +%s", i+1, d.Status, d.NextAttemptAt, wantOffsets[i+1])
		case last && (d.Status != webhook.DeliveryDead || d.NextAttemptAt != nil):
			t.Fatalf("after the last attempt: status %s next %v, want dead", d.Status, d.NextAttemptAt)
		}
		// Every attempt is signed afresh, so receivers' 5-minute tolerance holds on retries.
		sig := down.got()[i].header.Get("Svc-Signature")
		if !strings.HasPrefix(sig, "t="+strconv.FormatInt(first.Add(off).Unix(), 10)+",") {
			t.Errorf("attempt %d signed with %q", i+1, sig)
		}
		if got := down.got()[i].header.Get("Svc-Delivery-Id"); got != d.ID {
			t.Errorf("attempt %d delivery id %q, want the same %q on every attempt", i+1, got, d.ID)
		}
	}
	e.clock.Advance(30 * 24 * time.Hour)
	if n := e.tick(); n != 0 {
		t.Errorf("a dead delivery was attempted again (%d)", n)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(final) != 1 || final[0].Status != webhook.DeliveryDead {
		t.Errorf("OnFinal calls: %v", final)
	}
	// Nothing was ever delivered: the webhook is disabled, and says why.
	if len(disabled) != 1 || disabled[0].Status != webhook.StatusDisabled || !strings.Contains(disabled[0].DisabledReason, "HTTP 503") {
		t.Errorf("OnDisabled calls: %+v", disabled)
	}
	if got, _ := e.eng.Get(e.ctx, ep.ID); got.Status != webhook.StatusDisabled {
		t.Errorf("webhook status %s", got.Status)
	}
	// A disabled webhook queues nothing.
	if n, err := e.eng.Publish(e.ctx, platform.ModeLive, e.event("svc.receipt.created", platform.ModeLive), []string{e.app}); n != 0 || err != nil {
		t.Errorf("Publish to a disabled webhook: %d, %v", n, err)
	}
}

func TestDeadDeliveryDoesNotDisableAWebhookThatRecovered(t *testing.T) {
	e := newEnv(t)
	rc := newReceiver(t)
	ep, _ := e.create(rc.URL, platform.ModeLive)
	poison := e.event("svc.plan.created", platform.ModeLive)
	rc.setRespond(func(r request) int {
		if slices.Contains(r.eventIDs(), poison.GetId()) {
			return 500
		}
		return 204
	})
	e.publish(platform.ModeLive, poison)
	e.tick()
	e.clock.Advance(time.Hour)
	e.publish(platform.ModeLive, e.event("svc.plan.created", platform.ModeLive))
	for range 4 * 24 {
		e.tick()
		e.clock.Advance(time.Hour)
	}
	ds := e.deliveries(ep.ID)
	if len(ds) != 2 || ds[1].Status != webhook.DeliveryDead || ds[0].Status != webhook.DeliverySucceeded {
		t.Fatalf("deliveries: %d", len(ds))
	}
	if got, _ := e.eng.Get(e.ctx, ep.ID); got.Status != webhook.StatusActive {
		t.Errorf("webhook %s after a dead delivery while another succeeded", got.Status)
	}
}

func TestRestartInTheMiddleOfTheSchedule(t *testing.T) {
	e := newEnv(t)
	flaky, steady := newReceiver(t), newReceiver(t)
	var mu sync.Mutex
	flakyUp := false
	flaky.setRespond(func(request) int {
		mu.Lock()
		defer mu.Unlock()
		if flakyUp {
			return 200
		}
		return 500
	})
	a, _ := e.create(flaky.URL, platform.ModeTest)
	b, _ := e.create(steady.URL, platform.ModeTest)

	var sent []string
	publish := func(n int) {
		for range n {
			ev := e.event("svc.vault.object.committed", platform.ModeTest)
			sent = append(sent, ev.GetId())
			e.publish(platform.ModeTest, ev)
		}
	}
	publish(25)
	t0 := e.clock.Now()
	if n := e.tick(); n != 4 { // 20 + 5 events to each receiver
		t.Fatalf("first tick: %d requests, want 4", n)
	}
	e.clock.Set(t0.Add(time.Minute))
	if n := e.tick(); n != 2 {
		t.Fatalf("second tick: %d requests, want the 2 retries", n)
	}
	publish(3) // queued, not yet sent
	e.clock.Set(t0.Add(2 * time.Minute))

	// Crash: a new engine over the same store.
	e.restart()
	mu.Lock()
	flakyUp = true
	mu.Unlock()
	if n := e.tick(); n != 2 {
		t.Fatalf("after restart: %d requests, want the 3 queued events to each receiver", n)
	}
	e.clock.Set(t0.Add(6*time.Minute - time.Second))
	if n := e.tick(); n != 0 {
		t.Fatalf("retries made early after restart (%d)", n)
	}
	e.clock.Set(t0.Add(6 * time.Minute))
	if n := e.tick(); n != 2 {
		t.Fatalf("third attempts: %d requests, want 2", n)
	}
	e.clock.Advance(4 * 24 * time.Hour)
	if n := e.tick(); n != 0 {
		t.Fatalf("%d more requests after everything succeeded", n)
	}

	// The steady receiver got every event exactly once.
	if got := steady.eventIDs(); !sameSet(got, sent) || len(got) != len(sent) {
		t.Errorf("steady receiver got %d events, want the %d sent once each", len(got), len(sent))
	}
	// The flaky one got every event, and each exactly once in a 2xx-answered request.
	var acked []string
	for _, r := range flaky.got()[4:] { // after 2 failed attempts of its 2 deliveries
		acked = append(acked, r.eventIDs()...)
	}
	if !sameSet(acked, sent) || len(acked) != len(sent) {
		t.Errorf("flaky receiver acknowledged %d events, want %d once each", len(acked), len(sent))
	}
	for _, d := range append(e.deliveries(a.ID), e.deliveries(b.ID)...) {
		if d.Status != webhook.DeliverySucceeded {
			t.Errorf("delivery %s %s", d.ID, d.Status)
		}
	}
	if ds := e.deliveries(a.ID); len(ds) != 3 || len(ds[2].Attempts) != 3 || len(ds[0].Attempts) != 1 {
		t.Errorf("flaky deliveries: %d", len(ds))
	}
}

// A crash after the receiver answered but before the outcome was stored sends the delivery
// again (at least once), with the same delivery id and the same event ids.
func TestUnrecordedSuccessIsSentAgainAfterRestart(t *testing.T) {
	e := newEnv(t)
	rc := newReceiver(t)
	ep, _ := e.create(rc.URL, platform.ModeTest)
	e.publish(platform.ModeTest, e.event("svc.job.succeeded", platform.ModeTest))
	e.store.Fail = func(method string) error {
		if method == "UpdateDelivery" {
			return errors.New("disk gone")
		}
		return nil
	}
	e.tick()
	e.store.Fail = nil
	e.restart()
	if n := e.tick(); n != 1 {
		t.Fatalf("after restart: %d requests, want the unrecorded delivery again", n)
	}
	reqs := rc.got()
	if len(reqs) != 2 || reqs[0].header.Get("Svc-Delivery-Id") != reqs[1].header.Get("Svc-Delivery-Id") ||
		!slices.Equal(reqs[0].eventIDs(), reqs[1].eventIDs()) || string(reqs[0].body) != string(reqs[1].body) {
		t.Fatalf("requests: %d", len(reqs))
	}
	if ds := e.deliveries(ep.ID); ds[0].Status != webhook.DeliverySucceeded {
		t.Errorf("status %s", ds[0].Status)
	}
}

func TestStoreErrorsDelayButDoNotLose(t *testing.T) {
	e := newEnv(t)
	rc := newReceiver(t)
	ep, _ := e.create(rc.URL, platform.ModeTest)
	e.publish(platform.ModeTest, e.event("svc.job.failed", platform.ModeTest))
	e.store.Fail = func(method string) error {
		if method == "Queued" || method == "CreateDelivery" {
			return errors.New("store busy")
		}
		return nil
	}
	if n := e.tick(); n != 0 {
		t.Fatalf("%d requests with a failing store", n)
	}
	e.store.Fail = nil
	if n := e.tick(); n != 0 {
		t.Fatal("retried before the store back-off")
	}
	e.clock.Advance(5 * time.Second)
	if n := e.tick(); n != 1 {
		t.Fatalf("%d requests after the store recovered", n)
	}
	if e.store.QueueLen(ep.ID) != 0 || len(rc.eventIDs()) != 1 {
		t.Error("event not delivered")
	}
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	a = slices.Compact(a)
	b = slices.Compact(b)
	return slices.Equal(a, b)
}
