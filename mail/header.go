package mail

import (
	"bytes"
	"io"
	"mime"
	netmail "net/mail"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/emersion/go-message/charset"
	"golang.org/x/net/html"
	"golang.org/x/text/encoding/charmap"
)

// words decodes RFC 2047 encoded words in any charset go-message knows.
var words = &mime.WordDecoder{CharsetReader: charset.Reader}

// toUTF8 returns b as UTF-8: as it is when it is valid UTF-8, else decoded from the declared
// charset when that decodes it, else from Windows-1252 (which every byte sequence decodes from,
// and which is what clients that wrote raw Latin-1 actually meant).
func toUTF8(b []byte, declared string) string {
	if utf8.Valid(b) {
		return string(b)
	}
	if declared != "" {
		if r, err := charset.Reader(declared, bytes.NewReader(b)); err == nil {
			if out, err := io.ReadAll(r); err == nil && utf8.Valid(out) && !bytes.ContainsRune(out, utf8.RuneError) {
				return string(out)
			}
		}
	}
	out, err := charmap.Windows1252.NewDecoder().Bytes(b)
	if err != nil {
		return strings.ToValidUTF8(string(b), "\uFFFD")
	}
	return string(out)
}

// decodeWords decodes the encoded words of an unstructured value; a value whose words cannot be
// decoded is kept as written.
func decodeWords(s, declared string) string {
	s = toUTF8([]byte(s), declared)
	if strings.Contains(s, "=?") {
		if d, err := words.DecodeHeader(s); err == nil {
			s = d
		}
	}
	return clean(s)
}

// decodeHeader fills the message's fields from the header.
func decodeHeader(h header, declared string, m *Message) {
	decodeFields(h, declared, m, false)
}

// decodeFields is decodeHeader; noRecipients leaves To and Cc unparsed (their fields are still in
// Fields), for readers that never look at them.
func decodeFields(h header, declared string, m *Message, noRecipients bool) {
	fallback := "windows-1252"
	if declared != "" {
		fallback = declared
	}
	// The first raw value (8-bit fixed, words intact) of each address field, and the first
	// decoded value of each field read below, taken in the one pass over the fields (keys come
	// canonical from the header, so an exact comparison is Get's case-insensitive one).
	var rawFrom, rawSender, rawReplyTo, rawTo, rawCc string
	var haveFrom, haveSender, haveReplyTo, haveTo, haveCc bool
	var first [len(readFields)]int // of each field read below, 1 + the index of its first in m.Fields
	if m.Fields == nil {
		m.Fields = make([]Field, 0, len(h.raw))
	}
	for _, f := range h.raw {
		k, v := fieldKV(f)
		fixed := v
		if !utf8.ValidString(v) {
			fixed = toUTF8([]byte(v), declared)
			m.problem("raw 8-bit %s read as %s", k, fallback)
		}
		switch k {
		case "From":
			if !haveFrom {
				rawFrom, haveFrom = fixed, true
			}
		case "Sender":
			if !haveSender {
				rawSender, haveSender = fixed, true
			}
		case "Reply-To":
			if !haveReplyTo {
				rawReplyTo, haveReplyTo = fixed, true
			}
		case "To":
			if !haveTo {
				rawTo, haveTo = fixed, true
			}
		case "Cc":
			if !haveCc {
				rawCc, haveCc = fixed, true
			}
		}
		val := fixed
		if strings.Contains(val, "=?") {
			if d, err := words.DecodeHeader(val); err == nil {
				val = d
			} else {
				m.problem("%s: encoded words unreadable, kept as written", k)
			}
		}
		if i := slices.Index(readFields[:], k); i >= 0 && first[i] == 0 {
			first[i] = len(m.Fields) + 1
		}
		m.Fields = append(m.Fields, Field{Key: k, Value: truncate(clean(val), 8<<10)})
	}
	get := func(k string) string {
		if i := first[slices.Index(readFields[:], k)]; i > 0 {
			return m.Fields[i-1].Value
		}
		return ""
	}
	m.Subject = get("Subject")
	m.From = firstAddress(addresses(rawFrom, "From", m))
	if m.From.Addr == "" {
		if s := firstAddress(addresses(rawSender, "Sender", m)); s.Addr != "" {
			m.From = s
		}
	}
	m.ReplyTo = addresses(rawReplyTo, "Reply-To", m)
	if !noRecipients {
		m.To = addresses(rawTo, "To", m)
		m.Cc = addresses(rawCc, "Cc", m)
	}
	m.MessageID = firstID(get("Message-Id"))
	m.InReplyTo = firstID(get("In-Reply-To"))
	m.References = ids(get("References"))
	m.ListID = get("List-Id")
	m.ListPost = get("List-Post")
	m.ListUnsubscribe = get("List-Unsubscribe")
	m.ListUnsubscribePost = strings.EqualFold(strings.TrimSpace(get("List-Unsubscribe-Post")), "List-Unsubscribe=One-Click")
	m.Date = readDate(m, get("Date"), get("Received"))
}

// readFields are the fields decodeFields reads into a Message's own fields (canonical keys).
var readFields = [...]string{"Subject", "Message-Id", "In-Reply-To", "References", "List-Id", "List-Post", "List-Unsubscribe",
	"List-Unsubscribe-Post", "Date", "Received"}

func firstAddress(as []Address) Address {
	if len(as) == 0 {
		return Address{}
	}
	return as[0]
}

var addrParser = &netmail.AddressParser{WordDecoder: words}

// looseAddr finds things that look like addresses in a value no parser accepts.
var looseAddr = regexp.MustCompile(`[^\s<>,;:"'()\[\]]+@[^\s<>,;:"'()\[\]]+`)

// addresses parses an address list; a list no parser accepts is salvaged: every address-looking
// token is kept, with the text before the first one as the display name.
func addresses(v, key string, m *Message) []Address {
	v = strings.TrimSpace(v)
	if v == "" {
		return nil
	}
	if a, ok := simpleAddress(v); ok {
		return []Address{a}
	}
	if list, err := addrParser.ParseList(v); err == nil {
		out := make([]Address, 0, len(list))
		for _, a := range list {
			out = append(out, Address{Name: clean(a.Name), Addr: clean(a.Address)})
		}
		return out
	}
	found := looseAddr.FindAllStringIndex(v, 100)
	if len(found) == 0 {
		m.problem("%s has no address", key)
		return []Address{{Name: decodeWords(strings.Trim(v, `"' `), "")}}
	}
	m.problem("%s is not a valid address list, read loosely", key)
	out := make([]Address, 0, len(found))
	for i, f := range found {
		a := Address{Addr: clean(v[f[0]:f[1]])}
		if i == 0 {
			a.Name = decodeWords(strings.Trim(strings.TrimSpace(v[:f[0]]), `"'<> `), "")
		}
		out = append(out, a)
	}
	return out
}

// simpleAddress reads, by hand, the one-mailbox values most mail carries: "local@domain",
// "Display Name <local@domain>" and "\"Display Name\" <local@domain>", with ASCII words and
// dot-atoms only. Anything else is not ok (net/mail reads it); on what it reads, it gives
// net/mail's answer (a test holds them together), without net/mail's parser state and copies.
func simpleAddress(v string) (Address, bool) {
	if !strings.HasSuffix(v, ">") {
		return Address{Addr: v}, simpleAddrSpec(v)
	}
	i := strings.LastIndexByte(v, '<')
	if i < 0 || !simpleAddrSpec(v[i+1:len(v)-1]) {
		return Address{}, false
	}
	name := strings.TrimRight(v[:i], " ")
	if len(name) >= 2 && name[0] == '"' && name[len(name)-1] == '"' {
		name = name[1 : len(name)-1]
	}
	if !simpleWords(name) {
		return Address{}, false
	}
	return Address{Name: name, Addr: v[i+1 : len(v)-1]}, true
}

// simpleWords reports whether s is ASCII letters and digits in words one space apart.
func simpleWords(s string) bool {
	if s == "" || s[0] == ' ' || s[len(s)-1] == ' ' {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case c == ' ' && s[i-1] != ' ':
		default:
			return false
		}
	}
	return true
}

// simpleAddrSpec reports whether s is local@domain, each a dot-atom of letters, digits and
// "-", "_", "+" (local part) with no dot at either end or two in a row.
func simpleAddrSpec(s string) bool {
	local, domain, ok := strings.Cut(s, "@")
	return ok && dotAtom(local, "-_+") && dotAtom(domain, "-")
}

func dotAtom(s, extra string) bool {
	if s == "" || s[0] == '.' || s[len(s)-1] == '.' || strings.Contains(s, "..") {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || strings.IndexByte(extra, c) >= 0) {
			return false
		}
	}
	return true
}

// ids returns the message ids of a Message-ID, In-Reply-To or References value: every
// "<id>" with no white space or angle bracket inside (at most 100), else a bare first word
// with an "@". It scans by hand what the regular expression <([^<>\s]+)> finds (a test holds
// the two to the same answers): the expression was a twentieth of a fetch's parse.
func ids(v string) []string {
	var out []string
	for i := 0; i < len(v) && len(out) < 100; {
		j := strings.IndexByte(v[i:], '<')
		if j < 0 {
			break
		}
		start := i + j + 1
		k := start
		for k < len(v) && v[k] != '>' && v[k] != '<' && !idSpace(v[k]) {
			k++
		}
		if k < len(v) && v[k] == '>' && k > start {
			out = append(out, v[start:k])
			i = k + 1
			continue
		}
		i = start
	}
	if len(out) == 0 {
		if f := strings.Fields(v); len(f) > 0 && strings.Contains(f[0], "@") {
			out = append(out, strings.Trim(f[0], "<>"))
		}
	}
	return out
}

// idSpace is RE2's \s.
func idSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\f' || c == '\r' }

func firstID(v string) string {
	if l := ids(v); len(l) > 0 {
		return l[0]
	}
	return ""
}

// rfc5322Date is RFC 5322's date with a day name and a numeric zone ("2" also reads "02").
const rfc5322Date = "Mon, 2 Jan 2006 15:04:05 -0700"

// dateLayouts are forms of Date seen in the wild that net/mail refuses.
var dateLayouts = []string{
	"Mon, 2 Jan 2006 15:04:05 -0700 (MST)",
	"Mon, 2 Jan 2006 15:04:05 MST",
	"Mon, 2 Jan 2006 15:04:05",
	"2 Jan 2006 15:04:05",
	"Mon, 2 Jan 06 15:04:05 -0700",
	"Mon, 2 Jan 2006 15:04 -0700",
	"Monday, January 2, 2006 15:04:05 -0700",
	"Mon Jan 2 15:04:05 2006",
	"Mon Jan 2 15:04:05 MST 2006",
	"2006-01-02 15:04:05 -0700",
	"2006-01-02T15:04:05Z07:00",
	"2006-01-02 15:04:05",
	"02.01.2006 15:04:05",
	"Mon, 2 Jan 2006",
}

// readDate reads Date, or, when it is missing or broken, the time of the newest Received field
// (the receiving server's clock).
func readDate(m *Message, date, received string) time.Time {
	if v := strings.TrimSpace(date); v != "" {
		if t, ok := parseDate(v); ok {
			return t
		}
		m.problem("Date %q unreadable", truncate(v, 60))
	}
	if rcv := received; rcv != "" {
		if i := strings.LastIndexByte(rcv, ';'); i >= 0 {
			if t, ok := parseDate(strings.TrimSpace(rcv[i+1:])); ok {
				m.problem("date taken from Received")
				return t
			}
		}
	}
	return time.Time{}
}

// obsZones are RFC 5322's obsolete zone names, which net/mail does not read.
var obsZones = strings.NewReplacer(" UT", " +0000", " EDT", " -0400", " EST", " -0500", " CDT", " -0500",
	" CST", " -0600", " MDT", " -0600", " MST", " -0700", " PDT", " -0700", " PST", " -0800")

func parseDate(v string) (time.Time, bool) {
	v = normalSpace(v)
	if v != "" && len(v)-strings.LastIndexByte(v, ' ')-1 <= 3 { // the last word: an obsolete zone?
		v = obsZones.Replace(v)
	}
	// The form nearly every client writes, first: net/mail tries its layouts in turn, and
	// each failed attempt builds an error (a quarter of a header block's parse). On a date
	// this layout reads, net/mail's answer is the same (its first layout with a day name).
	if t, err := time.Parse(rfc5322Date, v); err == nil {
		return sane(t)
	}
	if t, err := netmail.ParseDate(v); err == nil {
		return sane(t)
	}
	for _, l := range dateLayouts {
		if t, err := time.Parse(l, v); err == nil {
			return sane(t)
		}
	}
	// A trailing comment or zone name net/mail does not know ("+0000 (GMT Standard Time)").
	if i := strings.IndexByte(v, '('); i > 0 {
		return parseDate(v[:i])
	}
	return time.Time{}, false
}

// normalSpace is strings.Join(strings.Fields(v), " "), without its copies for a value that is
// already so (printable ASCII words, one space apart), as nearly every Date is.
func normalSpace(v string) string {
	for i := 0; i < len(v); i++ {
		if c := v[i]; c >= 0x80 || (c <= ' ' && (c != ' ' || i == 0 || i == len(v)-1 || v[i-1] == ' ')) {
			return strings.Join(strings.Fields(v), " ")
		}
	}
	return v
}

// sane refuses dates no mail was written on (before 1970 or far in the future).
func sane(t time.Time) (time.Time, bool) {
	if t.Year() < 1970 || t.Year() > 2200 {
		return time.Time{}, false
	}
	return t.UTC(), true
}

var extParams = map[string]*regexp.Regexp{
	"filename": regexp.MustCompile(`(?i)filename\*(?:0\*)?\s*=\s*"?([^'"\s;]*)'[^']*'([^;"\s]+)`),
	"name":     regexp.MustCompile(`(?i)\bname\*(?:0\*)?\s*=\s*"?([^'"\s;]*)'[^']*'([^;"\s]+)`),
}

// extParam reads an RFC 2231 extended parameter (name*=charset'lang'percent-encoded, possibly
// in numbered sections) in a charset other than UTF-8, which mime.ParseMediaType leaves out.
func extParam(header, name string) string {
	if !strings.Contains(header, "*") {
		return ""
	}
	sm := extParams[name].FindStringSubmatch(header)
	if sm == nil {
		return ""
	}
	raw, err := url.PathUnescape(sm[2])
	if err != nil {
		return ""
	}
	return toUTF8([]byte(raw), sm[1])
}

// htmlText returns the text of an HTML document, without scripts and styles.
func htmlText(s string) string {
	z := html.NewTokenizer(strings.NewReader(s))
	var b strings.Builder
	skip := 0
	for b.Len() < 4*MaxTextBytes {
		switch z.Next() {
		case html.ErrorToken:
			return b.String()
		case html.TextToken:
			if skip == 0 {
				b.Write(z.Text())
			}
		case html.StartTagToken:
			name, _ := z.TagName()
			switch string(name) {
			case "script", "style", "head", "title":
				skip++
			case "br", "p", "div", "tr", "td", "li", "h1", "h2", "h3", "table":
				b.WriteByte(' ')
			}
		case html.EndTagToken:
			name, _ := z.TagName()
			switch string(name) {
			case "script", "style", "head", "title":
				if skip > 0 {
					skip--
				}
			case "p", "div", "td", "li":
				b.WriteByte(' ')
			}
		}
	}
	return b.String()
}
