package execute

import (
	"testing"

	svcv1 "svc.dev/svc/gen/svc/v1"
)

// Small assets share the budget many at a time; large ones a few; one larger than the whole
// budget still runs, alone.
func TestBudget(t *testing.T) {
	b := newBudget(32 << 20)
	small := inFlightBytes(&svcv1.PlanObject{ExpectedSizeBytes: 8 << 10})
	n := 0
	for b.tryAcquire(small) {
		n++
	}
	if n < 400 {
		t.Fatalf("%d small assets in flight in 32 MiB, want hundreds", n)
	}
	b = newBudget(32 << 20)
	large := inFlightBytes(&svcv1.PlanObject{ExpectedSizeBytes: 1 << 30})
	n = 0
	for b.tryAcquire(large) {
		n++
	}
	if n != 3 {
		t.Fatalf("%d 1 GiB assets in flight in 32 MiB, want 3", n)
	}
	b = newBudget(1 << 20)
	if !b.tryAcquire(large) {
		t.Fatal("an asset larger than the budget never runs")
	}
	if b.tryAcquire(small) {
		t.Fatal("another asset runs beside one that took more than the budget")
	}
	b.release(large)
	if !b.tryAcquire(small) {
		t.Fatal("the budget was not released")
	}
}
