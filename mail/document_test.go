package mail_test

import (
	"bytes"
	"encoding/base64"
	"errors"
	"io"
	"strings"
	"testing"
	"unicode/utf8"

	"svc.dev/svc/internal/minipdf"
	"svc.dev/svc/mail"
)

func doc(t *testing.T, raw string) *mail.Document {
	t.Helper()
	d, err := mail.ReadDocument(strings.NewReader(raw), nil)
	if err != nil {
		t.Fatalf("ReadDocument: %v", err)
	}
	return d
}

func TestReadDocumentShapes(t *testing.T) {
	pdf := base64.StdEncoding.EncodeToString(minipdf.Text([]string{"INVOICE 1001", "Total due: $1,234.56"}))
	for _, tc := range []struct {
		name, raw string
		want      []string // substrings of Body
		not       []string
	}{
		{name: "alternative prefers plain",
			raw:  "From: a@b\nContent-Type: multipart/alternative; boundary=A\n\n--A\nContent-Type: text/plain\n\nTotal: $9.99\nThanks\n--A\nContent-Type: text/html\n\n<p>HTML <b>version</b></p>\n--A--\n",
			want: []string{"Total: $9.99\nThanks"}, not: []string{"HTML"}},
		{name: "html only to text",
			raw:  "From: a@b\nContent-Type: text/html; charset=utf-8\n\n<html><head><style>p{}</style></head><body><table><tr><td>Total</td><td>&euro;12,00</td></tr></table><p>Plan: Pro</p></body></html>",
			want: []string{"€12,00", "Plan: Pro"}, not: []string{"<td>", "p{}"}},
		{name: "quoted-printable latin1",
			raw:  "From: a@b\nContent-Type: text/plain; charset=windows-1252\nContent-Transfer-Encoding: quoted-printable\n\nMontant: 12,00 =80 =E0 payer=\n suite\n",
			want: []string{"Montant: 12,00 € à payer suite"}},
		{name: "base64 utf-8",
			raw:  "From: a@b\nContent-Type: text/plain; charset=utf-8\nContent-Transfer-Encoding: base64\n\n" + base64.StdEncoding.EncodeToString([]byte("Gesamt: 12,00 €\nDanke")) + "\n",
			want: []string{"Gesamt: 12,00 €\nDanke"}},
		{name: "mixed with a PDF invoice",
			raw:  "From: a@b\nContent-Type: multipart/mixed; boundary=M\n\n--M\nContent-Type: text/plain\n\nYour invoice is attached.\n--M\nContent-Type: application/pdf; name=invoice.pdf\nContent-Disposition: attachment; filename=invoice.pdf\nContent-Transfer-Encoding: base64\n\n" + pdf + "\n--M--\n",
			want: []string{"Your invoice is attached.", "Total due: $1,234.56"}},
		{name: "forwarded as attachment",
			raw:  "From: me@x\nSubject: Fwd: receipt\nContent-Type: multipart/mixed; boundary=F\n\n--F\nContent-Type: text/plain\n\nsee below\n--F\nContent-Type: message/rfc822\n\nFrom: Billing <billing@vendor.example>\nSubject: Your receipt\nDate: Mon, 2 Nov 2026 10:00:00 +0000\nContent-Type: text/plain\n\nAmount paid: $5.00\n--F--\n",
			want: []string{"see below", "From: Billing <billing@vendor.example>", "Amount paid: $5.00"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := doc(t, tc.raw)
			body := d.Body()
			for _, w := range tc.want {
				if !strings.Contains(body, w) {
					t.Errorf("body %q lacks %q", body, w)
				}
			}
			for _, w := range tc.not {
				if strings.Contains(body, w) {
					t.Errorf("body %q has %q", body, w)
				}
			}
			assertUTF8(t, d.Message)
		})
	}
}

func TestReadDocumentForwardedHeaders(t *testing.T) {
	d := doc(t, "From: me@x\nContent-Type: message/rfc822\n\nFrom: Billing <billing@vendor.example>\nSubject: Your receipt\n\nx\n")
	if len(d.Forwarded) != 1 || d.Forwarded[0].From.Addr != "billing@vendor.example" {
		t.Fatalf("forwarded %+v", d.Forwarded)
	}
}

func TestReadDocumentSkips(t *testing.T) {
	for _, tc := range []struct{ name, raw, reason string }{
		{"empty", "", "empty"},
		{"binary", "\x00\x01\x02 not mail", "no header"},
		{"unknown charset", "From: a@b\nContent-Type: text/plain; charset=x-klingon\n\nQapla'", "unknown charset"},
		{"multipart without boundary", "From: a@b\nContent-Type: multipart/mixed\n\n--X\n\nhi\n", "broken MIME"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := mail.ReadDocument(strings.NewReader(tc.raw), nil)
			var se *mail.SkipError
			if !errors.As(err, &se) || !errors.Is(err, mail.ErrSkipped) || !strings.Contains(se.Reason, tc.reason) {
				t.Fatalf("err %v, want a skip with %q", err, tc.reason)
			}
		})
	}
}

// A 50 MB attachment is neither kept in memory nor read past the limits; the text before it is
// read, a broken PDF is a problem, not a failure.
func TestReadDocumentLarge(t *testing.T) {
	head := "From: a@b\nContent-Type: multipart/mixed; boundary=B\n\n--B\nContent-Type: text/plain\n\nTotal: $3.00\n--B\nContent-Type: application/pdf; name=big.pdf\nContent-Transfer-Encoding: base64\n\n"
	line := strings.Repeat("QUJD", 19) + "\n"
	r := io.MultiReader(strings.NewReader(head), &repeatReader{s: line, n: 50 << 20 / len(line)}, strings.NewReader("--B--\n"))
	d, err := mail.ReadDocument(r, &mail.DocumentOptions{MaxBytes: 8 << 20})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(d.Body(), "Total: $3.00") || !d.Cut {
		t.Errorf("body %q cut %v problems %q", d.Body(), d.Cut, d.Problems)
	}
	d = doc(t, "From: a@b\nContent-Type: application/pdf\n\nnot a pdf at all")
	if !strings.Contains(strings.Join(d.Problems, ";"), "PDF") {
		t.Errorf("problems %q", d.Problems)
	}
}

type repeatReader struct {
	s   string
	n   int
	off int
}

func (r *repeatReader) Read(p []byte) (int, error) {
	if r.n == 0 {
		return 0, io.EOF
	}
	n := copy(p, r.s[r.off:])
	r.off += n
	if r.off == len(r.s) {
		r.off = 0
		r.n--
	}
	return n, nil
}

// FuzzReadDocument: whatever the bytes, read as one message or as an mbox, ReadDocument
// returns a document or a *SkipError, never panics, and every text it returns is valid UTF-8.
func FuzzReadDocument(f *testing.F) {
	for _, s := range []string{
		"From: a@b\nContent-Type: multipart/alternative; boundary=A\n\n--A\nContent-Type: text/plain\n\nTotal $1\n--A\nContent-Type: text/html\n\n<p>x</p>\n--A--\n",
		"From: a@b\nContent-Type: message/rfc822\n\nFrom: c@d\nContent-Type: text/html; charset=koi8-r\n\n<b>\xf0</b>",
		"From a@b Mon Jan  1 00:00:00 2024\nFrom: a@b\n\n>From x\nFrom y\n\nFrom a@b Mon Jan  1 00:00:00 2024\nSubject: 2\n\n",
		"From: a@b\nContent-Type: application/pdf\nContent-Transfer-Encoding: base64\n\nJVBERi0xLjQK\n",
		"Content-Type: text/plain; charset=x-unknown\n\nabc",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		check := func(r io.Reader) {
			d, err := mail.ReadDocument(r, &mail.DocumentOptions{MaxBytes: 1 << 20})
			if err != nil {
				if !errors.Is(err, mail.ErrSkipped) {
					t.Fatalf("error %v is not a skip", err)
				}
				return
			}
			assertUTF8(t, d.Message)
			for _, p := range d.Parts {
				if !utf8.ValidString(p.Text) || !utf8.ValidString(p.Name) {
					t.Fatalf("invalid UTF-8 in part %q", p.Text)
				}
			}
		}
		check(bytes.NewReader(b))
		mr := mail.NewMboxReader(bytes.NewReader(b))
		total := 0
		for n := 0; ; n++ {
			r, err := mr.Next()
			if err != nil {
				break
			}
			if n > len(b) {
				t.Fatal("more messages than bytes")
			}
			c := &countReader{r: r}
			check(c)
			io.Copy(io.Discard, c)
			total += c.n
		}
		if total > len(b) {
			t.Fatalf("mbox messages hold %d bytes of %d", total, len(b))
		}
	})
}

type countReader struct {
	r io.Reader
	n int
}

func (c *countReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}

// Want declines parts before they are converted: a declined HTML part is not turned into text.
func TestReadDocumentWant(t *testing.T) {
	raw := "From: a@b\nContent-Type: multipart/mixed; boundary=M\n\n--M\nContent-Type: text/html\n\n<p>weekly news</p>\n--M\nContent-Type: text/plain\n\nTotal: $5.00\n--M--\n"
	var asked []mail.TextKind
	d, err := mail.ReadDocument(strings.NewReader(raw), &mail.DocumentOptions{Want: func(k mail.TextKind, b []byte) bool {
		asked = append(asked, k)
		return strings.Contains(string(b), "$")
	}})
	if err != nil || len(d.Parts) != 1 || d.Parts[0].Text != "Total: $5.00" || len(asked) != 2 {
		t.Fatalf("%v %+v asked %v", err, d.Parts, asked)
	}
}

func TestReadDocumentNoRecipients(t *testing.T) {
	raw := "From: a@b.example\nTo: c@d.example, e@f.example\nSubject: s\n\nhi\n"
	d, err := mail.ReadDocument(strings.NewReader(raw), &mail.DocumentOptions{NoRecipients: true})
	if err != nil || len(d.To) != 0 || d.Get("To") == "" || d.From.Addr != "a@b.example" {
		t.Fatalf("%v to %v field %q from %v", err, d.To, d.Get("To"), d.From)
	}
	if d, _ := mail.ReadDocument(strings.NewReader(raw), nil); len(d.To) != 2 {
		t.Fatalf("to %v", d.To)
	}
}

// DeclineHeader sees the well-formed fields as written (a malformed line and the mbox From_
// line left out), ending in an empty line; declining returns ErrDeclined, not a skip.
func TestReadDocumentDeclineHeader(t *testing.T) {
	raw := "From x@y Mon Jan  1 00:00:00 2024\nFrom: a@b.example\nnot a field\nList-Post: <mailto:l@b.example>\nSubject: a\n long subject\n\nbody\n"
	var seen string
	_, err := mail.ReadDocument(strings.NewReader(raw), &mail.DocumentOptions{DeclineHeader: func(h []byte) bool {
		seen = string(h)
		return strings.Contains(seen, "List-Post:")
	}})
	if !errors.Is(err, mail.ErrDeclined) || errors.Is(err, mail.ErrSkipped) {
		t.Fatalf("error %v", err)
	}
	if want := "From: a@b.example\r\nList-Post: <mailto:l@b.example>\r\nSubject: a\r\n long subject\r\n\r\n"; seen != want {
		t.Fatalf("header %q, want %q", seen, want)
	}
	d, err := mail.ReadDocument(strings.NewReader(raw), &mail.DocumentOptions{DeclineHeader: func([]byte) bool { return false }})
	if err != nil || d.Subject != "a long subject" || len(d.Parts) != 1 {
		t.Fatalf("%v %+v", err, d)
	}
}
