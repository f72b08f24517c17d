package mail

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"mime"
	nettextproto "net/textproto"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/emersion/go-message"
	_ "github.com/emersion/go-message/charset" // registers every charset with go-message
	"github.com/emersion/go-message/textproto"
)

// Limits of what Read looks at. A message is never rejected for passing them: what lies beyond is
// simply not read (its content stays intact at the provider and in the vault).
const (
	// MaxHeaderBytes is how much of a header block is read.
	MaxHeaderBytes = 256 << 10
	// MaxBodyScan is how much of the body is read looking for text and attachment names: a
	// listing reads this much of every message, so a large attachment's bytes are mostly not
	// read (names of attachments past it are not seen).
	MaxBodyScan = 256 << 10
	// MaxTextBytes is how much body text a Message keeps.
	MaxTextBytes = 16 << 10
	maxParts     = 100
)

// Address is a mailbox: a display name (decoded, possibly empty) and an address.
type Address struct {
	Name string
	Addr string // as written, without angle brackets; "" when none could be found
}

// String returns the address in the form people read: `Name <addr>`, or the bare address.
func (a Address) String() string {
	switch {
	case a.Name == "":
		return a.Addr
	case a.Addr == "":
		return a.Name
	}
	return a.Name + " <" + a.Addr + ">"
}

// Field is one header field, its value decoded to UTF-8 and unfolded.
type Field struct {
	Key   string // canonical form ("List-Id")
	Value string
}

// Attachment is a part of a message that is a file rather than its text.
type Attachment struct {
	Name     string // decoded file name; "" when the part names none
	MIMEType string
}

// Message is what Read found in a message. Every string is valid UTF-8.
type Message struct {
	// Fields are every header field in order, duplicates included.
	Fields []Field

	From            Address
	ReplyTo, To, Cc []Address
	Subject         string
	Date            time.Time // UTC; zero when no date could be read
	MessageID       string    // without angle brackets; "" when missing
	InReplyTo       string    // the first id, without angle brackets
	References      []string  // without angle brackets

	ListID, ListPost, ListUnsubscribe string
	ListUnsubscribePost               bool // List-Unsubscribe-Post: List-Unsubscribe=One-Click

	// MIMEType is the top-level media type ("multipart/alternative"); text/plain when unset.
	MIMEType string
	// Text is the start of the message's text (its first text/plain part, else its first
	// text/html part as text), whitespace collapsed, at most MaxTextBytes.
	Text        string
	Attachments []Attachment
	// Shape is what the reader saw of the body's links, images and hidden text (FactShape,
	// FactObfuscated).
	Shape BodyShape
	// bodyRead is set when the body was walked (Read, not ReadHeader): the shape facts need it.
	bodyRead bool

	// Problems says what was not as the standards want it and how it was read anyway ("raw
	// 8-bit Subject read as windows-1252", "Date "yesterday" unreadable").
	Problems []string
	// Unreadable is set when nothing of the message could be read (empty, binary, no header);
	// it says why.
	Unreadable string
}

// Get returns the first value of a header field, or "".
func (m *Message) Get(key string) string {
	for _, f := range m.Fields {
		if strings.EqualFold(f.Key, key) {
			return f.Value
		}
	}
	return ""
}

// Has reports whether the message has a header field.
func (m *Message) Has(key string) bool {
	for _, f := range m.Fields {
		if strings.EqualFold(f.Key, key) {
			return true
		}
	}
	return false
}

// ThreadID names the message's thread: the first id of References, else In-Reply-To, else the
// message's own id, in angle brackets; "" when the message has none of them.
func (m *Message) ThreadID() string {
	switch {
	case len(m.References) > 0:
		return "<" + m.References[0] + ">"
	case m.InReplyTo != "":
		return "<" + m.InReplyTo + ">"
	case m.MessageID != "":
		return "<" + m.MessageID + ">"
	}
	return ""
}

// Snippet returns at most n bytes of the start of the text, cut at a rune boundary.
func (m *Message) Snippet(n int) string { return truncate(m.Text, n) }

func (m *Message) problem(format string, args ...any) {
	if len(m.Problems) < 20 {
		m.Problems = append(m.Problems, truncate(clean(fmt.Sprintf(format, args...)), 200))
	}
}

// Read reads a message. It never fails and never returns nil: a message that cannot be read at
// all comes back with Unreadable set. It reads at most MaxHeaderBytes of header and MaxBodyScan
// of body.
func Read(r io.Reader) *Message {
	m := &Message{MIMEType: "text/plain"}
	lim := &limitReader{r: r, n: MaxHeaderBytes + MaxBodyScan}
	br := bufio.NewReaderSize(lim, 16<<10)
	h, n, err := readHeader(br, m)
	if err != nil {
		m.Unreadable = "could not be read: " + clean(err.Error())
		return m
	}
	if len(h.raw) == 0 {
		switch rest, _ := br.Peek(1); {
		case n == 0 && len(rest) == 0:
			m.Unreadable = "empty"
		default:
			m.Unreadable = "no header fields: not an RFC 5322 message"
		}
		return m
	}
	cs := readBody(h.mime, br, lim, m)
	decodeHeader(h, cs, m)
	return m
}

// ReadHeader reads only a message's header block: what Read finds there, without walking the
// body (Text and Attachments stay empty, so the facts of the body are absent). It is for callers
// that need a message's headers but not its classification signals, such as a fetch: a few
// microseconds where Read spends tens on the MIME tree. Raw 8-bit header bytes are decoded with
// the charset the top-level Content-Type declares, else as Windows-1252 (Read also looks for a
// declared charset in the parts, so the two can differ on a multipart message with raw 8-bit
// headers in a charset other than Windows-1252). It never fails and never returns nil.
func ReadHeader(b []byte) *Message {
	m := &Message{MIMEType: "text/plain"}
	// readHeader stops at the blank line and after MaxHeaderBytes by itself; it is given only
	// the bytes up to the first line that is surely blank (the header block ends there or
	// before), so that its buffer is the header's size, not the message's.
	head := b
	if k := headerEnd(b); k >= 0 {
		head = b[:k]
	}
	br := bufio.NewReaderSize(bytes.NewReader(head), min(max(len(head), 16), 16<<10))
	h, n, err := readHeader(br, m)
	if err != nil {
		m.Unreadable = "could not be read: " + clean(err.Error())
		return m
	}
	if len(h.raw) == 0 {
		if n == 0 && len(b) == 0 {
			m.Unreadable = "empty"
		} else {
			m.Unreadable = "no header fields: not an RFC 5322 message"
		}
		return m
	}
	declared := ""
	mh := message.Header{Header: h.mime}
	if t, params, err := mh.ContentType(); err == nil && t != "" {
		m.MIMEType = t
		if cs := strings.ToLower(params["charset"]); cs != "" && cs != "us-ascii" && !strings.HasPrefix(cs, "utf") {
			declared = cs
		}
	} else if h.mime.Has("Content-Type") {
		m.problem("Content-Type %q unreadable, read as text/plain", truncate(h.mime.Get("Content-Type"), 60))
	}
	decodeHeader(h, declared, m)
	return m
}

// headerEnd returns the length of b up to and including its first empty line ("\n\n" or
// "\n\r\n"), or -1 when it has none.
func headerEnd(b []byte) int {
	end := -1
	if k := bytes.Index(b, []byte("\n\n")); k >= 0 {
		end = k + 2
	}
	if k := bytes.Index(b, []byte("\n\r\n")); k >= 0 && (end < 0 || k+3 < end) {
		end = k + 3
	}
	return end
}

// limitReader is io.LimitReader that remembers whether the limit cut the input.
type limitReader struct {
	r   io.Reader
	n   int64
	cut bool
}

func (l *limitReader) Read(p []byte) (int, error) {
	if l.n <= 0 {
		l.cut = true
		return 0, io.EOF
	}
	if int64(len(p)) > l.n {
		p = p[:l.n]
	}
	n, err := l.r.Read(p)
	l.n -= int64(n)
	return n, err
}

// header is a message's header as readHeader reads it: each well-formed field as written, in
// order, and the MIME fields (Content-*) in go-message's form, which is all go-message and the
// readers of parts look at.
type header struct {
	raw   [][]byte // each field's lines, each ending in CRLF
	mime  textproto.Header
	block []byte // the fields one after another, then an empty line
}

// get returns the first value of a field, as go-message's header would, or "".
func (h *header) get(key string) string {
	key = nettextproto.CanonicalMIMEHeaderKey(key)
	for _, f := range h.raw {
		if k, v := fieldKV(f); k == key {
			return v
		}
	}
	return ""
}

// fieldKV returns a well-formed field's key and value as go-message reads them: the key
// canonical, the value's lines trimmed and joined by spaces.
func fieldKV(f []byte) (string, string) {
	colon := bytes.IndexByte(f, ':')
	kb := trimSpaceTab(f[:colon])
	k, ok := commonKeys[string(kb)] // no copy of the key to look it up
	if !ok {
		k = nettextproto.CanonicalMIMEHeaderKey(string(kb))
	}
	return k, unfold(f[colon+1:])
}

// commonKeys are the canonical forms of the field names nearly every message carries, as they
// are usually spelled, so that reading them allocates no key.
var commonKeys = func() map[string]string {
	ks := map[string]string{}
	for _, k := range []string{"From", "To", "Cc", "Subject", "Date", "Message-ID", "Message-Id", "Reply-To", "In-Reply-To",
		"References", "Received", "Return-Path", "MIME-Version", "Mime-Version", "Content-Type", "Content-Transfer-Encoding",
		"Content-Disposition", "List-Unsubscribe", "List-Unsubscribe-Post", "List-Id", "List-ID", "List-Post", "DKIM-Signature",
		"Authentication-Results", "X-Mailer", "Precedence", "Sender", "Delivered-To", "Auto-Submitted", "X-Spam-Flag", "X-Spam-Status"} {
		ks[k] = nettextproto.CanonicalMIMEHeaderKey(k)
	}
	return ks
}()

// unfold is go-message's trimAroundNewlines: each line without its CR and the spaces and tabs
// around it, the non-empty ones joined by single spaces.
func unfold(v []byte) string {
	var b strings.Builder
	b.Grow(len(v))
	for len(v) > 0 {
		l := v
		if i := bytes.IndexByte(v, '\n'); i >= 0 {
			l, v = v[:i], v[i+1:]
		} else {
			v = nil
		}
		l = trimSpaceTab(bytes.TrimSuffix(l, []byte("\r")))
		if len(l) == 0 {
			continue
		}
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.Write(l)
	}
	return b.String()
}

func trimSpaceTab(b []byte) []byte { return bytes.Trim(b, " \t") }

// hasPrefixFold reports whether b starts with prefix (lowercase ASCII), ASCII case ignored.
func hasPrefixFold(b []byte, prefix string) bool {
	if len(b) < len(prefix) {
		return false
	}
	for i := 0; i < len(prefix); i++ {
		if c := b[i]; c != prefix[i] && ('A' > c || c > 'Z' || c+'a'-'A' != prefix[i]) {
			return false
		}
	}
	return true
}

// readHeader reads the header block leniently: a line that is neither a field nor a
// continuation (an mbox From_ line, garbage) is skipped, not fatal. It returns the fields and
// the number of bytes read.
func readHeader(br *bufio.Reader, m *Message) (header, int, error) {
	return readHeaderInto(br, m, nil)
}

// readHeaderInto is readHeader with the fields kept in block's memory (appended to block[:0]);
// the caller may reuse it once it no longer reads the header.
func readHeaderInto(br *bufio.Reader, m *Message, block []byte) (header, int, error) {
	block = block[:0]
	// The well-formed fields as go-message reads one (its lines, each ending in CRLF), one
	// after another in one buffer: spans holds where each starts and ends, and the current
	// field, open while its continuation lines come, is the buffer's tail from open.
	spans := make([][2]int, 0, 32)
	open := -1
	total := 0
	flush := func() {
		if open >= 0 {
			spans = append(spans, [2]int{open, len(block)})
			open = -1
		}
	}
	done := func() (header, int, error) {
		flush()
		h := header{raw: make([][]byte, len(spans))}
		for i, sp := range spans {
			h.raw[i] = block[sp[0]:sp[1]:sp[1]]
		}
		h.block = append(block, '\r', '\n') // past every field's capacity: none is changed
		// The fields are well-formed, so the MIME ones go into go-message's header as they
		// are, as textproto.ReadHeader would put them (it keeps them last first); the others
		// are only ever read by decodeFields, which reads them from raw. Parsing the block a
		// second time with ReadHeader, then building go-message's header of every field, were
		// each a tenth of a message's reading.
		for i := len(h.raw) - 1; i >= 0; i-- {
			if f := h.raw[i]; len(f) > len("content-") && hasPrefixFold(f, "content-") {
				h.mime.AddRaw(f)
			}
		}
		return h, total, nil
	}
	for first := true; ; first = false {
		line, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			// An over-long line: keep its start, drop the rest.
			line = append([]byte(nil), line...)
			for errors.Is(err, bufio.ErrBufferFull) {
				var more []byte
				more, err = br.ReadSlice('\n')
				total += len(more)
			}
			m.problem("header line over %d bytes cut", len(line))
		}
		total += len(line)
		if err != nil && err != io.EOF {
			return header{}, total, err
		}
		body := bytes.TrimRight(line, "\r\n")
		switch {
		case len(body) == 0: // the blank line before the body, or the end
			return done()
		case first && bytes.HasPrefix(body, []byte("From ")):
			// An mbox separator left in a stored message.
		case body[0] == ' ' || body[0] == '\t':
			if open >= 0 {
				block = append(append(block, body...), '\r', '\n')
			} else {
				m.problem("continuation line without a field skipped")
			}
		case validKey(body):
			flush()
			if block == nil {
				block = make([]byte, 0, 1<<10)
			}
			open = len(block)
			block = append(append(block, body...), '\r', '\n')
		default:
			flush()
			m.problem("malformed header line %q skipped", truncate(string(body), 60))
		}
		if err == io.EOF {
			return done()
		}
		if total > MaxHeaderBytes {
			m.problem("header over %d bytes: the rest skipped", MaxHeaderBytes)
			return done()
		}
	}
}

// validKey reports whether a line starts with a field name (printable ASCII but colon, RFC
// 5322 2.2) followed by a colon; spaces before the colon, which some clients write, are allowed.
func validKey(line []byte) bool {
	i := bytes.IndexByte(line, ':')
	if i <= 0 {
		return false
	}
	k := bytes.TrimRight(line[:i], " \t")
	if len(k) == 0 {
		return false
	}
	for _, c := range k {
		if c < 33 || c > 126 {
			return false
		}
	}
	return true
}

// readBody walks the MIME tree for text and attachment names. It returns the charset the
// message declares for its text, which decodes raw 8-bit header bytes.
func readBody(h textproto.Header, br *bufio.Reader, lim *limitReader, m *Message) string {
	m.bodyRead = true
	mh := message.Header{Header: h}
	if t, _, err := mh.ContentType(); err == nil && t != "" {
		m.MIMEType = t
	} else if h.Has("Content-Type") {
		m.problem("Content-Type %q unreadable, read as text/plain", truncate(h.Get("Content-Type"), 60))
	}
	e, err := message.New(mh, br)
	if err != nil && e == nil {
		m.problem("body unreadable: %v", err)
		return ""
	}
	var plain, html, declared string
	parts := 0
	walkErr := e.Walk(func(path []int, p *message.Entity, err error) error {
		if parts++; parts > maxParts {
			return errStop
		}
		if err != nil && !lim.cut {
			m.problem("part %v: %v", path, err)
		}
		t, params, err := p.Header.ContentType()
		if err != nil {
			if _, _, perr := mime.ParseMediaType(t); t == "" || perr != nil {
				// Unreadable (raw bytes, no subtype): RFC 2045's default applies.
				t, params = "", nil
				if len(path) > 0 { // the top level's is reported by readBody already
					m.problem("part %v: Content-Type %q unreadable, read as text/plain", path, truncate(p.Header.Get("Content-Type"), 60))
				}
			}
		}
		if t == "" {
			t = "text/plain"
		}
		if strings.HasPrefix(t, "multipart/") {
			return nil
		}
		disp, dparams, _ := p.Header.ContentDisposition()
		name := dparams["filename"]
		if name == "" {
			name = params["name"]
		}
		if name == "" {
			name = extParam(p.Header.Get("Content-Disposition"), "filename")
		}
		if name == "" {
			name = extParam(p.Header.Get("Content-Type"), "name")
		}
		if strings.HasPrefix(t, "text/") && declared == "" {
			if cs := strings.ToLower(params["charset"]); cs != "" && cs != "us-ascii" && !strings.HasPrefix(cs, "utf") {
				declared = cs
			}
		}
		isText := (t == "text/plain" || t == "text/html") && !strings.EqualFold(disp, "attachment")
		if !isText {
			if len(m.Attachments) < 50 {
				m.Attachments = append(m.Attachments, Attachment{Name: decodeWords(name, declared), MIMEType: t})
			}
			return nil
		}
		if (t == "text/plain" && plain == "") || (t == "text/html" && html == "") {
			b, _ := io.ReadAll(io.LimitReader(p.Body, 4*MaxTextBytes))
			m.Shape.observe(b, t == "text/html")
			s := toUTF8(b, "")
			if t == "text/plain" {
				plain = collapse(s)
			} else {
				html = collapse(htmlText(s))
			}
		}
		return nil
	})
	if walkErr != nil && walkErr != errStop && !lim.cut && !errors.Is(walkErr, io.ErrUnexpectedEOF) {
		m.problem("MIME structure: %v", walkErr)
	}
	m.Text = plain
	if m.Text == "" {
		m.Text = html
	}
	m.Text = truncate(m.Text, MaxTextBytes)
	return declared
}

var errStop = errors.New("enough parts")

// collapse turns runs of white space into one space and drops control characters.
func collapse(s string) string {
	if collapsed(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
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
	return strings.TrimSpace(b.String())
}

// collapsed reports whether collapse would return s as it is: printable ASCII, single spaces
// between words, none at either end (most lines of text are; they need no copy).
func collapsed(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c >= 0x7f || (c == ' ' && (i == 0 || i == len(s)-1 || s[i-1] == ' ')) {
			return false
		}
	}
	return true
}

// clean makes s valid UTF-8 without control characters.
func clean(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if !strings.ContainsFunc(s, isControl) {
		return s
	}
	return strings.Map(func(r rune) rune {
		if isControl(r) {
			return ' '
		}
		return r
	}, s)
}

func isControl(r rune) bool { return r < 0x20 || r == 0x7f }

// truncate cuts s to at most n bytes at a rune boundary.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
