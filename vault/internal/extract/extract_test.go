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
