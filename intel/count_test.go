package intel_test

import (
	"bytes"
	"fmt"
	"os"
	"testing"
	"time"

	"svc.dev/svc/intel"
	"svc.dev/svc/internal/intelcorpus"
	"svc.dev/svc/mail"
)

// TestCountPaths prints, for a mailbox-like mix, how many messages the raw-header check skips,
// how long reading and extraction take, and what each kind of message comes to
// (INTEL_COUNT=1), for finding where a scan's time goes.
func TestCountPaths(t *testing.T) {
	if os.Getenv("INTEL_COUNT") == "" {
		t.Skip()
	}
	c := intelcorpus.Generate(3, 60, 8000, time.Date(2026, 11, 20, 12, 0, 0, 0, time.UTC))
	quick, read, kinds := 0, 0, map[string]int{}
	per := map[string]time.Duration{}
	var readTime, extractTime time.Duration
	for _, m := range c.Messages {
		if intel.QuickSkip(m.Raw) {
			quick++
			continue
		}
		read++
		t0 := time.Now()
		d, err := mail.ReadDocument(bytes.NewReader(m.Raw), &mail.DocumentOptions{Want: intel.MayState})
		readTime += time.Since(t0)
		if err != nil {
			continue
		}
		t1 := time.Now()
		o := intel.Extracts(d)
		el := time.Since(t1)
		extractTime += el
		k0 := m.Kind
		if len(k0) > 12 {
			k0 = k0[:12]
		}
		per[k0] += el
		k := m.Kind
		if len(k) > 12 {
			k = k[:12]
		}
		if o {
			kinds[k+" kept"]++
		} else if len(d.Parts) > 0 {
			kinds[k+" text"]++
		}
	}
	fmt.Println("quick", quick, "read", read, "read", readTime/time.Duration(read), "extract", extractTime/time.Duration(read))
	fmt.Println(kinds)
	fmt.Println(per)
}
