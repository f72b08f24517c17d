package storagetest

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"svc.dev/svc/storage"
)

// RunLeases runs the leases' suite against a store that hands out leases (storage.Leaser);
// open returns a new, empty store, which RunLeases closes.
func RunLeases(t *testing.T, open func(t *testing.T) storage.Store) {
	for _, tc := range []struct {
		name string
		fn   func(*testing.T, storage.Store, storage.Leases)
	}{
		{"ClaimRenewRelease", testLeaseCycle},
		{"Expiry", testLeaseExpiry},
		{"Fence", testLeaseFence},
		{"OneWinner", testLeaseOneWinner},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := open(t)
			defer s.Close()
			l, ok := s.(storage.Leaser)
			if !ok {
				t.Fatalf("%T hands out no leases", s)
			}
			tc.fn(t, s, l.Leases())
		})
	}
}

func testLeaseCycle(t *testing.T, _ storage.Store, ls storage.Leases) {
	a, err := ls.Claim(ctx, "exe:1", "replica-a", time.Minute)
	if err != nil || a.Holder != "replica-a" || a.Name != "exe:1" || !a.Expires.After(time.Now()) {
		t.Fatalf("claim: %+v, %v", a, err)
	}
	if _, err := ls.Claim(ctx, "exe:1", "replica-b", time.Minute); !errors.Is(err, storage.ErrLeaseHeld) {
		t.Fatalf("another holder claims a running lease: %v, want ErrLeaseHeld", err)
	}
	again, err := ls.Claim(ctx, "exe:1", "replica-a", time.Minute)
	if err != nil || again.Token != a.Token {
		t.Fatalf("the holder claims again: %+v, %v; want the same token %d", again, err, a.Token)
	}
	if _, err := ls.Claim(ctx, "exe:2", "replica-b", time.Minute); err != nil {
		t.Fatalf("another name: %v", err)
	}
	r, err := ls.Renew(ctx, a, 2*time.Minute)
	if err != nil || r.Token != a.Token || !r.Expires.After(a.Expires) {
		t.Fatalf("renew: %+v, %v (was %+v)", r, err, a)
	}
	if err := ls.Release(ctx, r); err != nil {
		t.Fatal(err)
	}
	if err := ls.Release(ctx, r); err != nil {
		t.Fatalf("releasing twice: %v", err)
	}
	if _, err := ls.Renew(ctx, r, time.Minute); !errors.Is(err, storage.ErrLeaseLost) {
		t.Fatalf("renew after release: %v, want ErrLeaseLost", err)
	}
	b, err := ls.Claim(ctx, "exe:1", "replica-b", time.Minute)
	if err != nil || b.Token == a.Token {
		t.Fatalf("claim after release: %+v, %v; want a new token (old %d)", b, err, a.Token)
	}
	a2, err := ls.Claim(ctx, "exe:3", "replica-a", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	ls.Release(ctx, a2)
	a3, err := ls.Claim(ctx, "exe:3", "replica-a", time.Minute)
	if err != nil || a3.Token == a2.Token {
		t.Fatalf("the same holder after its release: %+v, %v; want a new token (old %d)", a3, err, a2.Token)
	}
}

func testLeaseExpiry(t *testing.T, _ storage.Store, ls storage.Leases) {
	a, err := ls.Claim(ctx, "job:1", "replica-a", 50*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(120 * time.Millisecond)
	if _, err := ls.Renew(ctx, a, time.Minute); !errors.Is(err, storage.ErrLeaseLost) {
		t.Fatalf("renew after expiry: %v, want ErrLeaseLost", err)
	}
	b, err := ls.Claim(ctx, "job:1", "replica-b", time.Minute)
	if err != nil || b.Token == a.Token {
		t.Fatalf("claim after expiry: %+v, %v", b, err)
	}
	if _, err := ls.Renew(ctx, a, time.Minute); !errors.Is(err, storage.ErrLeaseLost) {
		t.Fatalf("the old holder renews after a takeover: %v, want ErrLeaseLost", err)
	}
	if err := ls.Release(ctx, a); err != nil {
		t.Fatal(err)
	}
	if _, err := ls.Renew(ctx, b, time.Minute); err != nil {
		t.Fatalf("the old holder's release freed the new holder's lease: %v", err)
	}
}

// A write fenced by a lease applies only while the lease is held.
func testLeaseFence(t *testing.T, s storage.Store, ls storage.Leases) {
	a, err := ls.Claim(ctx, "exe:f", "replica-a", 50*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Apply(ctx, ls.Held(a)); err != nil {
		t.Fatalf("a fence of a held lease: %v", err)
	}
	fj, fenced := s.Journal().(storage.FencedJournal)
	if fenced {
		if err := fj.AppendWith(ctx, tenantA, "exe_f", [][]byte{[]byte("held")}, ls.Held(a)); err != nil {
			t.Fatalf("append under a held lease: %v", err)
		}
	}
	time.Sleep(120 * time.Millisecond)
	if err := s.Apply(ctx, ls.Held(a)); !errors.Is(err, storage.ErrLeaseLost) {
		t.Fatalf("a fence of an expired lease: %v, want ErrLeaseLost", err)
	}
	if _, err := ls.Claim(ctx, "exe:f", "replica-b", time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := s.Apply(ctx, ls.Held(a)); !errors.Is(err, storage.ErrLeaseLost) {
		t.Fatalf("a fence of a lease taken over: %v, want ErrLeaseLost", err)
	}
	if fenced {
		if err := fj.AppendWith(ctx, tenantA, "exe_f", [][]byte{[]byte("lost")}, ls.Held(a)); !errors.Is(err, storage.ErrLeaseLost) {
			t.Fatalf("append under a lost lease: %v, want ErrLeaseLost", err)
		}
		got, err := s.Journal().Read(ctx, tenantA, "exe_f")
		if err != nil || len(got) != 1 || string(got[0]) != "held" {
			t.Fatalf("journal after a fenced append: %q, %v; want only the held one", got, err)
		}
	}
}

// Of 16 holders claiming one name at once, exactly one gets it.
func testLeaseOneWinner(t *testing.T, _ storage.Store, ls storage.Leases) {
	var wg sync.WaitGroup
	var mu sync.Mutex
	won, held := 0, 0
	for i := range 16 {
		wg.Go(func() {
			_, err := ls.Claim(ctx, "webhook:1", fmt.Sprint("replica-", i), time.Minute)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				won++
			case errors.Is(err, storage.ErrLeaseHeld):
				held++
			default:
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if won != 1 || held != 15 {
		t.Fatalf("%d claims won and %d refused, want 1 and 15", won, held)
	}
}
