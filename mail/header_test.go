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
var bodyFacts = []string{mail.FactAttachments, mail.FactTextTail, mail.FactProblems}

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
