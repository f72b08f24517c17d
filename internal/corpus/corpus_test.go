package corpus_test

import (
	"bytes"
	"testing"
	"time"
	"unicode/utf8"

	"svc.dev/svc/internal/corpus"
	"svc.dev/svc/mail"
)

var epoch = time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)

// The corpus is deterministic, has every label in fair numbers, and every message is readable
// by the mail reader (it is varied, not broken): a From, a subject, valid UTF-8.
func TestGenerate(t *testing.T) {
	a, b := corpus.Generate(3, 2000, epoch), corpus.Generate(3, 2000, epoch)
	kinds := map[string]bool{}
	count := map[corpus.Label]int{}
	raw8bit, encoded, problems := 0, 0, 0
	for i := range a {
		if !bytes.Equal(a[i].Raw, b[i].Raw) || a[i].Label != b[i].Label {
			t.Fatalf("message %d differs between runs", i)
		}
		count[a[i].Label]++
		kinds[a[i].Kind] = true
		m := mail.Read(bytes.NewReader(a[i].Raw))
		if m.Unreadable != "" || m.From.Addr == "" {
			t.Fatalf("message %d (%s) read as unreadable %q or without sender:\n%s", i, a[i].Kind, m.Unreadable, a[i].Raw)
		}
		if !utf8.ValidString(m.Subject) {
			t.Fatalf("message %d: subject %q", i, m.Subject)
		}
		if !utf8.Valid(a[i].Raw) {
			raw8bit++
		}
		if bytes.Contains(a[i].Raw, []byte("=?")) {
			encoded++
		}
		if len(m.Problems) > 0 {
			problems++
		}
	}
	for _, l := range corpus.Labels {
		if count[l] < 100 {
			t.Errorf("%s: only %d messages", l, count[l])
		}
	}
	if len(kinds) < 40 || raw8bit < 20 || encoded < 200 || problems < 40 {
		t.Errorf("not varied enough: %d kinds, %d with raw 8-bit bytes, %d with encoded words, %d with reader problems", len(kinds), raw8bit, encoded, problems)
	}
}

func TestTally(t *testing.T) {
	s := corpus.Tally([]corpus.Outcome{
		{Label: corpus.Junk, Class: "likely_removable", Trashed: true},
		{Label: corpus.Junk, Class: "review"},
		{Label: corpus.Conversation, Class: "likely_removable", Trashed: true},
		{Label: corpus.Conversation, Class: "protected_by_rule"},
	})
	if s.Precision(corpus.Junk) != 0.5 || s.Recall(corpus.Junk) != 0.5 || s.TrashedShare(corpus.Conversation) != 0.5 || s.RemovalPrecision() != 0.5 {
		t.Errorf("precision %v recall %v trashed %v removal %v", s.Precision(corpus.Junk), s.Recall(corpus.Junk), s.TrashedShare(corpus.Conversation), s.RemovalPrecision())
	}
}
