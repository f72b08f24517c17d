package mail_test

import (
	"strings"
	"testing"

	"svc.dev/svc/mail"
)

func TestRouteAndShapeFacts(t *testing.T) {
	for _, tc := range []struct {
		name, msg                  string
		origin, relays, shape, obf string
	}{
		{
			name: "a bot on a residential line straight to the recipient's server",
			msg: "Received: from mx.example.net (mx.example.net [192.0.2.1]) by inbox.example.org with ESMTP; Mon, 1 Jan 2024 10:00:00 +0000\r\n" +
				"Received: from hwzx ([203.0.113.77]) by mx.example.net with SMTP; Mon, 1 Jan 2024 09:59:00 +0000\r\n" +
				"From: Bank <alerts@bank.example>\r\nSubject: hi\r\nContent-Type: text/html\r\n\r\n" +
				`<p>Click <a href="http://x.example/">here</a></p>`,
			origin: "ip-literal", relays: "example.net,example.org", shape: "links=1,images=0,words=2",
		},
		{
			name: "qmail's form, a dynamic reverse name",
			msg: "Received: from c-198-51-100-7.hsd1.ma.comcast.net (HELO desktop) (198.51.100.7) by smtp.isp.example with SMTP; 1 Jan 2003 10:00:00 -0000\r\n" +
				"From: a@b.example\r\nSubject: x\r\n\r\nHello there",
			origin: "dynamic,bare-helo", relays: "comcast.net,isp.example", shape: "links=0,images=0,words=2",
		},
		{
			name: "internal hops are not the origin",
			msg: "Received: from mail.corp.example (mail.corp.example [198.51.100.9]) by mx.other.example; 1 Jan 2003 10:00:00 -0000\r\n" +
				"Received: (qmail 26211 invoked from network); 1 Jan 2003 10:00:00 -0000\r\n" +
				"Received: from localhost (HELO laptop) ([127.0.0.1]) by mail.corp.example; 1 Jan 2003 10:00:00 -0000\r\n" +
				"From: a@corp.example\r\nSubject: x\r\n\r\nSee https://corp.example/a and http://corp.example/b",
			relays: "corp.example,other.example", shape: "links=2,images=0,words=4",
		},
		{
			name: "obfuscated words",
			msg: "From: a@b.example\r\nSubject: P\u0430yPal notice\r\nContent-Type: text/html; charset=utf-8\r\n\r\n" +
				"<div style=\"display:none\">lorem ipsum</div><p>Get V.I.A.G.R.A now\u200b</p><img src=x>",
			shape: "links=0,images=1,words=5", obf: "zero-width,hidden-html,mixed-script,spaced-letters",
		},
		{
			name:  "initials and Cyrillic prose are not obfuscation",
			msg:   "From: a@b.example\r\nSubject: J. R. R. Tolkien\r\nContent-Type: text/plain; charset=utf-8\r\n\r\nПривет, мир. Version 2 ready.",
			shape: "links=0,images=0,words=5",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := mail.Read(strings.NewReader(tc.msg)).Facts()
			for k, want := range map[string]string{mail.FactOrigin: tc.origin, mail.FactRelays: tc.relays, mail.FactShape: tc.shape, mail.FactObfuscated: tc.obf} {
				if got := f[k]; got != want {
					t.Errorf("%s = %q, want %q", k, got, want)
				}
			}
		})
	}
}
