package plan

import (
	"math"
	"runtime/debug"
	"testing"
)

// Under a soft memory limit the default budget shrinks so that one plan's peak fits in it.
func TestBudgetFollowsTheMemoryLimit(t *testing.T) {
	old := debug.SetMemoryLimit(512 << 20)
	defer debug.SetMemoryLimit(old)
	b := Budget{}.withDefaults()
	if b.MaxObjects != 512<<10 || b.MaxMetadataBytes != 128<<20 {
		t.Fatalf("under 512 MiB: %+v", b)
	}
	if b := (Budget{MaxObjects: 2_000_000}).withDefaults(); b.MaxObjects != 2_000_000 {
		t.Fatalf("an explicit budget is kept: %+v", b)
	}
	debug.SetMemoryLimit(math.MaxInt64) // no limit
	if b := (Budget{}).withDefaults(); b.MaxObjects != DefaultMaxObjects {
		t.Fatalf("without a limit: %+v", b)
	}
}
