package keylock

import (
	"sync"
	"testing"
)

func TestLockSerializesAKey(t *testing.T) {
	var l Locks
	var wg sync.WaitGroup
	inside, most := 0, 0
	var mu sync.Mutex
	for range 32 {
		wg.Go(func() {
			defer l.Lock("<a@example.com>")()
			mu.Lock()
			inside++
			most = max(most, inside)
			mu.Unlock()
			mu.Lock()
			inside--
			mu.Unlock()
		})
	}
	wg.Wait()
	if most != 1 {
		t.Fatalf("%d goroutines held one key's lock at once", most)
	}
}
