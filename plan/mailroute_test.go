package plan_test

import (
	"strings"
	"testing"

	"svc.dev/svc/mail"
	"svc.dev/svc/plan"
)

// A stranger's unsolicited mail is judged on how it was sent and written: a free-mail sender its
// provider never relayed, an origin at a bare or residential host outside the sender's domain, a
// body that is one link, obfuscated words. Two marks make it junk; one leaves it review; the
// same route on mail from a list the owner receives changes nothing.
func TestRouteAndShapeSignals(t *testing.T) {
	base := func(facts map[string]string) map[string]string {
		f := map[string]string{mail.FactMessageID: "1@x.example", mail.FactShape: "links=0,images=0,words=120"}
		for k, v := range facts {
			f[k] = v
		}
		return f
	}
	to := func(o *plan.Object) { o.To = []string{"me@home.example"} }
	for _, tc := range []struct {
		name, from string
		facts      map[string]string
		mut        func(*plan.Object)
		want       string
	}{
		{"forged free mail, one link", "Ann <ann123@gmail.com>",
			base(map[string]string{mail.FactRelays: "bulkhost.example,home.example", mail.FactOrigin: "ip-literal", mail.FactShape: "links=1,images=0,words=9"}), to,
			"LIKELY_REMOVABLE: junk: unsolicited, from someone you never wrote to, a gmail.com sender its provider never relayed, the body is little more than a link or an image"},
		// For free mail the odd origin is not counted again: never relayed by its provider says it.
		{"forged free mail from a bare host", "Ann <ann123@gmail.com>",
			base(map[string]string{mail.FactRelays: "bulkhost.example,home.example", mail.FactOrigin: "ip-literal"}), to,
			"REVIEW: review: looks like a person's mail"},
		{"free mail its provider relayed", "Ann <ann123@gmail.com>",
			base(map[string]string{mail.FactRelays: "google.com,home.example"}), to,
			"REVIEW: review: looks like a person's mail"},
		{"residential origin outside the sender's domain, one link", "Bob <bob@shop.example>",
			base(map[string]string{mail.FactRelays: "isp.example,home.example", mail.FactOrigin: "dynamic", mail.FactShape: "links=1,images=0,words=12"}), to,
			"LIKELY_REMOVABLE: junk: unsolicited, from someone you never wrote to, sent from an unnamed or residential host outside the sender's domain (dynamic), the body is little more than a link or an image"},
		{"a residential origin inside the sender's domain", "Bob <bob@isp.example>",
			base(map[string]string{mail.FactRelays: "isp.example,home.example", mail.FactOrigin: "dynamic"}), to,
			"REVIEW: review: looks like a person's mail"},
		{"look-alike letters", "Cat <cat@bank-notice.example>",
			base(map[string]string{mail.FactObfuscated: "mixed-script"}), to,
			"LIKELY_REMOVABLE: junk: unsolicited, from someone you never wrote to, obfuscated text (mixed-script)"},
		{"only hidden HTML (preheaders do that)", "Cat <cat@news.example>",
			base(map[string]string{mail.FactObfuscated: "hidden-html"}), to,
			"REVIEW: review: looks like a person's mail"},
		{"the same route through a list the owner receives", "Ann <ann123@gmail.com>",
			base(map[string]string{mail.FactRelays: "bulkhost.example", mail.FactOrigin: "ip-literal", mail.FactListPost: "<mailto:dev@lists.example>",
				mail.FactObfuscated: "mixed-script"}),
			func(o *plan.Object) { to(o); o.ListID = "Dev <dev.lists.example>" },
			"PROTECTED_BY_RULE: conversation: a discussion list you receive"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := request(nil, message(tc.from, "hello", tc.facts, tc.mut))
			req.Sources[0].Addresses = []string{"me@home.example"} // the owner's: the message is addressed to them
			p := build(t, req)
			got := strings.TrimPrefix(p.Objects[0].StorageClass.String(), "STORAGE_CLASS_") + ": " + p.Objects[0].StorageClassReason
			if !strings.HasPrefix(got, tc.want) {
				t.Errorf("%q\nwant %q", got, tc.want)
			}
		})
	}
}
