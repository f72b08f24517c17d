package server

import (
	"context"
	"testing"
	"time"
)

// every runs its function at once with no first wait, then every interval, and returns when
// its context ends.
func TestEvery(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	runs := make(chan time.Time, 10)
	done := make(chan struct{})
	go func() {
		every(ctx, 0, 20*time.Millisecond, func() { runs <- time.Now() })
		close(done)
	}()
	start := time.Now()
	first := <-runs
	second := <-runs
	if first.Sub(start) > 15*time.Millisecond || second.Sub(first) < 20*time.Millisecond {
		t.Fatalf("runs at %s and %s after the start", first.Sub(start), second.Sub(start))
	}
	cancel()
	select {
	case <-done:
	case <-time.After(time.Second):
		t.Fatal("every did not return when its context ended")
	}
}
