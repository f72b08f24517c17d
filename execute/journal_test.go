package execute

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

// gateStore is a Store whose Record blocks until released, recording the groups it was given.
type gateStore struct {
	Store
	mu     sync.Mutex
	groups [][]Transition
	gate   chan struct{}
	fail   error
}

func (g *gateStore) Record(_ context.Context, _, _ string, ts ...Transition) error {
	<-g.gate
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.fail != nil {
		return g.fail
	}
	g.groups = append(g.groups, append([]Transition(nil), ts...))
	return nil
}

func (g *gateStore) flat() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	var out []string
	for _, grp := range g.groups {
		for _, t := range grp {
			out = append(out, t.AssetID)
		}
	}
	return out
}

// Only a transition that guards a side effect waits for the store; the others return at once
// and are written in order, in groups, behind the one in flight.
func TestJournalWaitsOnlyBeforeSideEffects(t *testing.T) {
	g := &gateStore{gate: make(chan struct{})}
	j := newJournal(g, "t", "exe")
	defer func() { close(g.gate); j.close() }()

	for _, id := range []string{"a", "b", "c"} {
		done := make(chan error, 1)
		go func() { done <- j.append(Transition{AssetID: id, To: fetching}, false) }()
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("a %v transition waited for the store", fetching)
		}
	}
	guarded := make(chan error, 1)
	go func() { guarded <- j.append(Transition{AssetID: "d", To: actionQueued}, true) }()
	select {
	case <-guarded:
		t.Fatal("a transition before a source action returned before it was durable")
	case <-time.After(50 * time.Millisecond):
	}
	// Let the store commit: the guarded transition returns once it and everything recorded
	// before it are durable, in order.
	for range 3 {
		g.gate <- struct{}{}
		select {
		case err := <-guarded:
			if err != nil {
				t.Fatal(err)
			}
			if got := g.flat(); len(got) != 4 || got[0] != "a" || got[1] != "b" || got[2] != "c" || got[3] != "d" {
				t.Fatalf("durable %v, want [a b c d]", got)
			}
			if len(g.groups) > 2 {
				t.Fatalf("%d groups for 4 transitions recorded while one was in flight", len(g.groups))
			}
			return
		case <-time.After(200 * time.Millisecond):
		}
	}
	t.Fatal("the guarded transition never returned")
}

// A failed write is sticky: a guarded transition waiting on it gets the error, and so does
// every later one, so no side effect follows a journal that stopped being written.
func TestJournalFailureIsSticky(t *testing.T) {
	boom := errors.New("disk gone")
	g := &gateStore{gate: make(chan struct{}), fail: boom}
	close(g.gate)
	j := newJournal(g, "t", "exe")
	if err := j.append(Transition{AssetID: "a", To: actionQueued}, true); !errors.Is(err, boom) {
		t.Fatalf("guarded append: %v, want %v", err, boom)
	}
	if err := j.append(Transition{AssetID: "b", To: fetching}, false); !errors.Is(err, boom) {
		t.Fatalf("append after a failure: %v, want %v", err, boom)
	}
	if err := j.close(); !errors.Is(err, boom) {
		t.Fatalf("close: %v, want %v", err, boom)
	}
}

// flush waits for what was recorded without waiting; close writes it before returning.
func TestJournalFlushAndClose(t *testing.T) {
	g := &gateStore{gate: make(chan struct{})}
	close(g.gate)
	j := newJournal(g, "t", "exe")
	for _, id := range []string{"a", "b"} {
		if err := j.append(Transition{AssetID: id, To: fetching}, false); err != nil {
			t.Fatal(err)
		}
	}
	if err := j.flush(); err != nil {
		t.Fatal(err)
	}
	if got := g.flat(); len(got) != 2 {
		t.Fatalf("after flush, durable %v", got)
	}
	if err := j.append(Transition{AssetID: "c", To: fetching}, false); err != nil {
		t.Fatal(err)
	}
	if err := j.close(); err != nil {
		t.Fatal(err)
	}
	if got := g.flat(); len(got) != 3 {
		t.Fatalf("after close, durable %v", got)
	}
	if err := j.append(Transition{AssetID: "d", To: fetching}, false); !errors.Is(err, errJournalClosed) {
		t.Fatalf("append after close: %v", err)
	}
}
