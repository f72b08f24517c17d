// Package corpus generates a labelled mailbox for measuring how svc classifies mail: personal
// threads, the owner's sent mail, work mail, discussion lists of several kinds, code-host and
// service notifications, transactional mail, newsletters and marketing, and spam in many styles,
// written the way real clients and platforms write them (their header fields, MIME shapes,
// charsets, and their defects: raw 8-bit headers, broken dates, missing Message-IDs), with
// plenty of cases a person would hesitate over.
//
// Each message carries the label a careful person would give it. The generator is written from
// how mail is written, not from svc's rules; it is deterministic for a seed.
package corpus

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"time"
)

// Label is what a message is to the person who keeps it.
type Label string

// Labels.
const (
	Conversation  Label = "conversation"  // people writing to each other (personal, work, discussion lists, code review)
	Transactional Label = "transactional" // receipts, orders, shipping, statements, bookings, tickets, security notices, contracts
	Marketing     Label = "marketing"     // bulk marketing and newsletters
	Junk          Label = "junk"          // spam and scams
	Notification  Label = "notification"  // automated notices that are none of the above (CI, alerts, social pings)
)

// Labels lists every label.
var Labels = []Label{Conversation, Transactional, Marketing, Junk, Notification}

// Message is one generated message.
type Message struct {
	Raw    []byte
	Label  Label
	Kind   string // what generated it ("personal-reply", "mailman", "phish-bank", ...)
	Folder string // "" for the inbox, else "Sent" or "Junk"
	Flags  string // Maildir flags ("S" seen)
	Date   time.Time
}

// Owner is the mailbox owner's address.
const Owner = "sam.rivera@example.com"

type gen struct {
	r     *rand.Rand
	epoch time.Time
	i     int
	// threads the owner is in: subject and root id, so that replies and sent mail share them.
	threads []thread
}

type thread struct {
	subject, root, with string
	withName            string
}

// Generate returns n messages for a seed, dated in the ten years before epoch.
func Generate(seed uint64, n int, epoch time.Time) []Message {
	g := &gen{r: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), epoch: epoch}
	out := make([]Message, 0, n)
	for g.i = 0; g.i < n; g.i++ {
		out = append(out, g.next())
	}
	return out
}

// Mix: what share of a mailbox each kind of mail is, roughly the mailbox the issue describes
// (mostly list discussion, plus newsletters, commercial mail and spam).
func (g *gen) next() Message {
	switch c := g.r.IntN(1000); {
	case c < 90:
		return g.personal()
	case c < 140:
		return g.sent()
	case c < 190:
		return g.work()
	case c < 330:
		return g.discussionList()
	case c < 380:
		return g.codeHostComment()
	case c < 530:
		return g.transactional()
	case c < 760:
		return g.marketing()
	case c < 900:
		return g.junk()
	default:
		return g.notification()
	}
}

func (g *gen) pick(xs []string) string { return xs[g.r.IntN(len(xs))] }
func (g *gen) chance(pct int) bool     { return g.r.IntN(100) < pct }

func (g *gen) date() time.Time {
	var age time.Duration
	if g.chance(25) {
		age = time.Duration(g.r.IntN(60*24*60)) * time.Minute
	} else {
		age = time.Duration(g.r.Int64N(int64(10 * 365 * 24 * time.Hour)))
	}
	zones := []int{0, -5, -8, 1, 2, 9, 5, -3}
	loc := time.FixedZone("", zones[g.r.IntN(len(zones))]*3600)
	return g.epoch.Add(-age).In(loc).Truncate(time.Second)
}

func (g *gen) msgID(domain string) string {
	switch g.r.IntN(4) {
	case 0:
		return fmt.Sprintf("<%d.%d.JavaMail.%s@%s>", g.r.Int64N(1e12), g.i, g.pick([]string{"root", "app", "mail"}), domain)
	case 1:
		return fmt.Sprintf("<CA%s+%x@mail.%s>", strings.ToUpper(fmt.Sprintf("%x", g.r.Uint64())), g.r.Uint32(), domain)
	case 2:
		return fmt.Sprintf("<%08X-%04X-%04X-%012X@%s>", g.r.Uint32(), g.r.IntN(65536), g.r.IntN(65536), g.r.Int64N(1<<48), domain)
	}
	return fmt.Sprintf("<%x.%d@%s>", g.r.Uint64(), g.i, domain)
}

// person is a name and an address, written as the person's client writes them.
type person struct{ name, addr string }

var (
	firstNames = []string{"Maria", "James", "Aisha", "Wei", "Olga", "Liam", "Sofía", "Björn", "Zoë", "Łukasz", "Dmitri", "Priya", "Hiroshi", "Chloé", "Mateus", "Fatima", "Noah", "Ingrid", "José", "Amara", "Tomás", "Nguyễn", "Yuki", "Emma", "Ravi", "François", "Kwame", "Ana", "Søren", "Elif"}
	lastNames  = []string{"Lopez", "Smith", "Okafor", "Zhang", "Petrova", "Murphy", "García", "Lindqvist", "Dubois", "Kowalski", "Ivanov", "Sharma", "Tanaka", "Moreau", "Silva", "Haddad", "Brown", "Berg", "Müller", "Mensah", "Ortega", "Van", "Sato", "Jensen", "Rao", "Lefèvre", "Boateng", "Costa", "Nielsen", "Yılmaz"}
	personal   = []string{"gmail.com", "yahoo.com", "outlook.com", "icloud.com", "hotmail.com", "gmx.de", "free.fr", "proton.me", "posteo.de", "fastmail.com", "web.de", "orange.fr"}
	workDoms   = []string{"acme-corp.com", "example.com", "northwind.io", "contoso.org", "initech.net", "globex.co.uk"}
)

func asciiFold(s string) string {
	r := strings.NewReplacer("á", "a", "é", "e", "í", "i", "ó", "o", "ú", "u", "ö", "o", "ë", "e", "ø", "o", "Ł", "L", "ł", "l", "ç", "c", "ñ", "n", "ü", "u", "ễ", "e", "ı", "i", "è", "e", "ã", "a", "Ø", "O", "Ö", "O")
	return strings.ToLower(r.Replace(s))
}

func (g *gen) person(domains []string) person {
	f, l := g.pick(firstNames), g.pick(lastNames)
	d := g.pick(domains)
	var local string
	switch g.r.IntN(4) {
	case 0:
		local = asciiFold(f) + "." + asciiFold(l)
	case 1:
		local = asciiFold(f[:1] + l)
	case 2:
		local = asciiFold(f) + fmt.Sprint(g.r.IntN(99))
	default:
		local = asciiFold(f) + "_" + asciiFold(l)
	}
	return person{f + " " + l, local + "@" + d}
}

// from writes a From field the ways clients do: quoted or bare names, encoded words, or raw
// 8-bit bytes (about 1 in 130 real messages).
func (g *gen) fromField(h *header, p person, charset string) {
	switch {
	case !ascii(p.name) && g.chance(6):
		h.addRaw("From", latin1(p.name)+" <"+p.addr+">")
	case !ascii(p.name):
		h.add("From", encodeWord(p.name, charset, g.chance(50))+" <"+p.addr+">")
	case g.chance(30):
		h.add("From", fmt.Sprintf("%q <%s>", p.name, p.addr))
	case g.chance(10):
		h.add("From", p.addr+" ("+p.name+")")
	default:
		h.add("From", p.name+" <"+p.addr+">")
	}
}

// common adds what every message has: Received, Date (sometimes broken), Message-ID (sometimes
// missing), To.
func (g *gen) common(h *header, d time.Time, domain, to string) {
	h.add("Received", fmt.Sprintf("from mail.%s (mail.%s [198.51.100.%d]) by mx.example.com with ESMTPS id %x for <%s>; %s",
		domain, domain, g.r.IntN(250), g.r.Uint32(), Owner, rfc1123(d.Add(time.Duration(g.r.IntN(90))*time.Second))))
	switch {
	case g.chance(3):
		h.add("Date", d.Format("Mon, 2 Jan 2006 15:04:05 MST")) // a zone name
	case g.chance(2):
		h.add("Date", d.Format("2006-01-02 15:04:05")) // no zone, not RFC 5322
	case g.chance(1):
		h.add("Date", "Invalid Date")
	default:
		h.add("Date", rfc1123(d))
	}
	if !g.chance(3) {
		h.add("Message-ID", g.msgID(domain))
	}
	if to != "" {
		h.add("To", to)
	}
}

func (g *gen) charset() string {
	switch c := g.r.IntN(100); {
	case c < 70:
		return "utf-8"
	case c < 88:
		return "iso-8859-1"
	case c < 93:
		return "windows-1252"
	case c < 97:
		return "koi8-r"
	}
	return "iso-2022-jp"
}

func (g *gen) cte(charset string) string {
	if charset == "iso-2022-jp" {
		return "7bit"
	}
	switch g.r.IntN(4) {
	case 0:
		return "quoted-printable"
	case 1:
		return "base64"
	case 2:
		if charset == "utf-8" {
			return "8bit"
		}
	}
	return "quoted-printable"
}

func (g *gen) nl() string {
	if g.chance(60) {
		return "\n"
	}
	return "\r\n"
}

func domainOf(addr string) string { return addr[strings.LastIndexByte(addr, '@')+1:] }

func (g *gen) msg(h *header, body part, label Label, kind, folder string, d time.Time) Message {
	flags := "S"
	if g.chance(15) {
		flags = ""
	}
	return Message{Raw: render(h, body, g.nl()), Label: label, Kind: kind, Folder: folder, Flags: flags, Date: d}
}

// clientBody is a person's text as their client sends it: plain, or plain and HTML.
func (g *gen) clientBody(text, charset string) part {
	cte := g.cte(charset)
	if charset == "koi8-r" || charset == "iso-2022-jp" {
		charset = "utf-8"
	}
	plain := textPart("plain", text, charset, cte)
	if g.chance(55) {
		html := "<div dir=\"ltr\">" + strings.ReplaceAll(htmlEscape(text), "\n", "<br>") + "</div>"
		return multipart("alternative", fmt.Sprintf("000000000000%x", g.r.Uint64()), plain, textPart("html", html, charset, cte))
	}
	return plain
}

func htmlEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}

func (g *gen) withAttachments(body part, names ...string) part {
	if len(names) == 0 {
		return body
	}
	parts := []part{body}
	for _, n := range names {
		ct := "application/octet-stream"
		switch {
		case strings.HasSuffix(n, ".pdf"):
			ct = "application/pdf"
		case strings.HasSuffix(n, ".jpg"):
			ct = "image/jpeg"
		case strings.HasSuffix(n, ".docx"):
			ct = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
		case strings.HasSuffix(n, ".ics"):
			ct = "text/calendar"
		case strings.HasSuffix(n, ".html"), strings.HasSuffix(n, ".htm"):
			ct = "text/html"
		case strings.HasSuffix(n, ".zip"):
			ct = "application/zip"
		}
		parts = append(parts, attachment(ct, n, 600+g.r.IntN(6000), g.chance(40), byte(g.r.IntN(256))))
	}
	return multipart("mixed", fmt.Sprintf("----=_Part_%d_%d", g.r.IntN(1e6), g.i), parts...)
}
