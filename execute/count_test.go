package execute

import (
	"strconv"
	"testing"
)

// recent keeps the last MaxSteps transitions, oldest first, whatever was added before.
func TestRecentKeepsTheLastSteps(t *testing.T) {
	var rc recent
	for i := range MaxSteps + 1234 {
		rc.add(Transition{AssetID: strconv.Itoa(i)})
	}
	got := rc.list()
	if len(got) != MaxSteps || got[0].AssetID != "1234" || got[len(got)-1].AssetID != strconv.Itoa(MaxSteps+1233) {
		t.Fatalf("kept %d, from %s to %s", len(got), got[0].AssetID, got[len(got)-1].AssetID)
	}
	for i := 1; i < len(got); i++ {
		a, _ := strconv.Atoi(got[i-1].AssetID)
		b, _ := strconv.Atoi(got[i].AssetID)
		if b != a+1 {
			t.Fatalf("out of order at %d: %d then %d", i, a, b)
		}
	}
}
