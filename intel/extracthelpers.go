package intel

import (
	"regexp"
	"strings"
	"time"

	"svc.dev/svc/mail"
)

// notPlanNames are words rePlanName catches that are not plan names.
var notPlanNames = map[string]bool{"plan": true, "your": true, "the": true, "current": true, "new": true, "subscription": true, "account": true, "billing": true, "payment": true, "free": true, "this": true, "our": true, "next": true, "same": true, "monthly": true, "annual": true, "we": true, "you": true, "i": true}

// setTotal keeps the strongest total: an explicit amount charged or due beats "Total", which beats
// any sentence with a sum and a payment word.
func (o *Observation) setTotal(c int64, strength int, line string) {
	if o.Excerpts != nil && o.Excerpts["total"] != "" {
		if o.totalStrength >= strength {
			return
		}
		delete(o.Excerpts, "total")
	}
	o.Total = ptr(c)
	o.totalStrength = strength
	o.excerpt("total", line)
}

// settleTotal fills a missing total from the bill's other lines.
func (o *Observation) settleTotal() {
	if o.Total != nil {
		return
	}
	if o.Subtotal != nil {
		t := *o.Subtotal + val(o.Tax) - val(o.Credits)
		for _, f := range o.Fees {
			t += f.Cents
		}
		o.Total = ptr(t)
		return
	}
	if o.Base != nil {
		o.Total = ptr(*o.Base + val(o.Tax) + val(o.Overage))
	}
}

func addc(p *int64, c int64) int64 { return val(p) + c }

func val(p *int64) int64 {
	if p == nil {
		return 0
	}
	return *p
}

func abs(c int64) int64 {
	if c < 0 {
		return -c
	}
	return c
}

func feeLabel(s string) string {
	s = strings.Trim(strings.TrimSpace(s), ":-–.")
	return cut(s, 60)
}

func unitName(u string) string {
	u = strings.ToLower(u)
	switch u {
	case "gib":
		return "GB"
	case "tib":
		return "TB"
	case "gb", "tb", "mb":
		return strings.ToUpper(u)
	}
	return strings.TrimSuffix(u, "s")
}

func splitLines(s string) []string {
	var out []string
	for l := range strings.SplitSeq(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	return out
}

func firstLine(text string, res ...kre) string {
	for l := range strings.SplitSeq(text, "\n") {
		low := strings.ToLower(l)
		for _, re := range res {
			if re.in(l, low) {
				return l
			}
		}
	}
	return ""
}

func firstNonEmpty(ss ...string) string {
	for _, s := range ss {
		if s != "" {
			return s
		}
	}
	return ""
}

func firstN(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}

// inlineForward reads the header block a mail client writes above a forwarded message's text.
func inlineForward(s string, fallback time.Time) (mail.Address, time.Time, string, bool) {
	var from mail.Address
	var subject string
	date := fallback
	for i, l := range strings.SplitN(s, "\n", 10) {
		if i > 8 {
			break
		}
		k, v, ok := strings.Cut(strings.TrimSpace(l), ":")
		if !ok {
			continue
		}
		v = strings.TrimSpace(v)
		switch strings.ToLower(k) {
		case "from":
			m := mail.ReadHeader([]byte("From: " + v + "\n\n"))
			from = m.From
		case "date", "sent":
			m := mail.ReadHeader([]byte("Date: " + v + "\n\n"))
			if !m.Date.IsZero() {
				date = m.Date
			}
		case "subject":
			subject = v
		}
	}
	return from, date, subject, from.Addr != ""
}

// seatsIn finds a seat count in a line.
func seatsIn(line, low string) []string {
	return findIn(reSeats, line, low, "seat", "user", "licen", "member", "editor", "agent")
}

func findIn(re *regexp.Regexp, s, low string, keys ...string) []string {
	if !containsAny(low, keys) {
		return nil
	}
	return re.FindStringSubmatch(s)
}

// forwardMark finds the line a mail client writes above a forwarded message's text.
func forwardMark(body string) []int {
	if !strings.Contains(body, "orward") && !strings.Contains(body, "riginal") && !strings.Contains(body, "ORWARD") {
		return nil
	}
	return reForwarded.FindStringIndex(body)
}

func msgRef(m *mail.Message, ref string) string {
	if v := strings.TrimSpace(m.Get("Message-Id")); v != "" {
		return v
	}
	if m.MessageID != "" {
		return "<" + m.MessageID + ">"
	}
	return ref
}

// notBilling reports whether a message's header alone shows it is not a service's billing
// mail: a spam filter's verdict, a mailing list or code host, a reply in a conversation.
func notBilling(m *mail.Message) bool {
	if m.Spam() != "" || m.ListPost != "" || isListPlatform(m) {
		return true
	}
	sub := strings.ToLower(m.Subject)
	return m.InReplyTo != "" && strings.HasPrefix(sub, "re:") && !strings.Contains(sub, "fwd:") && !strings.Contains(sub, "fw:")
}

func isListPlatform(m *mail.Message) bool {
	for _, p := range m.Platforms() {
		switch p {
		case "mailman", "google-groups", "groups.io", "discourse", "github", "gitlab", "gitea", "bugzilla", "jira":
			return true
		}
	}
	return false
}

// unsubscribeOf reads List-Unsubscribe and List-Unsubscribe-Post, and a manage link in the text.
func unsubscribeOf(m *mail.Message, ref, body string) Unsubscribe {
	var u Unsubscribe
	for _, part := range strings.Split(m.ListUnsubscribe, ",") {
		part = strings.Trim(strings.TrimSpace(part), "<>")
		switch {
		case strings.HasPrefix(part, "https://") && u.URL == "":
			u.URL = part
		case strings.HasPrefix(strings.ToLower(part), "mailto:") && u.Mailto == "":
			u.Mailto = part
		}
	}
	u.OneClick = m.ListUnsubscribePost && u.URL != ""
	if u.URL != "" || u.Mailto != "" {
		u.Ref = ref
	}
	if !strings.Contains(body, "http") {
		return u
	}
	if loc := reManage.FindString(body); loc != "" {
		u.Manage = strings.TrimRight(loc, ".,;)")
	}
	return u
}
