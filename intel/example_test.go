package intel_test

import (
	"fmt"
	"strings"
	"time"

	"svc.dev/svc/intel"
)

// A scanner is fed messages as they come (any order) and asked for its result as of a time.
func Example() {
	s := intel.NewScanner(&intel.Options{Namespace: "usr_example"})
	for i, total := range []string{"$20.00", "$20.00", "$31.50"} {
		overage := ""
		if i == 2 {
			overage = "Overage (115 GB over your 500 GB included): $11.50\n"
		}
		raw := fmt.Sprintf("From: Acme Cloud <billing@mail.acme.example>\nSubject: Your receipt\nDate: Mon, %d Aug 2026 10:00:00 +0000\nMessage-ID: <r%d@acme.example>\n\nDeveloper plan (monthly): $20.00\n%sAmount charged: %s\n",
			3+i*7, i, overage, total)
		s.Scan(fmt.Sprintf("inbox#%d", i), strings.NewReader(raw))
	}
	res := s.Result(time.Date(2026, 8, 31, 0, 0, 0, 0, time.UTC))
	m := res.Meters[0]
	fmt.Println(m.Service, m.ServiceDomain, m.TrapType, *m.CurrentPeriodCostCents, *m.ObservedOverageCents, m.EvidenceLevel)
	fmt.Println(m.Evidence[0].Ref, m.Evidence[0].Excerpt)
	// Output:
	// Acme Cloud acme.example metered_overage 3150 1150 ESTIMATED
	// <r2@acme.example> Overage (115 GB over your 500 GB included): $11.50
}
