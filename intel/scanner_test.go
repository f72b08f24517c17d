package intel_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"svc.dev/svc/id"
	"svc.dev/svc/intel"
)

var asOf = time.Date(2026, 11, 20, 12, 0, 0, 0, time.UTC)

type msg struct {
	from, subject, body string
	date                time.Time
	headers             string
}

func month(m int, d int) time.Time { return time.Date(2026, time.Month(m), d, 9, 30, 0, 0, time.UTC) }

func scanAll(t *testing.T, msgs ...msg) (intel.Result, *intel.Scanner) {
	t.Helper()
	s := intel.NewScanner(&intel.Options{Namespace: "usr_test"})
	for i, m := range msgs {
		raw := fmt.Sprintf("From: %s\r\nTo: me@home.example\r\nSubject: %s\r\nDate: %s\r\nMessage-ID: <t%d.%d@mx.example>\r\n%sContent-Type: text/plain; charset=utf-8\r\n\r\n%s",
			m.from, m.subject, m.date.Format(time.RFC1123Z), i, m.date.Unix(), m.headers, strings.ReplaceAll(m.body, "\n", "\r\n"))
		s.Scan(fmt.Sprintf("m%d", i), strings.NewReader(raw))
	}
	return s.Result(asOf), s
}

// bills writes monthly receipts, phrased unlike the corpus generator's.
func bills(from string, months []int, body func(i int) string) []msg {
	var out []msg
	for i, m := range months {
		out = append(out, msg{from: from, subject: "Your payment receipt", date: month(m, 3), body: body(i)})
	}
	return out
}

func one(t *testing.T, res intel.Result) intel.Meter {
	t.Helper()
	if len(res.Meters) != 1 {
		b, _ := json.MarshalIndent(res, "", " ")
		t.Fatalf("%d meters, want 1: %s", len(res.Meters), b)
	}
	return res.Meters[0]
}

func TestTraps(t *testing.T) {
	for _, tc := range []struct {
		name string
		msgs []msg
		trap intel.TrapType
		cur  int64
	}{
		{"metered overage", bills("Acme Cloud <billing@mail.acmecloud.example>", []int{8, 9, 10}, func(i int) string {
			if i < 2 {
				return "Plan: Developer\nIncluded transfer: 500 GB (you used 320 GB)\nAmount charged: $20.00 per month\n"
			}
			return "Plan: Developer\nYou used 730 GB (500 GB included)\nOverage charges (230 GB x $0.09): $20.70\nAmount charged: $40.70\n"
		}), intel.MeteredOverage, 4070},
		{"teaser", append(bills("Streamy <no-reply@streamy.example>", []int{9, 10, 11}, func(i int) string {
			return "Thanks! We received your payment of USD 4.99 for your monthly subscription.\n"
		}), msg{from: "Streamy <no-reply@streamy.example>", subject: "About your offer", date: month(11, 10),
			body: "Your intro rate of USD 4.99/month ends on December 9, 2026. Then your subscription continues at USD 15.99/month."}), intel.TeaserExpiration, 499},
		{"renewal jump announced", append(bills("NoteKeep <billing@notekeep.example>", []int{8, 9, 10}, func(int) string {
			return "Subscription: NoteKeep Plus (monthly)\nTotal: 8,00 US$\n"
		}), msg{from: "NoteKeep <news@notekeep.example>", subject: "A change to your subscription price", date: month(10, 20),
			body: "From January 1, 2027 the price of NoteKeep Plus will increase from 8,00 US$ to 10,00 US$ per month."}), intel.RenewalJump, 800},
		{"renewal jump seen on an annual plan", []msg{
			{from: "Vaulty <accounts@vaulty.example>", subject: "Your payment receipt", date: month(1, 3).AddDate(-1, 10, 0), body: "Annual plan renewal\nPaid: US$49.00\n"},
			{from: "Vaulty <accounts@vaulty.example>", subject: "Your payment receipt", date: month(11, 3), body: "Annual plan renewal\nPaid: US$69.00\n"},
		}, intel.RenewalJump, 6900},
		{"seat growth", bills("Chatly <billing@chatly.example>", []int{7, 8, 9, 10}, func(i int) string {
			n := []int{4, 6, 9, 12}[i]
			return fmt.Sprintf("Invoice for your monthly workspace subscription\n%d users @ $8.00 = $%d.00\nTotal due: $%d.00\n", n, n*8, n*8)
		}), intel.SeatGrowth, 9600},
		{"surcharge", bills("City Fiber <billing@cityfiber.example>", []int{8, 9, 10}, func(int) string {
			return "Monthly internet plan: $55.00\nNetwork access fee: $4.99\nTotal: $59.99\n"
		}), intel.Surcharge, 5999},
		{"variable bill", bills("PowerGrid <billing@powergrid.example>", []int{6, 7, 8, 9, 10}, func(i int) string {
			return fmt.Sprintf("Your pay-as-you-go statement for this month.\nAmount billed: $%d.00\n", []int{40, 95, 52, 130, 61}[i])
		}), intel.VariableBill, 6100},
		{"free credit exhaustion", append(bills("Computr <billing@computr.example>", []int{8, 9, 10}, func(i int) string {
			return []string{"Usage this month: $42.00\nPromotional credit: -$42.00\nTotal charged: $0.00\nmonthly invoice\n",
				"Usage this month: $57.10\nPromotional credit: -$57.10\nTotal charged: $0.00\nmonthly invoice\n",
				"Usage this month: $61.00\nPromotional credit: -$1.00\nTotal charged: $60.00\nmonthly invoice\n"}[i]
		}), msg{from: "Computr <hello@computr.example>", subject: "Welcome", date: month(7, 28), body: "Welcome aboard! You get $100 in free credits to try everything."}), intel.FreeCreditExhaustion, 6000},
		{"auto upgrade", append(bills("Formz <billing@formz.example>", []int{8, 9, 10}, func(i int) string {
			return []string{"Basic plan, billed monthly\nTotal: $10.00\n", "Basic plan, billed monthly\nTotal: $10.00\n", "Growth plan, billed monthly\nTotal: $29.00\n"}[i]
		}), msg{from: "Formz <team@formz.example>", subject: "Your plan changed", date: month(9, 25), body: "Your account was automatically upgraded to Growth because you went over 1,000 responses."}), intel.AutoUpgrade, 2900},
		// Look-alikes: none of these is a trap.
		{"price drop", append(bills("Musicly <billing@musicly.example>", []int{8, 9, 10}, func(i int) string {
			return []string{"Premium (monthly)\nTotal: €11,99\n", "Premium (monthly)\nTotal: €11,99\n", "Premium (monthly)\nTotal: €9,99\n"}[i]
		}), msg{from: "Musicly <billing@musicly.example>", subject: "Good news", date: month(9, 10), body: "We're lowering prices: Premium goes down from €11,99 to €9,99 per month."}), intel.NoTrap, 999},
		{"one-off credit note", append(bills("Hostr <billing@hostr.example>", []int{8, 9, 10}, func(int) string { return "VPS plan (monthly)\nTotal: $12.00\n" }),
			msg{from: "Hostr <billing@hostr.example>", subject: "Credit note CN-7", date: month(9, 15), body: "Credit note for the outage.\nCredit: -$6.00\n"}), intel.NoTrap, 1200},
		{"upgrade marketing not taken", append(bills("Docsy <billing@docsy.example>", []int{8, 9, 10}, func(int) string { return "Starter plan (monthly)\nAmount paid: $6.00\n" }),
			msg{from: "Docsy <news@docsy.example>", subject: "Go Pro", date: month(10, 12), body: "Upgrade now to Docsy Pro for just $15/month. Limited-time offer, 20% off!", headers: "List-Unsubscribe: <https://docsy.example/u>\r\n"}), intel.NoTrap, 600},
		{"switch the user made", append(bills("Snapp <billing@snapp.example>", []int{8, 9, 10}, func(i int) string {
			return []string{"Solo plan (monthly)\nTotal: $9.00\n", "Solo plan (monthly)\nTotal: $9.00\n", "Team plan (monthly)\nTotal: $25.00\n"}[i]
		}), msg{from: "Snapp <billing@snapp.example>", subject: "Plan changed", date: month(9, 20), body: "You switched to the Team plan. Your new price is $25.00 per month."}), intel.NoTrap, 2500},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, _ := scanAll(t, tc.msgs...)
			m := one(t, res)
			if m.TrapType != tc.trap {
				t.Errorf("trap %s (%s), want %s", m.TrapType, m.PrimaryDriver, tc.trap)
			}
			if m.CurrentPeriodCostCents == nil || *m.CurrentPeriodCostCents != tc.cur {
				t.Errorf("current %v, want %d", m.CurrentPeriodCostCents, tc.cur)
			}
			if !id.Valid("mtr", m.ID) || len(m.Evidence) == 0 || m.Evidence[0].Kind != intel.KindEmail || !strings.HasPrefix(m.Evidence[0].Ref, "<") {
				t.Errorf("id %q evidence %+v", m.ID, m.Evidence)
			}
		})
	}
}

// Mail that is not the user's billing makes no meter and no trial.
func TestNoMeter(t *testing.T) {
	res, _ := scanAll(t,
		msg{from: "Shop <orders@shop.example>", subject: "Order confirmation #5521", date: month(10, 1), body: "Thanks for your order!\nOrder total: $89.00\nYour order has shipped."},
		msg{from: "Bank <alerts@bank.example>", subject: "Transaction alert", date: month(10, 2), body: "Your card ending in 4821 was used for a purchase of $12.99 at STREAMY."},
		msg{from: "Jo <jo@gmail.com>", subject: "Netflix", date: month(10, 3), body: "Your share of Netflix this month is $5.50, send it when you can."},
		msg{from: "Lee <lee@uni.example>", subject: "Re: [hosting] bills", date: month(10, 4), body: "We pay $120/month and the overage doubled our bill to $240. Our free trial has started too.",
			headers: "List-Id: <hosting.lists.example>\r\nList-Post: <mailto:hosting@lists.example>\r\nIn-Reply-To: <x@y>\r\n"},
		msg{from: "Deals <win@deals-4u.example>", subject: "Your free trial has started", date: month(10, 5), body: "Congratulations! Your free trial has started. Confirm your card now, then $39.99/month.", headers: "X-Spam-Flag: YES\r\n"},
		msg{from: "Promo <news@promo.example>", subject: "Start your free trial", date: month(10, 6), body: "Start your free trial today! Then only $9.99/month. Unsubscribe"},
	)
	if len(res.Meters) != 0 || len(res.Trials) != 0 {
		b, _ := json.MarshalIndent(res, "", " ")
		t.Fatalf("want nothing, got %s", b)
	}
}

func TestTrialOutcomes(t *testing.T) {
	start := "Welcome! Your 14-day free trial has started. After your trial, you'll be charged $12.00/month."
	for _, tc := range []struct {
		name   string
		extra  []msg
		status intel.TrialStatus
	}{
		{"pending", nil, intel.TrialPending},
		{"converted", []msg{{from: "Fitly <billing@fitly.example>", subject: "Receipt", date: month(11, 16), body: "Monthly membership\nAmount paid: $12.00\n"}}, intel.TrialConverted},
		{"cancelled", []msg{{from: "Fitly <hello@fitly.example>", subject: "Cancelled", date: month(11, 10), body: "Your subscription has been cancelled. You won't be charged."}}, intel.TrialCancelled},
	} {
		t.Run(tc.name, func(t *testing.T) {
			msgs := append([]msg{{from: "Fitly <hello@fitly.example>", subject: "Your trial", date: month(11, 2), body: start,
				headers: "List-Unsubscribe: <https://fitly.example/u/1>\r\nList-Unsubscribe-Post: List-Unsubscribe=One-Click\r\n"}}, tc.extra...)
			res, _ := scanAll(t, msgs...)
			if len(res.Trials) != 1 {
				t.Fatalf("%d trials", len(res.Trials))
			}
			tr := res.Trials[0]
			if tr.Status != tc.status || tr.LengthDays != 14 || tr.EndsAt == nil || !tr.EndsAt.Equal(time.Date(2026, 11, 16, 9, 30, 0, 0, time.UTC)) ||
				tr.PriceAfterTrialCents == nil || *tr.PriceAfterTrialCents != 1200 || tr.Cadence != intel.Monthly || !id.Valid("trl", tr.ID) ||
				tr.Decision != intel.Undecided || tr.EvidenceLevel != intel.Detected || tr.WorthIt.Verdict == "" {
				b, _ := json.MarshalIndent(tr, "", " ")
				t.Fatalf("%s", b)
			}
			if tc.status == intel.TrialPending {
				out, err := intel.Decide(tr, intel.Stop, time.Time{}, asOf)
				if err != nil || out.Stop == nil || out.Stop.Intent != "unsubscribe" || out.Stop.OneClick.URL != "https://fitly.example/u/1" || out.Trial.Decision != intel.Stop {
					t.Fatalf("stop: %+v %v", out, err)
				}
			}
		})
	}
}

func TestDecide(t *testing.T) {
	tr := intel.Trial{ID: "trl_x", Service: "Fitly", ServiceDomain: "fitly.example", Decision: intel.Undecided}
	out, err := intel.Decide(tr, intel.Stop, time.Time{}, asOf)
	if err != nil || out.Stop.Intent != "" || out.Stop.Excluded == nil || out.Stop.Excluded.Reason != "unsupported_capability" || !strings.Contains(out.Stop.Excluded.Detail, "fitly.example") {
		t.Fatalf("stop without one-click: %+v %v", out.Stop, err)
	}
	if _, err := intel.Decide(tr, intel.Remind, asOf.Add(-time.Hour), asOf); err == nil {
		t.Fatal("remind in the past accepted")
	}
	out, err = intel.Decide(tr, intel.Remind, asOf.Add(72*time.Hour), asOf)
	if err != nil || out.Action != "remind" || out.Trial.RemindAt == nil {
		t.Fatalf("remind: %+v %v", out, err)
	}
	out, err = intel.Decide(tr, intel.Keep, time.Time{}, asOf)
	if err != nil || out.Action != "none" || out.Trial.Decision != intel.Keep {
		t.Fatalf("keep: %+v %v", out, err)
	}
	if _, err := intel.Decide(tr, "maybe", time.Time{}, asOf); err == nil {
		t.Fatal("unknown decision accepted")
	}
}

// Rescans give the same ids; observations restored from an earlier scan are not counted twice;
// one service however many subdomains it mails from; a forwarded bill is the sender's.
func TestStableAndIncremental(t *testing.T) {
	msgs := bills("Acme <billing@eu.mail.acme.example>", []int{8, 9}, func(int) string { return "Pro plan (monthly)\nTotal: $10.00\n" })
	msgs = append(msgs, msg{from: "Acme <receipts@acme.example>", subject: "Receipt", date: month(10, 3), body: "Pro plan (monthly)\nTotal: $10.00\n"},
		msg{from: "Me <me@work.example>", subject: "Fwd: Receipt", date: month(11, 4),
			body: "---------- Forwarded message ---------\nFrom: Acme <receipts@acme.example>\nDate: Tue, 3 Nov 2026 09:30:00 +0000\nSubject: Receipt\n\nPro plan (monthly)\nTotal: $12.00\n"})
	res1, s1 := scanAll(t, msgs...)
	res2, _ := scanAll(t, msgs...)
	m := one(t, res1)
	if m.ID != one(t, res2).ID || m.ServiceDomain != "acme.example" || *m.CurrentPeriodCostCents != 1200 {
		t.Fatalf("meter %+v", m)
	}
	s3 := intel.NewScanner(&intel.Options{Namespace: "usr_test"})
	s3.Restore(s1.Observations())
	s3.Restore(s1.Observations())
	if m3 := one(t, s3.Result(asOf)); m3.ID != m.ID || *m3.PreviousPeriodCostCents != *m.PreviousPeriodCostCents {
		t.Fatalf("restored %+v", m3)
	}
}

func TestActExplain(t *testing.T) {
	res, _ := scanAll(t, bills("City Fiber <billing@cityfiber.example>", []int{8, 9, 10}, func(int) string {
		return "Monthly internet plan: $55.00\nNetwork access fee: $4.99\nTotal: $59.99\n"
	})...)
	m := one(t, res)
	e, err := intel.Act(m, intel.Explain, nil, asOf)
	if err != nil || !strings.Contains(e.Explanation, "fees") || !strings.Contains(e.Explanation, "$59.99") {
		t.Fatalf("%q %v", e.Explanation, err)
	}
	if _, err := intel.Act(m, intel.Intervene, nil, asOf); err != intel.ErrNoMechanism {
		t.Fatalf("intervene: %v", err)
	}
	if _, err := intel.Act(m, intel.SetLimit, nil, asOf); err == nil {
		t.Fatal("set_limit without a limit accepted")
	}
}

type memStore map[string][]byte

func (m memStore) LoadObservations(_ context.Context, ns string) ([]intel.Observation, error) {
	var obs []intel.Observation
	if b, ok := m[ns]; ok {
		if err := json.Unmarshal(b, &obs); err != nil {
			return nil, err
		}
	}
	return obs, nil
}

func (m memStore) SaveObservations(_ context.Context, ns string, obs []intel.Observation) error {
	b, err := json.Marshal(obs)
	m[ns] = b
	return err
}

// Two incremental scans through a store (observations kept as JSON) find what one scan of all
// the mail finds.
func TestScanIncremental(t *testing.T) {
	msgs := bills("Chatly <billing@chatly.example>", []int{7, 8, 9, 10}, func(i int) string {
		n := []int{4, 6, 9, 12}[i]
		return fmt.Sprintf("Monthly workspace subscription\n%d users @ $8.00\nTotal due: $%d.00\n", n, n*8)
	})
	whole, _ := scanAll(t, msgs...)
	store := memStore{}
	feed := func(ms []msg) func(*intel.Scanner) error {
		return func(s *intel.Scanner) error {
			for _, m := range ms {
				raw := fmt.Sprintf("From: %s\nSubject: %s\nDate: %s\nMessage-ID: <inc.%d@x>\n\n%s", m.from, m.subject, m.date.Format(time.RFC1123Z), m.date.Unix(), m.body)
				s.Scan("m", strings.NewReader(raw))
			}
			return nil
		}
	}
	o := &intel.Options{Namespace: "usr_test"}
	if _, _, err := intel.ScanIncremental(context.Background(), store, o, asOf, feed(msgs[:2])); err != nil {
		t.Fatal(err)
	}
	res, st, err := intel.ScanIncremental(context.Background(), store, o, asOf, feed(msgs[1:]))
	if err != nil {
		t.Fatal(err)
	}
	a, b := one(t, whole), one(t, res)
	if a.ID != b.ID || a.TrapType != b.TrapType || *a.CurrentPeriodCostCents != *b.CurrentPeriodCostCents || *a.PreviousPeriodCostCents != *b.PreviousPeriodCostCents || st.Duplicates != 1 {
		t.Fatalf("incremental %+v (stats %+v), whole %+v", b, st, a)
	}
}

// FuzzScan: whatever the bytes, a scan never panics and its result keeps its promises (levels
// honest, excerpts short, figures not negative).
func FuzzScan(f *testing.F) {
	f.Add([]byte("From: A <billing@a.example>\nSubject: Receipt\nDate: Mon, 2 Nov 2026 10:00:00 +0000\n\nPro plan (monthly)\nOverage: $3.00\nTotal: $13.00\n"))
	f.Add([]byte("From: A <hello@a.example>\nSubject: Trial\n\nYour 7-day free trial has started. Then $5/week.\n"))
	f.Add([]byte("From: A <b@a.example>\nContent-Type: text/html\n\n<table><tr><td>Total</td><td>1.234,56 US$</td></tr></table>"))
	f.Fuzz(func(t *testing.T, b []byte) {
		s := intel.NewScanner(nil)
		s.Scan("f", strings.NewReader(string(b)))
		s.Scan("f2", strings.NewReader(string(b)+"\n\nTotal: $1.00 per month receipt\n"))
		res := s.Result(asOf)
		for _, m := range res.Meters {
			projected := m.ProjectedPeriodCostCents != nil || m.NextThresholdCents != nil || m.ProjectedThresholdAt != nil
			if (projected && m.EvidenceLevel != intel.Estimated) || m.EvidenceLevel == intel.Confirmed || m.Confidence < 0 || m.Confidence > 1 {
				t.Fatalf("meter %+v", m)
			}
			for _, e := range m.Evidence {
				if len([]rune(e.Excerpt)) > intel.MaxExcerpt {
					t.Fatalf("excerpt %q", e.Excerpt)
				}
			}
			if m.CurrentPeriodCostCents != nil && *m.CurrentPeriodCostCents < 0 {
				t.Fatalf("negative cost %+v", m)
			}
		}
		if _, err := json.Marshal(res); err != nil {
			t.Fatal(err)
		}
	})
}

// Mail that reads like a trap but is not one for this user.
func TestHardLookAlikes(t *testing.T) {
	flat := bills("Readr <billing@readr.example>", []int{7, 8, 9, 10}, func(int) string { return "Readr Plus (monthly)\nAmount paid: $12.00\n" })
	for _, tc := range []struct {
		name  string
		extra msg
	}{
		{"a price rise for new customers only", msg{from: "Readr <news@readr.example>", subject: "Our prices are changing", date: month(10, 20),
			body: "Starting next month, new subscribers will pay $15.00 per month instead of $12.00. Existing members keep their current price."}},
		{"a refund", msg{from: "Readr <billing@readr.example>", subject: "Your refund", date: month(10, 10),
			body: "We've refunded $4.00 to your card for the days you could not read.\nRefund amount: $4.00\n"}},
		{"a failed payment retried", msg{from: "Readr <billing@readr.example>", subject: "Payment failed", date: month(10, 1),
			body: "We were unable to charge your card. Your payment of $30.00 failed; we will retry in three days.\n"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, _ := scanAll(t, append(flat, tc.extra)...)
			m := one(t, res)
			if m.TrapType != intel.NoTrap || *m.CurrentPeriodCostCents != 1200 || *m.PreviousPeriodCostCents != 1200 {
				t.Fatalf("trap %s (%s) current %d previous %d", m.TrapType, m.PrimaryDriver, *m.CurrentPeriodCostCents, *m.PreviousPeriodCostCents)
			}
		})
	}
}

func TestQuickSkip(t *testing.T) {
	if !intel.QuickSkip([]byte("From: a@b.example\nList-Post: <mailto:l@b.example>\nSubject: x\n\nbody")) {
		t.Error("list mail not skipped")
	}
	if !intel.QuickSkip([]byte("From: Jo <jo@gmail.com>\r\nSubject: lunch\r\n\r\nbody")) {
		t.Error("personal mail not skipped")
	}
	for _, h := range []string{
		"From: Jo <jo@gmail.com>\nSubject: Fwd: your receipt\n\nbody",
		"From: Acme <billing@acme.example>\nSubject: Receipt\n\nbody",
		"From: Jo <jo@gmail.com>\nContent-Type: multipart/mixed; boundary=x\n\nbody",
	} {
		if intel.QuickSkip([]byte(h)) {
			t.Errorf("%q skipped", h)
		}
	}
}
