package webhook_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"svc.dev/svc/platform"
	"svc.dev/svc/platform/event"
	"svc.dev/svc/platform/webhook"
)

// memLeases are webhook.Leases in memory, shared by the engines of a test as replicas share
// a database's.
type memLeases struct {
	mu      sync.Mutex
	holders map[string]string
}

type holderOf struct {
	l      *memLeases
	holder string
}

func (h holderOf) Take(_ context.Context, name string) (webhook.Lease, error) {
	h.l.mu.Lock()
	defer h.l.mu.Unlock()
	if cur, ok := h.l.holders[name]; ok && cur != h.holder {
		return nil, fmt.Errorf("%s: %w", name, webhook.ErrTaken)
	}
	h.l.holders[name] = h.holder
	return &memLease{h.l, name, h.holder}, nil
}

// expire ends holder's leases, as when it died and stopped renewing them.
func (l *memLeases) expire(holder string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for name, h := range l.holders {
		if h == holder {
			delete(l.holders, name)
		}
	}
}

type memLease struct {
	l            *memLeases
	name, holder string
}

func (m *memLease) Renew(context.Context) error {
	m.l.mu.Lock()
	defer m.l.mu.Unlock()
	if m.l.holders[m.name] != m.holder {
		return errors.New("lease lost")
	}
	return nil
}

func (m *memLease) Release(context.Context) error {
	m.l.mu.Lock()
	defer m.l.mu.Unlock()
	if m.l.holders[m.name] == m.holder {
		delete(m.l.holders, m.name)
	}
	return nil
}

// Three engines on one store with shared leases, events published through all of them: each
// event reaches the receiver once. The engine delivering stops; another takes the webhook
// over and delivers what follows.
func TestReplicasDeliverEachEventOnce(t *testing.T) {
	e := newEnv(t, func(o *webhook.Options) { o.Now = time.Now })
	rc := newReceiver(t)
	ep, _ := e.create(rc.URL, platform.ModeTest)
	leases := &memLeases{holders: map[string]string{}}
	var engines []*webhook.Engine
	stops := map[string]context.CancelFunc{}
	var wg sync.WaitGroup
	for i := range 3 {
		name := fmt.Sprint("r", i)
		opts := e.opts
		opts.Leases, opts.Poll = holderOf{leases, name}, 10*time.Millisecond
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
	leases.mu.Lock()
	owner := leases.holders["webhook:"+ep.ID]
	leases.mu.Unlock()
	if owner == "" {
		t.Fatal("no engine holds the webhook's lease")
	}
	// The owner stops: its Run ends (releasing its lease; expire stands for a lease that a
	// killed engine could not release).
	stops[owner]()
	leases.expire(owner)
	publish(30)
	waitFor(90)
	leases.mu.Lock()
	next := leases.holders["webhook:"+ep.ID]
	leases.mu.Unlock()
	if next == "" || next == owner {
		t.Fatalf("the webhook's lease is held by %q after %q died", next, owner)
	}
}
