package platform

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

// slowLog is a UsageLog whose appends take a while, counting statements and deltas.
type slowLog struct {
	mu     sync.Mutex
	calls  int
	deltas int
	fail   bool
}

func (l *slowLog) AppendLog(_ context.Context, ds []UsageDelta) error {
	time.Sleep(2 * time.Millisecond)
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.fail {
		return errors.New("database down")
	}
	l.calls++
	l.deltas += len(ds)
	return nil
}

func (l *slowLog) ApplyLog(context.Context, int) ([]UsageDelta, bool, error) { return nil, false, nil }

// Concurrent appends are stored together in fewer statements, each caller returning once its
// deltas are stored; a failed append reaches every caller it carried.
func TestAppendGroupCommitsTogether(t *testing.T) {
	var g appendGroup
	log := &slowLog{}
	var wg sync.WaitGroup
	errs := make(chan error, 200)
	for range 200 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- g.append(log, []UsageDelta{{Scope: "org:o", Month: "2026-11", Meter: "m", Quantity: 1}})
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if log.deltas != 200 || log.calls >= 200 || log.calls == 0 {
		t.Fatalf("%d deltas in %d statements, want 200 in fewer", log.deltas, log.calls)
	}
	log.fail = true
	if err := g.append(log, []UsageDelta{{Scope: "org:o"}}); err == nil {
		t.Fatal("a failed append returned no error")
	}
}
