package mail

import (
	"bytes"
	"net/netip"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Keys of the facts about a message's route and shape (see the other Fact* keys). They describe
// how a message was written and relayed, not what it says: junk is written and sent in ways a
// person's or a business's mail rarely is.
const (
	// FactOrigin says what is odd about the first hop of the Received chain (where the message
	// entered the mail system): "ip-literal" (the client had no name, or greeted with a bare
	// address), "dynamic" (a residential or dynamically assigned host name), "bare-helo" (it
	// greeted with a name that is not a domain), comma separated; absent when nothing is.
	FactOrigin = "mail.origin"
	// FactRelays are the organisations (a host name's last two labels) named in the Received
	// chain's from and by parts, comma separated, oldest hop first; absent without a Received
	// field that names a host.
	FactRelays = "mail.relays"
	// FactShape describes the body: "links=N,images=N,words=N" (links and images in the text
	// or HTML read, words of the text).
	FactShape = "mail.shape"
	// FactObfuscated names text written to slip past readers, comma separated: "zero-width"
	// (invisible characters inside the text), "hidden-html" (HTML text styled invisible),
	// "mixed-script" (a word mixing Latin with Cyrillic or Greek look-alikes), "spaced-letters"
	// (a word broken into letters by spaces or punctuation: "V.I.A.G.R.A").
	FactObfuscated = "mail.obfuscated"
)

// BodyShape is what Read saw of a body's shape while it read the text.
type BodyShape struct {
	Links, Images int  // links (href, URLs) and images (img) in the parts read
	ZeroWidth     bool // invisible characters inside the text
	HiddenHTML    bool // HTML text styled invisible (display:none, font-size 0/1, visibility hidden)
}

var (
	zeroWidth  = []string{"\u200b", "\u200c", "\u200d", "\u2060", "\ufeff", "\u00ad"}
	hiddenHTML = [][]byte{[]byte("display:none"), []byte("display: none"), []byte("font-size:0"), []byte("font-size: 0"),
		[]byte("font-size:1px"), []byte("font-size: 1px"), []byte("visibility:hidden"), []byte("visibility: hidden")}
)

// countFold counts non-overlapping occurrences of an ASCII lower-case needle in b, in either case.
func countFold(b []byte, lower, upper string) int {
	return bytes.Count(b, []byte(lower)) + bytes.Count(b, []byte(upper))
}

// observe notes the shape of one text part's decoded bytes.
func (s *BodyShape) observe(b []byte, html bool) {
	if html {
		s.Links += countFold(b, "href=", "HREF=")
		s.Images += countFold(b, "<img", "<IMG")
		if !s.HiddenHTML {
			low := bytes.ToLower(b)
			for _, h := range hiddenHTML {
				if bytes.Contains(low, h) {
					s.HiddenHTML = true
					break
				}
			}
		}
	} else {
		s.Links += countFold(b, "http://", "HTTP://") + countFold(b, "https://", "HTTPS://")
	}
	if !s.ZeroWidth {
		for _, z := range zeroWidth {
			if bytes.Contains(b, []byte(z)) {
				s.ZeroWidth = true
				break
			}
		}
	}
}

// shapeFacts adds the route facts, and the shape facts when the body was read.
func (m *Message) shapeFacts(set func(k, v string)) {
	m.routeFacts(set)
	if !m.bodyRead {
		return
	}
	words := 0
	inWord := false
	for i := 0; i < len(m.Text); i++ {
		sp := m.Text[i] == ' '
		if !sp && !inWord {
			words++
		}
		inWord = !sp
	}
	set(FactShape, "links="+strconv.Itoa(m.Shape.Links)+",images="+strconv.Itoa(m.Shape.Images)+",words="+strconv.Itoa(words))
	var obf []string
	if m.Shape.ZeroWidth || containsAny(m.Subject, zeroWidth) {
		obf = append(obf, "zero-width")
	}
	if m.Shape.HiddenHTML {
		obf = append(obf, "hidden-html")
	}
	text := m.Subject + " " + truncate(m.Text, 2048)
	if mixedScript(text) {
		obf = append(obf, "mixed-script")
	}
	if spacedLetters(text) {
		obf = append(obf, "spaced-letters")
	}
	set(FactObfuscated, strings.Join(obf, ","))
}

// routeFacts adds the facts of the Received chain.
func (m *Message) routeFacts(set func(k, v string)) {
	var hops []string
	for _, f := range m.Fields {
		if strings.EqualFold(f.Key, "Received") {
			hops = append(hops, f.Value)
		}
	}
	var relays, origin []string
	first := true
	for i := len(hops) - 1; i >= 0; i-- { // oldest first
		from, by := receivedParts(hops[i])
		if from == "" && by == "" {
			continue
		}
		helo, rdns, ip := fromParts(from)
		if first && from != "" && !internalHop(helo, ip) {
			first = false
			origin = originKinds(helo, rdns, ip)
		}
		for _, h := range []string{helo, rdns, by} {
			if o := org(h); o != "" && !contains(relays, o) && len(relays) < 12 {
				relays = append(relays, o)
			}
		}
	}
	set(FactOrigin, strings.Join(origin, ","))
	set(FactRelays, strings.Join(relays, ","))
}

func containsAny(s string, subs []string) bool {
	for _, x := range subs {
		if strings.Contains(s, x) {
			return true
		}
	}
	return false
}

// receivedParts returns the "from" and "by" clauses of a Received value (RFC 5321 4.4).
func receivedParts(v string) (from, by string) {
	v = strings.TrimSpace(v)
	if i := strings.IndexByte(v, ';'); i >= 0 {
		v = v[:i]
	}
	low := strings.ToLower(v)
	// A hop starts with its from clause (RFC 5321 4.4); "(qmail 1 invoked from network)" and
	// "by host (Postfix, from userid 0)" are comments, not hops.
	fi := -1
	if strings.HasPrefix(low, "from ") {
		fi = 5
	}
	bi := strings.Index(low, " by ")
	if strings.HasPrefix(low, "by ") {
		bi = 0
	}
	if fi >= 0 {
		end := len(v)
		if bi > fi {
			end = bi
		}
		from = strings.TrimSpace(v[fi:end])
	}
	if bi >= 0 {
		rest := strings.Fields(v[bi+min(len(v)-bi, 3):])
		if len(rest) > 0 {
			by = strings.ToLower(rest[0])
		}
	}
	return from, by
}

// fromParts splits a Received "from" clause: "HELO (RDNS [IP])", "HELO ([IP])", "[IP]", "HELO",
// qmail's "unknown (HELO name) (IP)" and exim's "[IP] (helo=name)".
func fromParts(from string) (helo, rdns, ip string) {
	f := strings.Fields(strings.ToLower(from))
	if len(f) == 0 {
		return "", "", ""
	}
	helo = strings.Trim(f[0], "()")
	if strings.HasPrefix(helo, "[") {
		ip = strings.Trim(helo, "[]")
	}
	for i := 1; i < len(f); i++ {
		w := strings.Trim(f[i], "()")
		switch {
		case w == "helo" && i+1 < len(f): // qmail: the first word is the reverse name
			if f[0] != "unknown" {
				rdns = strings.Trim(f[0], "()")
			}
			helo = strings.Trim(f[i+1], "()")
			i++
		case strings.HasPrefix(w, "helo="): // exim
			if !strings.HasPrefix(f[0], "[") {
				rdns = strings.Trim(f[0], "()")
			}
			helo = strings.TrimPrefix(w, "helo=")
		case strings.HasPrefix(w, "[") && ip == "":
			ip = strings.Trim(w, "[]")
		case ip == "" && isIP(w):
			ip = w
		case rdns == "" && i == 1 && strings.HasPrefix(f[i], "(") && strings.Contains(w, ".") && !isIP(w):
			rdns = strings.TrimSuffix(w, ".")
			if k := strings.IndexByte(rdns, '@'); k >= 0 { // "(user@host)" ident
				rdns = rdns[k+1:]
			}
		}
	}
	if j := strings.IndexByte(ip, ']'); j >= 0 {
		ip = ip[:j]
	}
	return helo, rdns, ip
}

// internalHop reports a hop inside one network (loopback, private addresses, a local name):
// where a message entered the mail system is the first hop from outside.
func internalHop(helo, ip string) bool {
	if ip != "" {
		a, err := netip.ParseAddr(strings.TrimPrefix(ip, "ipv6:"))
		return err == nil && (a.IsLoopback() || a.IsPrivate() || a.IsLinkLocalUnicast())
	}
	return helo == "localhost" || helo == "localhost.localdomain"
}

// originKinds says what is odd about a first hop.
func originKinds(helo, rdns, ip string) []string {
	var out []string
	heloIP := strings.HasPrefix(helo, "[") || isIP(helo)
	if heloIP || (rdns == "" && ip != "" && !strings.Contains(helo, ".")) {
		out = append(out, "ip-literal")
	}
	for _, h := range []string{rdns, helo} {
		if h != "" && !isIP(strings.Trim(h, "[]")) && dynamicHost(h) {
			out = append(out, "dynamic")
			break
		}
	}
	if !heloIP && helo != "" && !strings.Contains(helo, ".") && helo != "localhost" && !contains(out, "ip-literal") {
		out = append(out, "bare-helo")
	}
	return out
}

func isIP(s string) bool {
	s = strings.TrimPrefix(strings.ToLower(s), "ipv6:")
	_, err := netip.ParseAddr(s)
	return err == nil
}

// dynamicWords name residential and dynamically assigned hosts in providers' reverse DNS.
var dynamicWords = []string{"dsl", "dhcp", "dyn", "dynamic", "pool", "cable", "ppp", "dialup", "dial-up", "dial", "broadband",
	"cust", "customer", "client", "clients", "host", "user", "users", "home", "res", "resnet", "static", "catv", "modem", "wireless"}

// dynamicHost reports a host name that looks residential: its first label (or two) holds the
// address's numbers ("c-1-2-3-4", "1-2-3-4.pool", "host123-45.isp") or a residential word.
func dynamicHost(h string) bool {
	labels := strings.Split(h, ".")
	if len(labels) < 3 {
		return false
	}
	digitsRuns := 0
	for _, l := range labels[:len(labels)-2] {
		runs := 0
		for _, part := range strings.FieldsFunc(l, func(r rune) bool { return r == '-' || r == '_' }) {
			if part != "" && strings.Trim(part, "0123456789") == "" {
				runs++
			}
			w := strings.TrimRight(part, "0123456789")
			if w != part && contains(dynamicWords, w) {
				return true
			}
			if contains(dynamicWords, part) && len(labels) >= 4 {
				return true
			}
		}
		digitsRuns += runs
	}
	return digitsRuns >= 3
}

// org is a host name's last two labels, "" for addresses and names without a dot.
func org(h string) string {
	h = strings.TrimSuffix(strings.Trim(strings.ToLower(h), "[]()"), ".")
	if h == "" || isIP(h) || !strings.Contains(h, ".") || strings.ContainsAny(h, "@/:") {
		return ""
	}
	parts := strings.Split(h, ".")
	return strings.Join(parts[len(parts)-2:], ".")
}

// mixedScript reports a word that mixes Latin letters with Cyrillic or Greek ones: look-alike
// letters put in to hide a word from filters ("Pаypal" with a Cyrillic а).
func mixedScript(s string) bool {
	latin, other := false, false
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		i += n
		switch {
		case r < utf8.RuneSelf && (r|0x20 >= 'a' && r|0x20 <= 'z'):
			latin = true
		case r >= 0x370 && (unicode.Is(unicode.Cyrillic, r) || unicode.Is(unicode.Greek, r)):
			other = true
		case unicode.IsLetter(r) || unicode.IsDigit(r):
		default:
			latin, other = false, false
			continue
		}
		if latin && other {
			return true
		}
	}
	return false
}

// spacedLetters reports a run of five or more single letters each followed by one separator
// (space, dot, dash, star, underscore): "F R E E", "V.I.A.G.R.A". Initials ("J. R. R.") are
// three or four.
func spacedLetters(s string) bool {
	run := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		isLetter := c|0x20 >= 'a' && c|0x20 <= 'z'
		prevSep := i == 0 || isSep(s[i-1])
		nextSep := i+1 >= len(s) || isSep(s[i+1])
		switch {
		case isLetter && prevSep && nextSep:
			run++
			if run >= 5 {
				return true
			}
			if i+1 < len(s) {
				i++ // skip the separator
			}
		case isLetter:
			run = 0
		case c == ' ' && run > 0:
			// a second separator ends the run
			run = 0
		}
	}
	return false
}

func isSep(c byte) bool { return c == ' ' || c == '.' || c == '-' || c == '*' || c == '_' }
