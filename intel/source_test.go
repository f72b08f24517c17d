package intel_test

import (
	"context"
	"testing"

	"svc.dev/svc/intel"
	"svc.dev/svc/providers"
	"svc.dev/svc/providers/simulated"
)

// A connected source is scanned through its provider: the simulated mailbox works unchanged,
// and a second scan from the marker reads only what changed.
func TestScanSource(t *testing.T) {
	ctx := context.Background()
	p, err := simulated.New(ctx, providers.Config{"objects": "300"})
	if err != nil {
		t.Fatal(err)
	}
	s := intel.NewScanner(&intel.Options{SourceID: "src_sim"})
	m, err := intel.ScanSource(ctx, p, "mail", providers.Marker{}, s)
	if err != nil {
		t.Fatal(err)
	}
	if m.IsZero() || s.Stats().Messages == 0 {
		t.Fatalf("marker %+v stats %+v", m, s.Stats())
	}
	n := s.Stats().Messages
	if _, err := intel.ScanSource(ctx, p, "mail", m, s); err != nil {
		t.Fatal(err)
	}
	if s.Stats().Messages != n {
		t.Fatalf("nothing changed, yet %d more messages were read", s.Stats().Messages-n)
	}
	s.Result(asOf) // whatever the simulated mail holds, a result is made
}
