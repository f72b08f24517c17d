package providers_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"svc.dev/svc/providers"
)

type closable struct {
	providers.Provider
	closed atomic.Bool
}

func (c *closable) Close() error { c.closed.Store(true); return nil }

// TestInstancesOpenWithoutAProcessWideLock: a provider whose open is slow (a plugin's Open
// that takes its whole deadline) holds up no other key's open; concurrent gets of one key
// share one open (issue 27, finding 6: OpenSource held one lock across every Open).
func TestInstancesOpenWithoutAProcessWideLock(t *testing.T) {
	var c providers.Instances
	release := make(chan struct{})
	var opens atomic.Int32
	slow := func(context.Context) (providers.Provider, any, error) {
		opens.Add(1)
		<-release
		return &closable{}, "ref-a", nil
	}
	var wg sync.WaitGroup
	for range 3 {
		wg.Go(func() {
			p, ref, err := c.Get(context.Background(), "t/a", slow)
			if err != nil || p == nil || ref != "ref-a" {
				t.Errorf("get a: %v %v %v", p, ref, err)
			}
		})
	}
	time.Sleep(50 * time.Millisecond)
	done := make(chan struct{})
	go func() {
		defer close(done)
		if _, _, err := c.Get(context.Background(), "t/b", func(context.Context) (providers.Provider, any, error) { return &closable{}, "ref-b", nil }); err != nil {
			t.Error(err)
		}
	}()
	select {
	case <-done:
	case <-time.After(2 * time.Second):
		t.Fatal("an open of another key waits for a slow open")
	}
	// A caller that gives up returns at once; the open goes on for the others.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, _, err := c.Get(ctx, "t/a", slow); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("get with an ended context: %v", err)
	}
	close(release)
	wg.Wait()
	if n := opens.Load(); n != 1 {
		t.Fatalf("%d opens of one key, want 1", n)
	}
}

func TestInstancesForget(t *testing.T) {
	var c providers.Instances
	fail := errors.New("refused")
	if _, _, err := c.Get(context.Background(), "t/a", func(context.Context) (providers.Provider, any, error) { return nil, nil, fail }); !errors.Is(err, fail) {
		t.Fatal(err)
	}
	a := &closable{}
	p, _, err := c.Get(context.Background(), "t/a", func(context.Context) (providers.Provider, any, error) { return a, nil, nil })
	if err != nil || p != a {
		t.Fatalf("a failed open was cached: %v %v", p, err)
	}
	b := &closable{}
	c.Get(context.Background(), "u/b", func(context.Context) (providers.Provider, any, error) { return b, nil, nil })
	c.ForgetPrefix("t/")
	if !a.closed.Load() || b.closed.Load() {
		t.Fatalf("ForgetPrefix closed a %v, b %v", a.closed.Load(), b.closed.Load())
	}
	// Forgotten while it opens: closed once opened, and not cached.
	release := make(chan struct{})
	late := &closable{}
	got := make(chan error, 1)
	go func() {
		_, _, err := c.Get(context.Background(), "u/c", func(context.Context) (providers.Provider, any, error) { <-release; return late, nil, nil })
		got <- err
	}()
	time.Sleep(20 * time.Millisecond)
	c.Forget("u/c")
	close(release)
	if err := <-got; !errors.Is(err, providers.ErrForgotten) || !late.closed.Load() {
		t.Fatalf("forgotten while opening: %v, closed %v", err, late.closed.Load())
	}
	c.Close()
	if !b.closed.Load() {
		t.Fatal("Close left b open")
	}
}
