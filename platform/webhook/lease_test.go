package webhook_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"svc.dev/svc/internal/leasetest"
	"svc.dev/svc/platform"
	"svc.dev/svc/platform/event"
	"svc.dev/svc/platform/webhook"
)

// Three engines on one store with shared leases, events published through all of them: each
// event reaches the receiver once. The engine delivering stops; another takes the webhook
// over and delivers what follows.
func TestReplicasDeliverEachEventOnce(t *testing.T) {
	e := newEnv(t, func(o *webhook.Options) { o.Now = time.Now })
	rc := newReceiver(t)
	ep, _ := e.create(rc.URL, platform.ModeTest)
	leases := leasetest.New()
	var engines []*webhook.Engine
	stops := map[string]context.CancelFunc{}
	var wg sync.WaitGroup
	for i := range 3 {
		name := fmt.Sprint("r", i)
		opts := e.opts
		opts.Leases, opts.Poll = leases.Holder(name), 10*time.Millisecond
		eng, err := webhook.New(e.ctx, e.store, opts)
		if err != nil {
			t.Fatal(err)
		}
		engines = append(engines, eng)
		ctx, stop := context.WithCancel(e.ctx)
		stops[name] = stop
		wg.Go(func() { eng.Run(ctx) })
	}
	defer func() {
		for _, s := range stops {
			s()
		}
		wg.Wait()
	}()
	publish := func(n int) {
		for i := range n {
			ev := e.event(event.JobSucceeded, platform.ModeTest)
			if _, err := engines[i%3].Publish(e.ctx, platform.ModeTest, ev, []string{e.app}); err != nil {
				t.Fatal(err)
			}
		}
	}
	waitFor := func(n int) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for len(rc.eventIDs()) < n && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
		time.Sleep(50 * time.Millisecond) // a duplicate would come now
		ids := rc.eventIDs()
		seen := map[string]bool{}
		for _, id := range ids {
			if seen[id] {
				t.Fatalf("event %s delivered twice", id)
			}
			seen[id] = true
		}
		if len(ids) != n {
			t.Fatalf("%d events delivered, want %d", len(ids), n)
		}
	}
	publish(60)
	waitFor(60)
	owner := leases.HolderOf("webhook:" + ep.ID)
	if owner == "" {
		t.Fatal("no engine holds the webhook's lease")
	}
	// The owner stops: its Run ends (releasing its lease; expire stands for a lease that a
	// killed engine could not release).
	stops[owner]()
	leases.Expire(owner)
	publish(30)
	waitFor(90)
	next := leases.HolderOf("webhook:" + ep.ID)
	if next == "" || next == owner {
		t.Fatalf("the webhook's lease is held by %q after %q died", next, owner)
	}
}
