package mail

import (
	"bufio"
	"bytes"
	netmail "net/mail"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/emersion/go-message/textproto"
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

// readHeader puts each well-formed field into the header as it is; the header must be what
// go-message's own reader makes of the same fields (values unfolded and trimmed, duplicates,
// order, the raw bytes written back), on any mix of fields and continuation lines.
func TestReadHeaderAgreesWithGoMessage(t *testing.T) {
	keys := []string{"Subject", "From", "To", "X-Thing", "subject", "Content-Type", "content-TYPE", "Content-Transfer-Encoding", "Received", "DKIM-Signature ", "List-Id"}
	values := []string{"", " plain", "  two  spaces ", "\tx", " a\rb", " =?utf-8?q?caf=C3=A9?=", " a:b:c", " caf\xe9 8-bit", " <id@x>"}
	rapid.Check(t, func(t *rapid.T) {
		var raw, block bytes.Buffer
		for range rapid.IntRange(1, 12).Draw(t, "n") {
			line := rapid.SampledFrom(keys).Draw(t, "key") + ":" + rapid.SampledFrom(values).Draw(t, "value")
			raw.WriteString(line + "\r\n")
			block.WriteString(line + "\r\n")
			for range rapid.IntRange(0, 2).Draw(t, "folds") {
				cont := rapid.SampledFrom([]string{" more", "\tand more ", "  x"}).Draw(t, "cont")
				raw.WriteString(cont + "\n")
				block.WriteString(cont + "\r\n")
			}
		}
		raw.WriteString("\r\nbody\r\n")
		block.WriteString("\r\n")
		got, _, err := readHeader(bufio.NewReader(&raw), &Message{})
		if err != nil {
			t.Fatal(err)
		}
		want, err := textproto.ReadHeader(bufio.NewReader(&block))
		if err != nil {
			t.Fatal(err)
		}
		var gotFields, wantFields, gotMIME, wantMIME []string
		for _, f := range got.raw {
			k, v := fieldKV(f)
			gotFields = append(gotFields, k+"="+v)
		}
		for fs := got.mime.Fields(); fs.Next(); {
			gotMIME = append(gotMIME, fs.Key()+"="+fs.Value())
		}
		for fs := want.Fields(); fs.Next(); {
			wantFields = append(wantFields, fs.Key()+"="+fs.Value())
			if strings.HasPrefix(fs.Key(), "Content-") {
				wantMIME = append(wantMIME, fs.Key()+"="+fs.Value())
			}
		}
		if !slices.Equal(gotFields, wantFields) || !slices.Equal(gotMIME, wantMIME) {
			t.Fatalf("fields %q (MIME %q), go-message %q (MIME %q)", gotFields, gotMIME, wantFields, wantMIME)
		}
		for _, k := range keys {
			if got.get(k) != want.Get(k) {
				t.Fatalf("%s: %q, go-message %q", k, got.get(k), want.Get(k))
			}
		}
		if got.mime.Get("Content-Type") != want.Get("Content-Type") || !slices.Equal(got.mime.Values("Content-Type"), want.Values("Content-Type")) {
			t.Fatalf("Content-Type %q, go-message %q", got.mime.Values("Content-Type"), want.Values("Content-Type"))
		}
	})
}

// normalSpace is strings.Join(strings.Fields(v), " ") on any value.
func TestNormalSpace(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		v := rapid.StringOfN(rapid.SampledFrom([]rune{' ', '\t', '\n', '\r', '\u00a0', '\u0085', '\x01', 'a', 'Z', '0', ':', '+', 'é'}), 0, 20, -1).Draw(t, "v")
		if got, want := normalSpace(v), strings.Join(strings.Fields(v), " "); got != want {
			t.Fatalf("normalSpace(%q) = %q, want %q", v, got, want)
		}
	})
}

// collapseParts stops once the first n bytes of the result are known; it must give what
// collapsing the joined texts whole and truncating gives.
func TestCollapsePartsAgrees(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var parts []TextPart
		var texts []string
		for range rapid.IntRange(0, 4).Draw(t, "parts") {
			s := rapid.StringOfN(rapid.SampledFrom([]rune{' ', '\t', '\n', '\u00a0', '\u3000', '\u0085', '\u200b', '\x01', 'a', 'é', '€', '0'}), 0, 30, -1).Draw(t, "text")
			parts = append(parts, TextPart{Text: s})
			texts = append(texts, s)
		}
		n := rapid.IntRange(0, 40).Draw(t, "n")
		if got, want := collapseParts(parts, n), truncate(collapse(strings.Join(texts, " ")), n); got != want {
			t.Fatalf("collapseParts(%q, %d) = %q, want %q", texts, n, got, want)
		}
	})
}

// simpleAddress reads by hand the values net/mail would read the same way: on what it accepts,
// its answer must be net/mail's.
func TestSimpleAddressAgreesWithNetMail(t *testing.T) {
	pieces := []string{"a", "Z", "0", ".", "-", "_", "+", "@", " ", "\"", "<", ">", "acme", "billing", "example.com", "co.uk", "Acme Billing", "=?utf-8?q?x?=", "é", ",", "(c)", "\t"}
	rapid.Check(t, func(t *rapid.T) {
		from := pieces
		if rapid.Bool().Draw(t, "simple") {
			from = []string{"a", "Z", "0", ".", "-", "acme", "billing", " ", "@", "example.com"}
		}
		var b strings.Builder
		for range rapid.IntRange(1, 12).Draw(t, "n") {
			b.WriteString(rapid.SampledFrom(from).Draw(t, "piece"))
		}
		v := strings.TrimSpace(b.String())
		for _, v := range []string{v, "Acme <" + v + ">", v + " <billing@acme.example>", "\"" + v + "\" <a@b.example>"} {
			got, ok := simpleAddress(v)
			if !ok {
				continue
			}
			list, err := addrParser.ParseList(v)
			if err != nil || len(list) != 1 || list[0].Name != got.Name || list[0].Address != got.Addr {
				t.Fatalf("simpleAddress(%q) = %+v; net/mail: %v %v", v, got, list, err)
			}
		}
	})
	// And these are read by hand, as net/mail reads them.
	for _, v := range []string{"billing@acme.example", "Acme Billing <billing@acme.example>", "\"Acme Billing\" <b.x-y+z@mail.acme.co.uk>", "A <a@b>"} {
		got, ok := simpleAddress(v)
		list, err := addrParser.ParseList(v)
		if !ok || err != nil || len(list) != 1 || list[0].Name != got.Name || list[0].Address != got.Addr {
			t.Errorf("simpleAddress(%q) = %+v, %v; net/mail: %v %v", v, got, ok, list, err)
		}
	}
}

// collapse returns a line that needs nothing as it is; on any text it gives what collapsing
// it in full gives.
func TestCollapseFastPath(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s := rapid.StringOfN(rapid.SampledFrom([]rune{' ', '\t', '\n', '\x7f', '\x01', '\u00a0', '\u200b', '\u3000', 'a', 'Z', '0', '.', 'é'}), 0, 16, -1).Draw(t, "s")
		var b strings.Builder
		space := true
		for _, r := range s {
			if r < 0x20 || r == 0x7f || r == ' ' || r == 0xa0 || r == '\u200b' || r == '\u200c' || r == '\u034f' {
				if !space {
					b.WriteByte(' ')
					space = true
				}
				continue
			}
			b.WriteRune(r)
			space = false
		}
		if got, want := collapse(s), strings.TrimSpace(b.String()); got != want {
			t.Fatalf("collapse(%q) = %q, want %q", s, got, want)
		}
	})
}
