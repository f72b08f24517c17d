package synthetic

import (
	"context"
	"os"
	"strings"
	"testing"
)

// The scan meets the targets on twenty synthetic creators: per anomaly kind precision
// and recall >= 0.90, and exact cents >= 0.95 for expected, reported, settled and variance.
func TestTargets(t *testing.T) {
	s, err := Run(context.Background(), 1, 20)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	s.Print(&b)
	t.Log("\n" + b.String())
	if testing.Verbose() || os.Getenv("CREATOR_ERRORS") != "" {
		for _, e := range s.Errors {
			t.Log(e)
		}
	}
	for k, ks := range s.Kinds {
		if ks.Precision() < 0.9 || ks.Recall() < 0.9 {
			t.Errorf("%s: precision %.3f recall %.3f", k, ks.Precision(), ks.Recall())
		}
	}
	for n, f := range map[string]FieldScore{"expected": s.Expected, "reported": s.Reported, "settled": s.Settled, "variance": s.Variance} {
		if f.Accuracy() < 0.95 {
			t.Errorf("%s exact cents %.3f", n, f.Accuracy())
		}
	}
}
