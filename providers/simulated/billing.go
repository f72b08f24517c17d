package simulated

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"svc.dev/svc/internal/corpus"
	"svc.dev/svc/providers"
)

// A simulated mailbox carries, besides its noise, the mail of someone with subscriptions and
// creator income, written as services and platforms write it: receipts and invoices with every
// kind of billing trap svc's intel detectors look for (metered overage, an announced price
// rise, an introductory price ending, seats growing, a surcharge), two trials still running
// (one whose sender offers RFC 8058 one-click unsubscribe, one that does not), and a creator's
// payout notices, deposit confirmations and earnings statements (one payout late, one month
// never paid) and a sponsor invoice of their own that is overdue. Dates count back from the
// source's epoch. The messages sit at fixed places among the first objects of a mail source
// (every 7th from the 8th), so a mailbox of 240 objects or more (the dev mailbox has 250)
// holds all of them, a smaller one the first few; duplicates of them copy them whole.

// owner is the mailbox owner's address in this mail: the corpus's owner, since most of a
// simulated mailbox is drawn from the corpus (a creator's own address is the one most of
// their mail is sent to).
const owner = corpus.Owner

// billingFirst and billingEvery place the billing messages among a source's objects.
const (
	billingFirst = 7
	billingEvery = 7
)

// billingSlot reports which billing message object i of a mail source is, if any.
func billingSlot(i int, n int) (int, bool) {
	if i < billingFirst || (i-billingFirst)%billingEvery != 0 {
		return 0, false
	}
	k := (i - billingFirst) / billingEvery
	return k, k < n
}

// billingMessage is one of the mailbox's billing messages, as stored and as listed.
type billingMessage struct {
	raw     []byte
	headers providers.MessageHeaders
	facts   map[string]string
	folder  string
}

var (
	billingMu    sync.Mutex
	billingCache = map[[2]int64][]billingMessage{}
)

// billingPool returns the billing messages of a source's seed and epoch, written and read once.
func billingPool(seed uint64, epoch time.Time) []billingMessage {
	billingMu.Lock()
	defer billingMu.Unlock()
	key := [2]int64{int64(seed), epoch.Unix()}
	if p, ok := billingCache[key]; ok {
		return p
	}
	var p []billingMessage
	for i, m := range billingMail(epoch) {
		var b bytes.Buffer
		fmt.Fprintf(&b, "From: %s\r\nTo: %s\r\nSubject: %s\r\nDate: %s\r\nMessage-ID: <bill%d.%d@simulated.example>\r\nMIME-Version: 1.0\r\n",
			m.from, m.to, m.subject, m.date.Format(time.RFC1123Z), i, seed)
		b.WriteString(m.headers)
		ct := "text/plain"
		if strings.HasPrefix(m.body, "<") {
			ct = "text/html"
		}
		fmt.Fprintf(&b, "Content-Type: %s; charset=utf-8\r\n\r\n%s\r\n", ct, strings.ReplaceAll(m.body, "\n", "\r\n"))
		raw := b.Bytes()
		h, facts := providers.ReadMail(bytes.NewReader(raw))
		p = append(p, billingMessage{raw: raw, headers: *h, facts: facts, folder: m.folder})
	}
	billingCache[key] = p
	return p
}

// billingObject returns object i of a mail source when it is a billing message.
func billingObject(seed uint64, i int, epoch time.Time) (providers.Object, bool) {
	pool := billingPool(seed, epoch)
	k, ok := billingSlot(i, len(pool))
	if !ok {
		return providers.Object{}, false
	}
	m := pool[k]
	h := m.headers
	h.To = append([]string(nil), h.To...)
	if h.ThreadID == "" {
		h.ThreadID = "thr-bill-" + strconv.Itoa(k)
	}
	o := providers.Object{
		ID:         objectID(false, i),
		Version:    "v1",
		Kind:       providers.KindMessage,
		MIMEType:   "message/rfc822",
		Name:       h.Subject,
		SizeBytes:  int64(len(m.raw)),
		CreatedAt:  h.Date,
		ModifiedAt: h.Date,
		Containers: []string{"INBOX", m.folder},
		Message:    &h,
		Metadata:   map[string]string{"content_id": strconv.Itoa(i), billingKey: strconv.Itoa(k)},
	}
	for key, v := range m.facts {
		o.Metadata[key] = v
	}
	return o, true
}

// billingKey is the metadata key of a billing message's index.
const billingKey = "billing_message"

// billingRaw returns the bytes of object i of a mail source when it is a billing message.
func billingRaw(seed uint64, i int, epoch time.Time) ([]byte, bool) {
	pool := billingPool(seed, epoch)
	k, ok := billingSlot(i, len(pool))
	if !ok {
		return nil, false
	}
	return pool[k].raw, true
}

type mailSpec struct {
	from, to, subject string
	date              time.Time
	headers           string // extra header lines, CRLF-terminated
	body              string
	folder            string
}

// billingMail writes the mailbox's billing, trial and payout mail as of epoch.
func billingMail(epoch time.Time) []mailSpec {
	e := epoch.UTC()
	month := func(back, day int) time.Time { // the day of the month back months before epoch, 09:30
		m := time.Date(e.Year(), e.Month(), 1, 9, 30, 0, 0, time.UTC).AddDate(0, -back, 0)
		return m.AddDate(0, 0, day-1)
	}
	long := func(t time.Time) string { return t.Format("January 2, 2006") }
	monthName := func(t time.Time) string { return t.Format("January 2006") }
	var out []mailSpec
	add := func(from, subject string, date time.Time, folder, headers, body string) {
		out = append(out, mailSpec{from: from, to: owner, subject: subject, date: date, folder: folder, headers: headers, body: body})
	}

	// Cloudhost: a developer plan of $20.00 a month; the last bill carries an overage.
	for back := 4; back >= 1; back-- {
		body := "Thanks for using Cloudhost.\n\nDeveloper plan (monthly): $20.00\nAmount charged: $20.00\n"
		if back == 1 {
			body = "Thanks for using Cloudhost.\n\nDeveloper plan (monthly): $20.00\nOverage (115 GB over your 500 GB included): $11.50\nAmount charged: $31.50\n"
		}
		add("Cloudhost Billing <billing@cloudhost.example>", "Your Cloudhost receipt", month(back, 3), "Billing", "", body)
	}
	// Viewly: $15.49 a month, and a price rise announced for next month.
	for back := 3; back >= 1; back-- {
		add("Viewly <invoices@viewly.example>", "Your Viewly receipt", month(back, 12), "Billing", "",
			"Standard plan (monthly): $15.49\nAmount charged: $15.49\nYour membership renews automatically each month.\n")
	}
	rise := month(-1, 12)
	add("Viewly <invoices@viewly.example>", "An update to your Viewly price", month(0, -9), "Billing", "",
		fmt.Sprintf("We're writing to let you know about a price change. Starting %s, your Standard plan will cost $17.99 per month (currently $15.49 per month).\n", long(rise)))
	// Musicbox: an introductory price for three months, then the regular price.
	intro := month(3, 20)
	for back := 3; back >= 1; back-- {
		add("Musicbox <billing@musicbox.example>", "Your Musicbox Premium receipt", month(back, 20), "Billing", "",
			fmt.Sprintf("Premium plan: $4.99/month introductory price for your first 3 months (ends %s), then $10.99/month.\nAmount charged: $4.99\n", long(intro.AddDate(0, 3, 0))))
	}
	// Saasdesk: a team plan whose seats grow bill after bill.
	for i, seats := range []int{5, 7, 9} {
		add("Saasdesk <noreply@saasdesk.example>", "Your Saasdesk invoice is ready", month(3-i, 1), "Billing", "",
			fmt.Sprintf("Invoice for your Saasdesk Team plan (monthly)\nSeats: %d x $12.00 per seat\nTotal due: $%d.00\n", seats, 12*seats))
	}
	// Freshbox: a monthly plan with a delivery surcharge on every bill.
	for back := 3; back >= 1; back-- {
		add("Freshbox <billing@freshbox.example>", "Your Freshbox receipt", month(back, 8), "Billing", "",
			"Meal plan subscription (monthly): $59.99\nDelivery surcharge: $4.99\nTotal charged: $64.98\n")
	}
	// Two trials still running.
	add("Fitly <hello@fitly.example>", "Welcome to your Fitly trial", e.AddDate(0, 0, -6).Add(10*time.Hour), "Billing",
		"List-Unsubscribe: <https://fitly.example/unsubscribe/sim>, <mailto:unsubscribe@fitly.example>\r\nList-Unsubscribe-Post: List-Unsubscribe=One-Click\r\n",
		"Welcome! Your 14-day free trial has started. After your trial, you'll be charged $12.00/month.\nManage your subscription: https://fitly.example/account/billing\n")
	add("Penly <hello@penly.example>", "Your Penly trial has started", e.AddDate(0, 0, -3).Add(14*time.Hour), "Billing",
		"List-Unsubscribe: <mailto:unsubscribe@penly.example>\r\n",
		"Thanks for starting your trial. Your 30-day free trial has started. After your trial, you'll be charged $8.00/month.\n")

	// A creator's income from Creatorfund: a statement, a payout notice and a deposit each
	// month; the payout for the fourth month back is late, the one for the second never came.
	type earned struct{ gross, fees int64 }
	months := []earned{{120000, 6000}, {131050, 6553}, {118400, 5920}, {142300, 7115}, {127500, 6375}}
	for j, m := range months {
		back := len(months) - j + 1 // 6 .. 2: the earning month
		period := month(back, 1)
		net := m.gross - m.fees
		add("Creatorfund Payouts <payouts@creatorfund.example>", "Your "+monthName(period)+" earnings statement", month(back-1, 2), "Payouts", "",
			fmt.Sprintf("Your earnings statement for %s\nGross earnings: %s\nPlatform fees: %s\nNet earnings: %s\n", monthName(period), usd(m.gross), usd(m.fees), usd(net)))
		if back == 2 {
			continue // never paid
		}
		due := month(back-1, 5)
		add("Creatorfund Payouts <payouts@creatorfund.example>", "Funds are on the way", month(back-1, 3), "Payouts", "",
			fmt.Sprintf("Funds are on the way! %s (period: %s) will reach your bank by %s.\n", usd(net), monthName(period), long(due)))
		paid := due
		if back == 4 {
			paid = due.AddDate(0, 0, 19)
		}
		add("Creatorfund Payouts <payouts@creatorfund.example>", "Deposit confirmation", paid.Add(6*time.Hour), "Payouts", "",
			fmt.Sprintf("<p>Deposit confirmation</p><p>We deposited <b>%s</b> into your account on %s for your %s earnings.</p>", usd(net), paid.Format("2006-01-02"), monthName(period)))
	}
	// A sponsor invoice the creator sent, unpaid past its terms.
	sent := month(2, 10)
	out = append(out, mailSpec{from: "Sam Rivera <" + owner + ">", to: "Accounts Payable <ap@brandco.example>", subject: "Invoice INV-2041 for the September sponsorship",
		date: sent, folder: "Sent",
		body: fmt.Sprintf("Hello,\n\nPlease find invoice INV-2041 for the sponsored video.\nInvoice number: INV-2041\nInvoice date: %s\nAmount due: $2,500.00\nPayment terms: Net 30\n\nThanks,\nSam\n", long(sent))})
	return out
}

// usd writes cents as "$1,234.56".
func usd(c int64) string {
	s := strconv.FormatInt(c/100, 10)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return fmt.Sprintf("$%s.%02d", s, c%100)
}
