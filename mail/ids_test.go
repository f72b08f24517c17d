package mail

import (
	netmail "net/mail"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"
)

// ids scans by hand what this expression finds; the two must agree on any value.
var msgIDPattern = regexp.MustCompile(`<([^<>\s]+)>`)

// idsByPattern is ids as it was, with the expression.
func idsByPattern(v string) []string {
	var out []string
	for _, m := range msgIDPattern.FindAllStringSubmatch(v, 100) {
		out = append(out, m[1])
	}
	if len(out) == 0 {
		if f := strings.Fields(v); len(f) > 0 && strings.Contains(f[0], "@") {
			out = append(out, strings.Trim(f[0], "<>"))
		}
	}
	return out
}

func TestIDsAgreeWithThePattern(t *testing.T) {
	for _, v := range []string{"", "<a@b>", "<<a@b>>", "<a b@c> <d@e>", "x <a@b><c@d> y", "<>", "<a\t@b>", "<a@b", "a@b>", "<a<b@c>", "<é@ü>", "<\xff@x>"} {
		if got, want := ids(v), idsByPattern(v); !slices.Equal(got, want) {
			t.Errorf("ids(%q) = %q, the pattern finds %q", v, got, want)
		}
	}
	rapid.Check(t, func(t *rapid.T) {
		v := rapid.StringOf(rapid.SampledFrom([]rune{'<', '>', ' ', '\t', '\r', '\n', '\f', 'a', '@', '.', 'é', '\v'})).Draw(t, "v")
		if want := idsByPattern(v); !slices.Equal(ids(v), want) {
			t.Fatalf("ids(%q) = %q, the pattern finds %q", v, ids(v), want)
		}
	})
}

// The date layout tried first reads dates exactly as net/mail does.
func TestFirstDateLayoutAgreesWithNetMail(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		at := time.Unix(rapid.Int64Range(0, 4e9).Draw(t, "unix"), 0).In(time.FixedZone("", 60*rapid.IntRange(-720, 840).Draw(t, "zone")))
		layout := rapid.SampledFrom([]string{time.RFC1123Z, rfc5322Date, "Mon, 2 Jan 2006 15:04:05 -0700", "Mon, 02 Jan 06 15:04:05 -0700", time.RFC1123}).Draw(t, "layout")
		v := at.Format(layout)
		mine, err := time.Parse(rfc5322Date, v)
		theirs, nerr := netmail.ParseDate(v)
		if err == nil && (nerr != nil || !mine.Equal(theirs) || mine.Format(time.RFC3339) != theirs.Format(time.RFC3339)) {
			t.Fatalf("%q: first layout %v, net/mail %v (%v)", v, mine, theirs, nerr)
		}
	})
}

// Platforms looks at X- fields only, in one bit set: every platform header must be one, and fit.
func TestPlatformHeadersAreXFields(t *testing.T) {
	if len(platforms) > 64 {
		t.Fatalf("%d platform headers, more than Platforms' bit set holds", len(platforms))
	}
	for _, p := range platforms {
		if !strings.HasPrefix(p.header, "X-") {
			t.Errorf("platform header %q is not an X- field", p.header)
		}
	}
	m := &Message{Fields: []Field{{Key: "x-github-reason", Value: "a"}, {Key: "X-Mailman-Version", Value: "2"}, {Key: "X-Mailer", Value: "MailChimp Mailer"}}}
	if got := strings.Join(m.Platforms(), ","); got != "mailman,github,mailchimp" {
		t.Errorf("platforms %q", got)
	}
}
