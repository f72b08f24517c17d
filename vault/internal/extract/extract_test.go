package extract

import (
	"strings"
	"testing"
)

func TestModeOf(t *testing.T) {
	for _, c := range []struct {
		mime, kind, name string
		want             Mode
	}{
		{"message/rfc822", "", "", Message},
		{"", "message", "", Message},
		{"", "", "note.eml", Message},
		{"text/plain; charset=utf-8", "", "", Self},
		{"text/csv", "", "", Self},
		{"TEXT/HTML", "", "", HTML},
		{"", "", "page.htm", HTML},
		{"image/png", "", "a.png", None},
		{"", "file", "a.bin", None},
	} {
		if got := ModeOf(c.mime, c.kind, c.name); got != c.want {
			t.Errorf("ModeOf(%q, %q, %q) = %v, want %v", c.mime, c.kind, c.name, got, c.want)
		}
	}
}

func TestStripHTML(t *testing.T) {
	in := `<!DOCTYPE html><html><head><title>Hi</title><style>p{color:red}</style>
<script type="text/javascript">if (a < b) { alert("<p>x</p>") }</script></head>
<body><p>Hello&nbsp;&amp; <b>wel</b>come,   <a href="x>y">friend</a>!</p><!-- hidden <p>comment</p> -->
<div>a &lt; b &#8364;5</div><p>1 < 2</p></body></html>`
	var out strings.Builder
	if err := StripHTML(&out, strings.NewReader(in)); err != nil {
		t.Fatal(err)
	}
	want := "Hi\n\nHello & welcome, friend!\n\na < b €5\n\n1 < 2"
	if got := strings.TrimSpace(out.String()); got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
}

const multipartMsg = "From: a@example.com\r\nTo: b@example.com\r\nSubject: test\r\nMIME-Version: 1.0\r\n" +
	"Content-Type: multipart/mixed; boundary=\"outer\"\r\n\r\n" +
	"--outer\r\nContent-Type: multipart/alternative; boundary=\"inner\"\r\n\r\n" +
	"--inner\r\nContent-Type: text/html; charset=utf-8\r\n\r\n<p>html version</p>\r\n" +
	"--inner\r\nContent-Type: text/plain; charset=iso-8859-1\r\nContent-Transfer-Encoding: quoted-printable\r\n\r\nCaf=E9 plain version=\r\n continued\r\n" +
	"--inner--\r\n" +
	"--outer\r\nContent-Type: text/plain\r\nContent-Disposition: attachment; filename=a.txt\r\n\r\nattachment text\r\n" +
	"--outer--\r\n"

func TestMessage(t *testing.T) {
	for _, c := range []struct{ name, msg, want string }{
		{"plain", "Subject: x\r\n\r\nJust text.\r\n", "Just text.\r\n"},
		{"base64", "Subject: x\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Transfer-Encoding: base64\r\n\r\nSMOpbGxv\r\nIHfDtnJsZA==\r\n", "Héllo wörld"},
		{"multipart prefers plain", multipartMsg, "Café plain version continued"},
		{"html only", "Content-Type: text/html\r\n\r\n<div>Only <i>html</i></div>", "Only html"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, ok, err := Text(Message, strings.NewReader(c.msg), 1<<20)
			if err != nil || !ok {
				t.Fatalf("ok %v, err %v", ok, err)
			}
			if strings.TrimSpace(string(got)) != strings.TrimSpace(c.want) {
				t.Errorf("got %q, want %q", got, c.want)
			}
		})
	}
	if _, ok, _ := Text(Message, strings.NewReader("Content-Type: image/png\r\n\r\n\x89PNG"), 100); ok {
		t.Error("a message without text gave text")
	}
	got, ok, err := Text(Message, strings.NewReader("Subject: x\r\n\r\n"+strings.Repeat("é", 100)), 11)
	if err != nil || !ok || string(got) != strings.Repeat("é", 5) {
		t.Errorf("limited: %q %v %v", got, ok, err)
	}
}

// Body finds the text in place exactly when Text would extract the same bytes.
func TestBody(t *testing.T) {
	for _, c := range []struct {
		name, msg string
		limit     int
		ok        bool
	}{
		{"plain, no content type", "Subject: x\r\n\r\nJust text.\r\n", 100, true},
		{"utf-8", "Subject: x\r\nContent-Type: text/plain; charset=UTF-8\r\nContent-Transfer-Encoding: 8bit\r\n\r\nHéllo\r\n", 100, true},
		{"folded header, LF only", "Subject: a\n long one\nContent-Type: text/plain;\n charset=us-ascii\n\nbody\n", 100, true},
		{"base64", "Subject: x\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Transfer-Encoding: base64\r\n\r\nSMOpbGxv\r\n", 100, false},
		{"quoted-printable", "Subject: x\r\nContent-Transfer-Encoding: quoted-printable\r\n\r\nCaf=E9\r\n", 100, false},
		{"latin-1", "Subject: x\r\nContent-Type: text/plain; charset=iso-8859-1\r\n\r\nCaf\xe9\r\n", 100, false},
		{"invalid utf-8", "Subject: x\r\n\r\nCaf\xe9\r\n", 100, false},
		{"html", "Content-Type: text/html\r\n\r\n<p>x</p>", 100, false},
		{"multipart", multipartMsg, 1 << 20, false},
		{"over the limit", "Subject: x\r\n\r\n" + strings.Repeat("a", 101), 100, false},
		{"empty body", "Subject: x\r\n\r\n", 100, false},
		{"no header end", "Subject: x", 100, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			from, ok := Body([]byte(c.msg), c.limit)
			if ok != c.ok {
				t.Fatalf("ok %v, want %v", ok, c.ok)
			}
			if !ok {
				return
			}
			text, tok, err := Text(Message, strings.NewReader(c.msg), c.limit)
			if err != nil || !tok || string(text) != c.msg[from:] {
				t.Errorf("Body says the text is %q; Text extracts %q (%v, %v)", c.msg[from:], text, tok, err)
			}
		})
	}
}

// Whatever the header, when Body finds the text in place it is what Text extracts: every
// message of up to three header lines from a list of usual and odd ones is tried.
func TestBodyAgreesWithText(t *testing.T) {
	for _, eol := range []string{"\r\n", "\n"} {
		lines := []string{
			"Subject: hello",
			"Content-Type: text/plain",
			"Content-Type: text/plain; charset=utf-8",
			"content-type: TEXT/PLAIN; CHARSET=\"UTF-8\"; format=flowed",
			"Content-Type: text/plain;" + eol + " charset=us-ascii",
			"Content-Type: text/plain; charset=iso-8859-1",
			"Content-Type: text/html",
			"Content-Type: multipart/mixed; boundary=x",
			"Content-Type: ",
			"Content-Type: garbage;;=",
			"Content-Transfer-Encoding: 8bit",
			"Content-Transfer-Encoding: quoted-printable",
			"CONTENT-TRANSFER-ENCODING:base64",
			"Content-Type : text/html",
			" folded continuation",
			"\tfolded: tab",
			"no colon here",
			": empty key",
			"X-Bare: a\rb",
		}
		bodies := []string{"", "text" + eol, "H\u00e9llo" + eol + "line two" + eol, "bad \xe9 byte", "=E9 not decoded", "<p>x</p>"}
		var headers [][]string
		for _, a := range lines {
			headers = append(headers, []string{a})
			for _, b := range lines {
				headers = append(headers, []string{a, b})
				for _, c := range lines[:6] {
					headers = append(headers, []string{a, b, c})
				}
			}
		}
		found := 0
		for _, h := range headers {
			for _, body := range bodies {
				for _, limit := range []int{5, 40} {
					msg := strings.Join(h, eol) + eol + eol + body
					from, ok := Body([]byte(msg), limit)
					if !ok {
						continue
					}
					found++
					text, tok, err := Text(Message, strings.NewReader(msg), limit)
					if err != nil || !tok || string(text) != msg[from:] {
						t.Fatalf("message %q: Body says the text is %q; Text extracts %q (%v, %v)", msg, msg[from:], text, tok, err)
					}
				}
			}
		}
		if found == 0 {
			t.Fatal("no message had its text in place")
		}
	}
}
