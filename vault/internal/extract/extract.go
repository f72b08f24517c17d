// Package extract pulls searchable text out of content at commit time:
// the text/plain part of a message (message/rfc822), or its text/html part
// stripped of markup when there is no plain part; HTML documents stripped
// of markup; and other text/* documents as they are (the content is its own
// text, so nothing is copied).
//
// Extraction reads a stream once and keeps at most a limit of text in
// memory, so its cost does not grow with the content beyond one pass.
package extract

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"html"
	"io"
	"mime"
	"mime/multipart"
	"mime/quotedprintable"
	"net/mail"
	"path"
	"strings"
	"sync"
	"unicode/utf8"
)

// Mode says how to get the text of some content.
type Mode int

const (
	// None: the content has no text to extract.
	None Mode = iota
	// Self: the content is text (text/plain, text/csv, ...) and is its own
	// extracted text.
	Self
	// HTML: an HTML document, stripped of markup.
	HTML
	// Message: an RFC 5322 message; its plain (or stripped HTML) body.
	Message
)

// ModeOf chooses the mode from a MIME type, falling back on the provider's
// kind ("message") and the name's extension when the type is absent.
func ModeOf(mimeType, kind, name string) Mode {
	mt := ""
	if mimeType != "" {
		if t, _, err := mime.ParseMediaType(mimeType); err == nil {
			mt = t
		} else {
			mt = strings.ToLower(strings.TrimSpace(strings.Split(mimeType, ";")[0]))
		}
	}
	if mt == "" || mt == "application/octet-stream" {
		switch strings.ToLower(path.Ext(name)) {
		case ".eml":
			mt = "message/rfc822"
		case ".html", ".htm":
			mt = "text/html"
		case ".txt", ".md", ".csv":
			mt = "text/plain"
		}
		if kind == "message" {
			mt = "message/rfc822"
		}
	}
	switch {
	case mt == "message/rfc822":
		return Message
	case mt == "text/html" || mt == "application/xhtml+xml":
		return HTML
	case strings.HasPrefix(mt, "text/"):
		return Self
	}
	return None
}

// Text extracts the text of r in mode HTML or Message, at most limit bytes
// of UTF-8. It does not read r to the end once it has what it needs; the
// caller drains r if it must. ok is false when there is no text (a message
// with neither a plain nor an HTML part).
func Text(mode Mode, r io.Reader, limit int) (text []byte, ok bool, err error) {
	switch mode {
	case HTML:
		var out bytes.Buffer
		err := StripHTML(&limitWriter{w: &out, n: limit}, r)
		if err == errLimit {
			err = nil
		}
		return out.Bytes(), err == nil, err
	case Message:
		return message(r, limit)
	}
	return nil, false, nil
}

var errLimit = io.ErrShortWrite

// Body reports where the text of a message held in memory is found in it
// verbatim: when the message is one text/plain part with no transfer encoding,
// in UTF-8 (or US-ASCII, or no charset named), whose body is valid UTF-8 of at
// most limit bytes, the text Text would extract is exactly msg[from:] (and
// empty bodies have no text). ok is false otherwise: the text must be
// extracted (Text) and kept apart. It reads the header in place, without
// copying it, and says no to any header line net/mail might read otherwise (a
// bare CR, a line without a colon, a folded first line).
func Body(msg []byte, limit int) (from int, ok bool) {
	var ct, cte []byte
	var field *[]byte // the field being read, when it is one of those two
	var ctSeen, cteSeen bool
	for i := 0; ; {
		first := i == 0
		end := bytes.IndexByte(msg[i:], '\n')
		if end < 0 {
			return 0, false // no end of header
		}
		line := msg[i : i+end]
		i += end + 1
		line = bytes.TrimSuffix(line, []byte("\r"))
		if bytes.IndexByte(line, '\r') >= 0 {
			return 0, false
		}
		if len(line) == 0 {
			from = i
			break
		}
		if line[0] == ' ' || line[0] == '\t' { // a continuation
			if first {
				return 0, false // of nothing
			}
			if field != nil {
				if v := bytes.Trim(line, " \t"); len(v) > 0 {
					*field = append(append(*field, ' '), v...)
				}
			}
			continue
		}
		k, v, found := bytes.Cut(line, []byte(":"))
		if !found {
			return 0, false
		}
		field = nil
		switch {
		case bytes.EqualFold(k, []byte("Content-Type")) && !ctSeen:
			ctSeen, field = true, &ct
		case bytes.EqualFold(k, []byte("Content-Transfer-Encoding")) && !cteSeen:
			cteSeen, field = true, &cte
		}
		if field != nil {
			*field = append([]byte(nil), bytes.Trim(v, " \t")...)
		}
	}
	ctype := strings.TrimSpace(string(ct))
	if ctype == "" {
		ctype = "text/plain; charset=us-ascii"
	}
	mt, params, err := mime.ParseMediaType(ctype)
	if err != nil || mt != "text/plain" {
		return 0, false
	}
	switch strings.ToLower(strings.TrimSpace(string(cte))) {
	case "", "7bit", "8bit", "binary":
	default:
		return 0, false
	}
	switch strings.ToLower(strings.TrimSpace(params["charset"])) {
	case "", "utf-8", "utf8", "us-ascii", "ascii":
	default:
		return 0, false
	}
	body := msg[from:]
	if len(body) == 0 || len(body) > limit || !utf8.Valid(body) {
		return 0, false
	}
	return from, true
}

// limitWriter accepts up to n bytes, then fails with errLimit, cutting at a
// UTF-8 boundary.
type limitWriter struct {
	w io.Writer
	n int
}

func (l *limitWriter) Write(p []byte) (int, error) {
	if len(p) <= l.n {
		l.n -= len(p)
		return l.w.Write(p)
	}
	cut := l.n
	for cut > 0 && !utf8.RuneStart(p[cut]) {
		cut--
	}
	l.n = 0
	l.w.Write(p[:cut])
	return cut, errLimit
}

func message(r io.Reader, limit int) ([]byte, bool, error) {
	msg, err := mail.ReadMessage(bufio.NewReader(r))
	if err != nil {
		// Not a parseable message: no text rather than a failed commit.
		return nil, false, nil
	}
	w := &walker{limit: limit}
	if err := w.part(msg.Header.Get("Content-Type"), msg.Header.Get("Content-Transfer-Encoding"), msg.Body, 0); err != nil && err != errDone {
		return nil, false, nil
	}
	if w.plain != nil {
		return w.plain, true, nil
	}
	if w.html != nil {
		return w.html, true, nil
	}
	return nil, false, nil
}

var errDone = io.EOF

type walker struct {
	limit int
	plain []byte
	html  []byte
}

func (w *walker) part(contentType, encoding string, body io.Reader, depth int) error {
	if contentType == "" {
		contentType = "text/plain; charset=us-ascii"
	}
	mt, params, err := mime.ParseMediaType(contentType)
	if err != nil {
		mt, params = "text/plain", map[string]string{}
	}
	switch {
	case strings.HasPrefix(mt, "multipart/") && depth < 8:
		mr := multipart.NewReader(body, params["boundary"])
		for {
			p, err := mr.NextRawPart()
			if err == io.EOF {
				return nil
			}
			if err != nil {
				return err
			}
			if strings.HasPrefix(strings.ToLower(p.Header.Get("Content-Disposition")), "attachment") {
				continue
			}
			if err := w.part(p.Header.Get("Content-Type"), p.Header.Get("Content-Transfer-Encoding"), p, depth+1); err != nil {
				return err
			}
		}
	case mt == "text/plain":
		var out bytes.Buffer
		if err := copyLimited(&out, decode(body, encoding, params["charset"]), w.limit); err != nil {
			return err
		}
		w.plain = out.Bytes()
		return errDone
	case mt == "text/html" && w.html == nil:
		var out bytes.Buffer
		err := StripHTML(&limitWriter{w: &out, n: w.limit}, decode(body, encoding, params["charset"]))
		if err != nil && err != errLimit {
			return err
		}
		w.html = out.Bytes()
	}
	return nil
}

// copyBuffers hold copyLimited's buffers (io.Copy allocated 32 KiB for every part of every
// message).
var copyBuffers = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

func copyLimited(dst *bytes.Buffer, r io.Reader, limit int) error {
	buf := copyBuffers.Get().(*[]byte)
	defer copyBuffers.Put(buf)
	_, err := io.CopyBuffer(&limitWriter{w: dst, n: limit}, r, *buf)
	if err == errLimit {
		return nil
	}
	return err
}

// decode undoes a transfer encoding and converts a charset to UTF-8.
func decode(r io.Reader, encoding, charset string) io.Reader {
	switch strings.ToLower(strings.TrimSpace(encoding)) {
	case "quoted-printable":
		r = quotedprintable.NewReader(r)
	case "base64":
		r = base64.NewDecoder(base64.StdEncoding, &base64Clean{r: r})
	}
	return toUTF8(r, charset)
}

// base64Clean drops the line breaks and spaces of a base64 body.
type base64Clean struct{ r io.Reader }

func (b *base64Clean) Read(p []byte) (int, error) {
	for {
		n, err := b.r.Read(p)
		j := 0
		for _, c := range p[:n] {
			if c != '\r' && c != '\n' && c != ' ' && c != '\t' {
				p[j] = c
				j++
			}
		}
		if j > 0 || err != nil {
			return j, err
		}
	}
}

// cp1252 maps the bytes 0x80-0x9f of windows-1252 (the rest is Latin-1).
var cp1252 = [32]rune{
	'€', '\ufffd', '‚', 'ƒ', '„', '…', '†', '‡', 'ˆ', '‰', 'Š', '‹', 'Œ', '\ufffd', 'Ž', '\ufffd',
	'\ufffd', '‘', '’', '“', '”', '•', '–', '—', '˜', '™', 'š', '›', 'œ', '\ufffd', 'ž', 'Ÿ',
}

func toUTF8(r io.Reader, charset string) io.Reader {
	switch strings.ToLower(strings.TrimSpace(charset)) {
	case "iso-8859-1", "latin1", "latin-1", "iso8859-1", "windows-1252", "cp1252":
		return &singleByte{r: r, win: strings.Contains(strings.ToLower(charset), "1252")}
	}
	return &validUTF8{r: r}
}

type singleByte struct {
	r   io.Reader
	win bool
	buf []byte
	out []byte
}

func (s *singleByte) Read(p []byte) (int, error) {
	for len(s.out) == 0 {
		if cap(s.buf) == 0 {
			s.buf = make([]byte, 8<<10)
		}
		n, err := s.r.Read(s.buf[:cap(s.buf)])
		for _, c := range s.buf[:n] {
			r := rune(c)
			if s.win && c >= 0x80 && c < 0xa0 {
				r = cp1252[c-0x80]
			}
			s.out = utf8.AppendRune(s.out, r)
		}
		if len(s.out) == 0 && err != nil {
			return 0, err
		}
	}
	n := copy(p, s.out)
	s.out = s.out[n:]
	if len(s.out) == 0 {
		s.out = s.out[:0:0]
	}
	return n, nil
}

// validUTF8 replaces invalid UTF-8 with U+FFFD, holding back an incomplete
// rune at the end of a read.
type validUTF8 struct {
	r    io.Reader
	held []byte
	buf  []byte
	out  []byte
	eof  bool
}

func (v *validUTF8) Read(p []byte) (int, error) {
	for len(v.out) == 0 {
		if v.eof {
			return 0, io.EOF
		}
		if v.buf == nil {
			v.buf = make([]byte, 0, 8<<10)
		}
		buf := append(v.buf[:0], v.held...)
		n, err := v.r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			v.eof = true
		} else if err != nil {
			return 0, err
		}
		keep := 0
		if !v.eof {
			// Hold back a rune cut by the read.
			for i := len(buf) - 1; i >= 0 && i >= len(buf)-utf8.UTFMax; i-- {
				if utf8.RuneStart(buf[i]) {
					if !utf8.FullRune(buf[i:]) {
						keep = len(buf) - i
					}
					break
				}
			}
		}
		v.held = append(v.held[:0], buf[len(buf)-keep:]...)
		v.out = bytes.ToValidUTF8(buf[:len(buf)-keep], []byte("\uFFFD"))
	}
	n := copy(p, v.out)
	v.out = v.out[n:]
	return n, nil
}

// StripHTML writes the text of an HTML document: no tags, comments,
// scripts or styles; entities decoded; block elements as line breaks;
// runs of white space collapsed.
func StripHTML(w io.Writer, r io.Reader) error {
	s := &stripper{in: bufio.NewReaderSize(r, 32<<10), out: bufio.NewWriterSize(w, 8<<10)}
	err := s.run() // io.EOF at the end of the input
	ferr := s.out.Flush()
	if err == io.EOF {
		return ferr
	}
	return err
}

type stripper struct {
	in    *bufio.Reader
	out   *bufio.Writer
	text  []byte
	space bool // last written was white space
	lines int  // consecutive line breaks written
	start bool // nothing written yet
}

var blockTags = map[string]bool{
	"p": true, "br": true, "div": true, "li": true, "tr": true, "td": true, "th": true, "h1": true, "h2": true,
	"h3": true, "h4": true, "h5": true, "h6": true, "table": true, "ul": true, "ol": true, "blockquote": true,
	"pre": true, "hr": true, "section": true, "article": true, "header": true, "footer": true, "title": true,
}

func (s *stripper) run() error {
	s.start = true
	for {
		c, err := s.in.ReadByte()
		if err != nil {
			s.flushText()
			return err
		}
		if c != '<' {
			s.text = append(s.text, c)
			if len(s.text) >= 16<<10 {
				s.flushText()
			}
			continue
		}
		s.flushText()
		if err := s.tag(); err != nil {
			return err
		}
	}
}

func (s *stripper) tag() error {
	peek, _ := s.in.Peek(3)
	if bytes.HasPrefix(peek, []byte("!--")) {
		s.in.Discard(3)
		return s.skipUntil("-->")
	}
	if len(peek) == 0 || !(isAlpha(peek[0]) || peek[0] == '/' || peek[0] == '!' || peek[0] == '?') {
		s.text = append(s.text, '<') // a bare "<" in text
		return nil
	}
	var head []byte // the start of the tag, enough for its name
	for {
		c, err := s.in.ReadByte()
		if err != nil {
			return err
		}
		if c == '>' {
			break
		}
		if c == '"' || c == '\'' {
			if _, err := s.in.ReadBytes(c); err != nil {
				return err
			}
			continue
		}
		if len(head) < 32 {
			head = append(head, c)
		}
	}
	closing := len(head) > 0 && head[0] == '/'
	h := bytes.TrimPrefix(head, []byte("/"))
	i := 0
	for i < len(h) && (isAlpha(h[i]) || h[i] >= '0' && h[i] <= '9') {
		i++
	}
	n := strings.ToLower(string(h[:i]))
	switch {
	case !closing && (n == "script" || n == "style"):
		return s.skipUntilClose(n)
	case blockTags[n]:
		s.newline()
	}
	return nil
}

func isAlpha(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

func (s *stripper) skipUntil(end string) error {
	matched := 0
	for {
		c, err := s.in.ReadByte()
		if err != nil {
			return err
		}
		if c == end[matched] {
			matched++
			if matched == len(end) {
				return nil
			}
		} else if c == end[0] {
			matched = 1
		} else {
			matched = 0
		}
	}
}

// skipUntilClose skips to the closing tag of name (case-insensitive).
func (s *stripper) skipUntilClose(name string) error {
	end := "</" + name
	matched := 0
	for {
		c, err := s.in.ReadByte()
		if err != nil {
			return err
		}
		lc := c
		if lc >= 'A' && lc <= 'Z' {
			lc += 'a' - 'A'
		}
		if lc == end[matched] {
			matched++
			if matched == len(end) {
				if _, err := s.in.ReadBytes('>'); err != nil {
					return err
				}
				return nil
			}
		} else if lc == '<' {
			matched = 1
		} else {
			matched = 0
		}
	}
}

func (s *stripper) flushText() {
	if len(s.text) == 0 {
		return
	}
	t := html.UnescapeString(string(s.text))
	s.text = s.text[:0]
	for _, r := range t {
		if r == ' ' || r == '\t' || r == '\n' || r == '\r' || r == '\u00a0' || r == '\f' {
			s.softSpace()
			continue
		}
		if s.space && !s.start && s.lines == 0 {
			s.out.WriteByte(' ')
		}
		s.space = false
		s.lines = 0
		s.start = false
		s.out.WriteRune(r)
	}
}

func (s *stripper) softSpace() { s.space = true }

func (s *stripper) newline() {
	s.space = false
	if s.start || s.lines >= 2 {
		return
	}
	s.out.WriteByte('\n')
	s.lines++
}
