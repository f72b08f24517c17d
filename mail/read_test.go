package mail_test

import (
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"svc.dev/svc/mail"
)

func read(s string) *mail.Message { return mail.Read(strings.NewReader(s)) }

func TestReadHeaders(t *testing.T) {
	for _, tc := range []struct {
		name, raw               string
		subject, from, fromName string
		problem                 string // a substring of some problem; "" means none expected
	}{
		{name: "plain", raw: "From: Ann Lee <ann@example.org>\r\nSubject: Lunch?\r\n\r\nHi",
			subject: "Lunch?", from: "ann@example.org", fromName: "Ann Lee"},
		{name: "rfc2047 q latin1", raw: "From: =?ISO-8859-1?Q?Andr=E9?= <andre@example.fr>\nSubject: =?iso-8859-1?q?R=E9union_demain?=\n\nx",
			subject: "Réunion demain", from: "andre@example.fr", fromName: "André"},
		{name: "rfc2047 b utf8 split words", raw: "Subject: =?UTF-8?B?0J/RgNC40LLQtdGC?= =?UTF-8?B?INC80LjRgA==?=\nFrom: a@b.c\n\n",
			subject: "Привет мир", from: "a@b.c"},
		{name: "rfc2047 koi8-r", raw: "Subject: =?koi8-r?B?8NLJ18XU?=\nFrom: a@b.c\n\n", subject: "Привет", from: "a@b.c"},
		{name: "rfc2047 shift_jis", raw: "Subject: =?Shift_JIS?B?k/qWe4zq?=\nFrom: a@b.c\n\n", subject: "日本語", from: "a@b.c"},
		{name: "raw latin1 subject and name", raw: "From: Jos\xe9 Garc\xeda <jose@example.es>\nSubject: Ma\xf1ana a las 10\n\nhola",
			subject: "Mañana a las 10", from: "jose@example.es", fromName: "José García", problem: "raw 8-bit Subject read as windows-1252"},
		{name: "raw 8-bit in the declared charset", raw: "From: a@b.c\nSubject: Za\xbf\xf3\xb3\xe6 g\xea\xb6l\xb1 ja\xbc\xf1\nContent-Type: text/plain; charset=iso-8859-2\n\nx",
			subject: "Zażółć gęślą jaźń", from: "a@b.c", problem: "read as iso-8859-2"},
		{name: "windows-1252 quotes", raw: "From: a@b.c\nSubject: \x93Quoted\x94 \x96 dash\n\n", subject: "“Quoted” – dash", from: "a@b.c", problem: "8-bit"},
		{name: "folded", raw: "From: a@b.c\nSubject: a long\n  subject\n\tfolded\n\n", subject: "a long subject folded", from: "a@b.c"},
		{name: "duplicated subject keeps the first", raw: "Subject: first\nSubject: second\nFrom: a@b.c\n\n", subject: "first", from: "a@b.c"},
		{name: "broken address", raw: "From: \"Bad Quote <bad@example.com>\nSubject: s\n\n", subject: "s", from: "bad@example.com", fromName: "Bad Quote", problem: "read loosely"},
		{name: "no address at all", raw: "From: undisclosed\nSubject: s\n\n", subject: "s", fromName: "undisclosed", problem: "has no address"},
		{name: "sender when from is empty", raw: "From:\nSender: list@example.org\nSubject: s\n\n", subject: "s", from: "list@example.org"},
		{name: "garbage line skipped", raw: "From: a@b.c\nthis is not a header\nSubject: s\n\nbody", subject: "s", from: "a@b.c", problem: "malformed header line"},
		{name: "mbox From_ line", raw: "From a@b.c Mon Jan  1 00:00:00 2024\nFrom: a@b.c\nSubject: s\n\n", subject: "s", from: "a@b.c"},
		{name: "unknown charset kept", raw: "From: a@b.c\nSubject: =?x-unknown?Q?abc?=\n\n", subject: "=?x-unknown?Q?abc?=", from: "a@b.c", problem: "encoded words unreadable"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := read(tc.raw)
			if m.Unreadable != "" {
				t.Fatalf("unreadable: %s", m.Unreadable)
			}
			if m.Subject != tc.subject {
				t.Errorf("subject %q, want %q", m.Subject, tc.subject)
			}
			if m.From.Addr != tc.from || m.From.Name != tc.fromName {
				t.Errorf("from %+v, want %q %q", m.From, tc.fromName, tc.from)
			}
			probs := strings.Join(m.Problems, "; ")
			if tc.problem == "" && probs != "" {
				t.Errorf("problems %q, want none", probs)
			}
			if tc.problem != "" && !strings.Contains(probs, tc.problem) {
				t.Errorf("problems %q, want one with %q", probs, tc.problem)
			}
			assertUTF8(t, m)
		})
	}
}

func TestReadDates(t *testing.T) {
	want := time.Date(2019, 3, 4, 10, 5, 0, 0, time.UTC)
	for _, d := range []string{
		"Mon, 4 Mar 2019 10:05:00 +0000",
		"Mon, 04 Mar 2019 11:05:00 +0100 (CET)",
		"4 Mar 2019 10:05:00 GMT",
		"Mon, 4 Mar 2019 05:05:00 EST",
		"Mon,  4 Mar 2019 10:05:00 +0000 (GMT Standard Time)",
		"2019-03-04 10:05:00 +0000",
		"Mon Mar  4 10:05:00 2019",
	} {
		m := read("From: a@b.c\nDate: " + d + "\n\n")
		if !m.Date.Equal(want) {
			t.Errorf("Date %q read as %v, want %v", d, m.Date, want)
		}
	}
	m := read("From: a@b.c\nDate: yesterday\nReceived: from x by y; Mon, 4 Mar 2019 10:05:00 +0000\n\n")
	if !m.Date.Equal(want) || !strings.Contains(strings.Join(m.Problems, ";"), "Received") {
		t.Errorf("broken Date: %v, problems %q; want the Received time", m.Date, m.Problems)
	}
	if m := read("From: a@b.c\nDate: 31 Feb 1850\n\n"); !m.Date.IsZero() {
		t.Errorf("impossible date read as %v", m.Date)
	}
}

func TestReadThreadAndLists(t *testing.T) {
	m := read("From: a@b.c\nMessage-ID: <m2@b.c>\nIn-Reply-To: <m1@b.c>\nReferences: <m0@b.c>\n <m1@b.c>\n" +
		"List-Id: Dev talk <dev.lists.example.org>\nList-Post: <mailto:dev@lists.example.org>\n" +
		"List-Unsubscribe: <https://lists.example.org/u>, <mailto:u@lists.example.org>\nList-Unsubscribe-Post: List-Unsubscribe=One-Click\n" +
		"Precedence: list\nX-Mailman-Version: 2.1.39\n\nbody")
	if m.MessageID != "m2@b.c" || m.InReplyTo != "m1@b.c" || len(m.References) != 2 || m.ThreadID() != "<m0@b.c>" {
		t.Errorf("ids: %q %q %q thread %q", m.MessageID, m.InReplyTo, m.References, m.ThreadID())
	}
	if m.ListID != "Dev talk <dev.lists.example.org>" || m.ListPost != "<mailto:dev@lists.example.org>" || !m.ListUnsubscribePost {
		t.Errorf("lists: %q %q %v", m.ListID, m.ListPost, m.ListUnsubscribePost)
	}
	f := m.Facts()
	if f[mail.FactPrecedence] != "list" || f[mail.FactPlatform] != "mailman" || f[mail.FactInReplyTo] != "m1@b.c" || f[mail.FactListPost] == "" {
		t.Errorf("facts %v", f)
	}
	if m := read("From: a@b.c\nSubject: no id\n\n"); m.MessageID != "" || m.ThreadID() != "" {
		t.Errorf("missing Message-ID: %q %q", m.MessageID, m.ThreadID())
	}
}

func TestReadBody(t *testing.T) {
	raw := "From: a@b.c\nSubject: s\nMIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=XX\n\n" +
		"--XX\nContent-Type: multipart/alternative; boundary=YY\n\n" +
		"--YY\nContent-Type: text/html; charset=utf-8\n\n<html><head><style>p{}</style></head><body><p>Hello <b>there</b></p><script>x()</script></body></html>\n" +
		"--YY--\n" +
		"--XX\nContent-Type: application/pdf\nContent-Disposition: attachment;\n filename*=iso-8859-1''Rechnung%20M%E4rz.pdf\nContent-Transfer-Encoding: base64\n\nJVBERi0xLjQK\n" +
		"--XX\nContent-Type: text/plain; charset=iso-8859-1\nContent-Transfer-Encoding: quoted-printable\nContent-Disposition: attachment; filename=\"=?utf-8?q?notes_=C3=A9t=C3=A9.txt?=\"\n\nx\n" +
		"--XX--\n"
	m := read(raw)
	if m.MIMEType != "multipart/mixed" || m.Text != "Hello there" {
		t.Errorf("type %q text %q", m.MIMEType, m.Text)
	}
	if len(m.Attachments) != 2 || m.Attachments[0].Name != "Rechnung März.pdf" || m.Attachments[0].MIMEType != "application/pdf" || m.Attachments[1].Name != "notes été.txt" {
		t.Errorf("attachments %+v", m.Attachments)
	}
	// An 8-bit body with no charset is read as Windows-1252; quoted-printable is decoded.
	m = read("From: a@b.c\nContent-Transfer-Encoding: quoted-printable\n\nCaf=E9 cr\xe8me")
	if m.Text != "Café crème" {
		t.Errorf("text %q", m.Text)
	}
	m = read("From: a@b.c\nContent-Type: text/plain; charset=koi8-r\nSubject: \xf0\xd2\xc9\xd7\xc5\xd4\n\n\xf0\xd2\xc9\xd7\xc5\xd4")
	if m.Text != "Привет" || m.Subject != "Привет" {
		t.Errorf("koi8-r: text %q subject %q", m.Text, m.Subject)
	}
}

func TestReadUnreadable(t *testing.T) {
	for _, raw := range []string{"", "\x00\x01\x02binary\xff\xfe", "just some text without headers\nline two\n"} {
		m := read(raw)
		if m.Unreadable == "" {
			t.Errorf("%q: read as %+v, want unreadable", raw, m)
		}
		if f := m.Facts(); f[mail.FactUnreadable] == "" {
			t.Errorf("%q: facts %v", raw, f)
		}
		assertUTF8(t, m)
	}
}

func assertUTF8(t *testing.T, m *mail.Message) {
	t.Helper()
	var all []string
	all = append(all, m.Subject, m.From.Name, m.From.Addr, m.MessageID, m.InReplyTo, m.ListID, m.ListPost, m.ListUnsubscribe, m.MIMEType, m.Text, m.Unreadable)
	all = append(all, m.References...)
	all = append(all, m.Problems...)
	for _, f := range m.Fields {
		all = append(all, f.Key, f.Value)
	}
	for _, as := range [][]mail.Address{m.To, m.Cc, m.ReplyTo} {
		for _, a := range as {
			all = append(all, a.Name, a.Addr)
		}
	}
	for _, a := range m.Attachments {
		all = append(all, a.Name, a.MIMEType)
	}
	for k, v := range m.Facts() {
		all = append(all, k, v)
	}
	for _, s := range all {
		if !utf8.ValidString(s) {
			t.Fatalf("invalid UTF-8 %q", s)
		}
	}
}

// FuzzRead: whatever the bytes, Read returns, every string it returns is valid UTF-8, and
// reading is deterministic.
func FuzzRead(f *testing.F) {
	for _, s := range []string{
		"From: a@b.c\nSubject: =?utf-8?q?x?=\n\nbody",
		"From: Jos\xe9 <j@x>\nSubject: Ma\xf1ana\nDate: Mon, 4 Mar 2019 10:05:00 +0000\n\n",
		"Content-Type: multipart/mixed; boundary=a\n\n--a\nContent-Type: text/html\n\n<p>x</p>\n--a--\n",
		"Subject: =?koi8-r?B?8NLJ18XU?=\nContent-Disposition: attachment; filename*=utf-8''a%20b\n\n",
		"",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		m := mail.Read(strings.NewReader(string(b)))
		assertUTF8(t, m)
		if m2 := mail.Read(strings.NewReader(string(b))); m2.Subject != m.Subject || m2.Unreadable != m.Unreadable || m2.Text != m.Text {
			t.Fatalf("not deterministic")
		}
		// The header block alone (a fetch's parse): valid UTF-8 too, and Read's answer on the
		// message's identity whenever no raw 8-bit header byte needed a charset.
		h := mail.ReadHeader(b)
		assertUTF8(t, h)
		if (h.Unreadable == "") != (m.Unreadable == "") {
			t.Fatalf("ReadHeader unreadable %q, Read %q", h.Unreadable, m.Unreadable)
		}
		if utf8.Valid(b) && (h.Subject != m.Subject || h.From != m.From || h.MessageID != m.MessageID || !h.Date.Equal(m.Date)) {
			t.Fatalf("ReadHeader %q %v %q %v, Read %q %v %q %v", h.Subject, h.From, h.MessageID, h.Date, m.Subject, m.From, m.MessageID, m.Date)
		}
	})
}

// A large attachment is not read past MaxBodyScan: the text before it is found, and the cut
// is not a problem of the message.
func TestReadLargeAttachment(t *testing.T) {
	raw := "From: a@b.c\nSubject: photos\nContent-Type: multipart/mixed; boundary=B\n\n--B\nContent-Type: text/plain\n\nHere they are.\n" +
		"--B\nContent-Type: image/jpeg; name=big.jpg\nContent-Transfer-Encoding: base64\n\n" + strings.Repeat("QUJDRA==\n", 400_000) + "--B--\n"
	m := read(raw)
	if m.Text != "Here they are." || len(m.Attachments) != 1 || m.Attachments[0].Name != "big.jpg" || len(m.Problems) != 0 {
		t.Errorf("text %q attachments %+v problems %q", m.Text, m.Attachments, m.Problems)
	}
}

// A Content-Type of raw bytes, at the top or in a part, is read as RFC 2045's default
// (text/plain), reported as unreadable once, and never leaks its bytes into what Read returns.
func TestReadUnreadableContentType(t *testing.T) {
	for _, raw := range []string{
		"Content-TYpe:\xff",
		"Content-Type: multipart/mixed; boundary=a\n\n--a\nContent-Type: \xff\xfe\n\nhello\n--a--\n",
	} {
		m := mail.Read(strings.NewReader(raw))
		assertUTF8(t, m)
		for _, a := range m.Attachments {
			if a.MIMEType != "text/plain" && a.MIMEType != "" {
				t.Errorf("%q: attachment type %q", raw, a.MIMEType)
			}
		}
		n := 0
		for _, p := range m.Problems {
			if strings.Contains(p, "Content-Type") && strings.Contains(p, "unreadable") {
				n++
			}
		}
		if n != 1 {
			t.Errorf("%q: %d Content-Type problems, want 1: %q", raw, n, m.Problems)
		}
	}
}
