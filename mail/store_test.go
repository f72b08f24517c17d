package mail_test

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"svc.dev/svc/mail"
)

func readAll(t *testing.T, mr *mail.MboxReader) []string {
	t.Helper()
	var out []string
	for {
		r, err := mr.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(r)
		out = append(out, string(b))
	}
}

func TestMboxReader(t *testing.T) {
	const box = "From alice@example.org Mon Jan  1 00:00:00 2024\n" +
		"From: alice@example.org\nSubject: one\n\n" +
		">From the start, quoted (mboxrd)\n" +
		">>From twice quoted\n" +
		"From here on, an unquoted body line\n" +
		"From bob Tue Jan  2 10:00:00 2024 but the next line is no header\n" +
		"text\n\n" +
		"From bob@example.org Tue Jan  2 10:00:00 2024\n" +
		"From: bob@example.org\nSubject: two\n\nbody two\n\n" +
		"From carol@example.org Wed Jan  3 10:00:00 2024\n" +
		"From: carol@example.org\nSubject: three, cut short\nContent-Type: multipart/mixed; boundary=X\n\n--X\nContent-Type: text/pl"
	msgs := readAll(t, mail.NewMboxReader(strings.NewReader(box)))
	if len(msgs) != 3 {
		t.Fatalf("%d messages, want 3: %q", len(msgs), msgs)
	}
	if !strings.Contains(msgs[0], "\nFrom the start, quoted") || !strings.Contains(msgs[0], "\n>From twice quoted") ||
		!strings.Contains(msgs[0], "\nFrom here on, an unquoted") || !strings.Contains(msgs[0], "\nFrom bob Tue Jan  2 10:00:00 2024 but") {
		t.Errorf("first message body %q", msgs[0])
	}
	if !strings.HasPrefix(msgs[1], "From: bob@example.org\n") {
		t.Errorf("second message %q", msgs[1])
	}
	if !strings.HasSuffix(msgs[2], "Content-Type: text/pl") {
		t.Errorf("truncated message %q", msgs[2])
	}
	// A message not read to its end is skipped by Next.
	mr := mail.NewMboxReader(strings.NewReader(box))
	mr.Next()
	r, _ := mr.Next()
	b, _ := io.ReadAll(r)
	if !strings.Contains(string(b), "Subject: two") || mr.Envelope() != "From bob@example.org Tue Jan  2 10:00:00 2024" {
		t.Errorf("skipping: %q envelope %q", b, mr.Envelope())
	}
}

// A message far larger than any buffer passes through in pieces (CRLF lines too).
func TestMboxLargeMessage(t *testing.T) {
	big := strings.Repeat("A", 300<<10)
	box := "From a@b Mon Jan  1 00:00:00 2024\r\nFrom: a@b\r\n\r\n" + big + "\r\nFrom a@b Mon Jan  1 00:00:01 2024\r\nSubject: 2\r\n\r\nx\r\n"
	msgs := readAll(t, mail.NewMboxReader(strings.NewReader(box)))
	if len(msgs) != 2 || !strings.Contains(msgs[0], big) || !strings.HasPrefix(msgs[1], "Subject: 2") {
		t.Fatalf("%d messages", len(msgs))
	}
}

func TestWalk(t *testing.T) {
	dir := t.TempDir()
	write := func(p, s string) {
		p = filepath.Join(dir, p)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("Maildir/cur/1.host:2,S", "From: a@b\nSubject: cur\n\nx")
	write("Maildir/new/2.host", "From: a@b\nSubject: new\n\nx")
	write("Maildir/tmp/3.host", "From: a@b\nSubject: tmp\n\nx")
	write("eml/a.eml", "From: a@b\nSubject: eml a\n\nx")
	write("eml/sub/b.eml", "From: a@b\nSubject: eml b\n\nx")
	write("eml/.hidden", "From: a@b\nSubject: hidden\n\nx")
	write("box.mbox", "From a@b Mon Jan  1 00:00:00 2024\nSubject: mbox 1\n\nx\n\nFrom a@b Mon Jan  1 00:00:00 2024\nSubject: mbox 2\n\ny\n")
	var subjects, refs []string
	err := mail.Walk(dir, func(ref string, r io.Reader, err error) error {
		if err != nil {
			t.Errorf("%s: %v", ref, err)
			return nil
		}
		b, _ := io.ReadAll(r)
		subjects = append(subjects, mail.Read(bytes.NewReader(b)).Subject)
		refs = append(refs, strings.TrimPrefix(ref, dir))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := "cur,new,mbox 1,mbox 2,eml a,eml b"
	if got := strings.Join(subjects, ","); got != want {
		t.Errorf("subjects %s, want %s (refs %q)", got, want, refs)
	}
	if !strings.Contains(strings.Join(refs, " "), "box.mbox#") {
		t.Errorf("refs %q", refs)
	}
	// A missing path is reported to the function, not fatal by itself.
	var seen error
	mail.Walk(filepath.Join(dir, "nope"), func(ref string, r io.Reader, err error) error { seen = err; return nil })
	if seen == nil {
		t.Error("missing path not reported")
	}
}
