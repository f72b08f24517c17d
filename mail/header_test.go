package mail_test

import (
	"bytes"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"svc.dev/svc/internal/corpus"
	"svc.dev/svc/mail"
)

// bodyFacts are the facts only the body walk learns.
var bodyFacts = []string{mail.FactAttachments, mail.FactTextTail, mail.FactProblems, mail.FactShape, mail.FactObfuscated}

// TestReadHeaderAgreesWithRead holds ReadHeader to Read's answer on everything a header
// carries, over the corpus's varied messages (every charset and MIME shape it has).
func TestReadHeaderAgreesWithRead(t *testing.T) {
	msgs := corpus.Generate(7, 2000, time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC))
	differ := 0
	for i, c := range msgs {
		full, head := mail.Read(bytes.NewReader(c.Raw)), mail.ReadHeader(c.Raw)
		if head.Text != "" || len(head.Attachments) != 0 {
			t.Fatalf("message %d: ReadHeader read the body: text %q, attachments %v", i, head.Text, head.Attachments)
		}
		if full.Unreadable != head.Unreadable {
			t.Fatalf("message %d: unreadable %q, Read says %q", i, head.Unreadable, full.Unreadable)
		}
		ff, hf := full.Facts(), head.Facts()
		for _, k := range bodyFacts {
			delete(ff, k)
			delete(hf, k)
		}
		same := full.Subject == head.Subject && full.From == head.From && slices.Equal(full.To, head.To) &&
			slices.Equal(full.Cc, head.Cc) && full.Date.Equal(head.Date) && full.ThreadID() == head.ThreadID() &&
			full.ListID == head.ListID && full.ListUnsubscribe == head.ListUnsubscribe &&
			full.ListUnsubscribePost == head.ListUnsubscribePost && full.MIMEType == head.MIMEType && maps.Equal(ff, hf)
		if same {
			continue
		}
		// The one documented difference: raw 8-bit headers decoded with a charset only a part declares.
		if !strings.Contains(strings.Join(full.Problems, ";"), "raw 8-bit") {
			t.Errorf("message %d differs: ReadHeader %+v %v, Read %+v %v", i, head.Subject, hf, full.Subject, ff)
		}
		differ++
	}
	t.Logf("%d of %d messages differ, each in raw 8-bit headers only", differ, len(msgs))
}

func TestReadHeaderEdges(t *testing.T) {
	for _, tc := range []struct{ raw, unreadable, subject string }{
		{raw: "", unreadable: "empty"},
		{raw: "\x00\x01binary", unreadable: "no header fields: not an RFC 5322 message"},
		{raw: "Subject: only a header", subject: "only a header"},
		{raw: "Subject: Ma\xf1ana\r\nContent-Type: text/plain; charset=iso-8859-2\r\n\r\nbody", subject: "Mań" + "ana"},
	} {
		m := mail.ReadHeader([]byte(tc.raw))
		if m.Unreadable != tc.unreadable || m.Subject != tc.subject {
			t.Errorf("%q: unreadable %q subject %q, want %q %q", tc.raw, m.Unreadable, m.Subject, tc.unreadable, tc.subject)
		}
	}
}

// BenchmarkReadHeader reads the corpus's headers only (a fetch's cost per message).
func BenchmarkReadHeader(b *testing.B) {
	msgs := corpus.Generate(1, 1000, time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC))
	b.ResetTimer()
	i := 0
	for b.Loop() {
		mail.ReadHeader(msgs[i%len(msgs)].Raw).Facts()
		i++
	}
}

// newsletterHeader is a header block like the clean-up benchmark's messages (cmd/svc).
const newsletterHeader = "Return-Path: <bounce-7@mail.shop7.example>\r\nFrom: Shop 7 News <news@shop7.example>\r\n" +
	"To: reader@example.org\r\nSubject: Weekly deals 7: garden lamp sofa\r\nDate: Mon, 02 Jan 2025 15:04:05 +0000\r\n" +
	"Message-ID: <m7.12345@shop7.example>\r\nList-Unsubscribe: <https://shop7.example/u/7>, <mailto:unsub-7@shop7.example>\r\n" +
	"List-Unsubscribe-Post: List-Unsubscribe=One-Click\r\nPrecedence: bulk\r\nX-Mailer: BulkMailer 3.1\r\nMIME-Version: 1.0\r\n" +
	"Content-Type: text/plain; charset=utf-8\r\n\r\nHello, this week's deals are here.\r\n"

// BenchmarkReadHeaderNewsletter reads a 6 KiB newsletter's header block (what a fetch parses).
func BenchmarkReadHeaderNewsletter(b *testing.B) {
	raw := []byte(newsletterHeader + strings.Repeat("This week only: deals on everything. ", 160)) // 6 KiB, as the benchmark's
	for b.Loop() {
		mail.ReadHeader(raw).Facts()
	}
}
