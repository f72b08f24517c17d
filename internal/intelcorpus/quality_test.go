package intelcorpus_test

import (
	"bytes"
	"os"
	"strconv"
	"testing"
	"time"

	"svc.dev/svc/intel"
	"svc.dev/svc/internal/intelcorpus"
)

var asOf = time.Date(2026, 11, 20, 12, 0, 0, 0, time.UTC)

func scan(c *intelcorpus.Corpus) intel.Result {
	s := intel.NewScanner(nil)
	for i, m := range c.Messages {
		s.Scan(string(rune('a'+i%26)), bytes.NewReader(m.Raw))
	}
	return s.Result(c.AsOf)
}

// The quality targets of issue 23 on a corpus of 230 services in heavy noise: trap precision
// at least 0.95 and recall at least 0.90, exact cents at least 0.95.
func TestQuality(t *testing.T) {
	seed := uint64(7) // seed 1 is the one read while writing the rules; this one was not
	if v := os.Getenv("INTEL_SEED"); v != "" {
		seed, _ = strconv.ParseUint(v, 10, 64)
	}
	c := intelcorpus.Generate(seed, 230, 3000, asOf)
	r := intelcorpus.Evaluate(c, scan(c))
	if testing.Verbose() || os.Getenv("INTEL_REPORT") != "" {
		r.Print(os.Stdout)
		for _, m := range r.Misses {
			t.Log(m)
		}
	}
	if p := r.AllTraps.Precision(); p < 0.95 {
		t.Errorf("trap precision %.3f < 0.95", p)
	}
	if rc := r.AllTraps.Recall(); rc < 0.90 {
		t.Errorf("trap recall %.3f < 0.90", rc)
	}
	if x := float64(r.CentsRight) / float64(r.CentsTotal); x < 0.95 {
		t.Errorf("exact cents %.3f < 0.95", x)
	}
}

// A meter's confidence is calibrated: on a mailbox of a seed the rules' records were not
// measured on (intel.RuleConfidence comes from seed 7), in every confidence bin of at least 20
// meters the mean confidence is within 0.05 of the share of those meters that were right; and
// every confidence, of meters and trials, is in [0, 1].
func TestConfidenceCalibrated(t *testing.T) {
	c := intelcorpus.Generate(31, 460, 2000, asOf)
	res := scan(c)
	r := intelcorpus.Evaluate(c, res)
	bins := 0
	for i, b := range r.Reliability {
		if b.N < 20 {
			continue
		}
		bins++
		if d := b.Mean() - b.Precision(); d > 0.05 || d < -0.05 {
			t.Errorf("bin %.1f-%.1f: %d meters, mean confidence %.3f, observed precision %.3f", float64(i)/10, float64(i+1)/10, b.N, b.Mean(), b.Precision())
		}
	}
	if bins == 0 {
		t.Fatal("no bin with 20 meters")
	}
	for _, m := range res.Meters {
		if m.Confidence < 0 || m.Confidence > 1 || m.Rule == "" {
			t.Errorf("meter %s: confidence %v, rule %q", m.Service, m.Confidence, m.Rule)
		}
	}
	for _, tr := range res.Trials {
		if tr.Confidence < 0 || tr.Confidence > 1 {
			t.Errorf("trial %s: confidence %v", tr.Service, tr.Confidence)
		}
	}
}
