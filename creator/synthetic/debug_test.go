package synthetic

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"svc.dev/svc/creator"
	"svc.dev/svc/mail"
)

func TestDebugMail(t *testing.T) {
	w := Generate(1)
	for _, m := range w.Mail {
		if !strings.Contains(string(m), "merchbox") && !strings.Contains(string(m), "inkroyal") {
			continue
		}
		d, _ := mail.ReadDocument(bytes.NewReader(m), nil)
		l := creator.ReadInbox([]*mail.Document{d}, creator.InboxOptions{Self: []string{"creator.example"}})
		if len(l.Payouts)+len(l.Terms)+len(l.Invoices)+len(l.Remittances) == 0 {
			fmt.Printf("UNREAD %q\n", d.Subject+" | "+d.Body())
		}
		for _, p := range l.Payouts {
			if p.Period.Label <= "2026-02" {
				fmt.Printf("%s %s settled=%v %d due=%s at=%s\n  %q\n", p.Stream, p.Period.Label, p.Settled, p.AmountCents, p.DueAt.Format("01-02"), p.SettledAt.Format("01-02"), d.Body())
			}
		}
	}
}

func TestDebugWorld(t *testing.T) {
	for _, seed := range []uint64{6, 11} {
		w := Generate(seed)
		for n, b := range w.Files {
			if strings.Contains(n, "supportly") || strings.Contains(n, "vidwave") || n == "terms.csv" {
				fmt.Printf("== %d %s\n%s\n", seed, n, b)
			}
		}
	}
}

func TestDebugMany(t *testing.T) {
	s, err := Run(t.Context(), 1000, 200)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	s.Print(&b)
	fmt.Println(b.String())
	for _, e := range s.Errors[:min(30, len(s.Errors))] {
		fmt.Println(e)
	}
}

func TestDebugWrite(t *testing.T) {
	if err := Generate(3).Write("/tmp/creator-w"); err != nil {
		t.Fatal(err)
	}
}
