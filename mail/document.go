package mail

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"unicode"

	"github.com/emersion/go-message"
	"github.com/k3a/html2text"
	"github.com/ledongthuc/pdf"
)

// Limits of ReadDocument, the defaults of DocumentOptions.
const (
	// DefaultMaxDocumentBytes is how much of a message ReadDocument reads; the rest is skipped.
	DefaultMaxDocumentBytes = 16 << 20
	// DefaultMaxDocumentText is how much text a Document keeps.
	DefaultMaxDocumentText = 64 << 10
	// DefaultMaxAttachmentBytes is the largest attachment (decoded) whose text is extracted.
	DefaultMaxAttachmentBytes = 4 << 20
)

// DocumentOptions bound what ReadDocument reads. Nil or zero fields mean the defaults.
type DocumentOptions struct {
	MaxBytes           int64 // of the message, as stored
	MaxText            int   // bytes of text kept, over all parts
	MaxAttachmentBytes int64 // of one attachment's decoded bytes; larger ones are not read
	NoPDF              bool  // do not extract the text of PDF attachments
	// Want, when set, is asked about each text part's decoded bytes (HTML before it is turned
	// into text): a part it declines is not kept. The bytes are valid only during the call
	// (their buffer is reused). A reader that only cares for some mail
	// (intel, bills) spares itself the conversion of the rest.
	Want func(kind TextKind, decoded []byte) bool
	// NoRecipients leaves Message.To and Cc empty (the fields stay in Fields): parsing long
	// recipient lists is a reader's cost that billing, for one, does not need.
	NoRecipients bool
	// DeclineHeader, when set, is asked about the header before anything else is read or
	// decoded: given the well-formed fields as written, one after another with their line
	// breaks (CRLF) and then an empty line, it returns true for a message the reader does not
	// want, and ReadDocument returns ErrDeclined. The bytes are valid only during the call.
	DeclineHeader func(header []byte) bool
}

// ErrDeclined is returned by ReadDocument when DocumentOptions.DeclineHeader declined the
// message's header: nothing is wrong with the message, its reader did not want it.
var ErrDeclined = errors.New("message declined by its header")

// TextKind says where a piece of a document's text came from.
type TextKind string

// Text kinds.
const (
	TextPlain     TextKind = "plain"     // a text/plain part
	TextHTML      TextKind = "html"      // a text/html part, turned into text
	TextPDF       TextKind = "pdf"       // the text of a PDF attachment
	TextForwarded TextKind = "forwarded" // the text of a message attached to this one (message/rfc822)
)

// TextPart is one readable part of a message.
type TextPart struct {
	Kind TextKind
	Name string // the attachment's file name, when it has one
	Text string // line breaks kept, runs of spaces collapsed, valid UTF-8
}

// Document is a message read for all of its text: the header facts Read finds, and the text of
// every readable part, in order, with line breaks kept (so that "Total: $12.00" stays a line).
type Document struct {
	*Message
	// Parts are the readable parts: of each multipart/alternative, the plain text when it has
	// some, else the HTML as text; then PDF attachments' text and attached messages.
	Parts []TextPart
	// Forwarded are the headers of the messages attached to this one (message/rfc822 parts).
	Forwarded []*Message
	// Cut is set when the message was longer than the options let ReadDocument read, or its
	// text longer than it keeps.
	Cut bool
}

// Body returns the text of every part, separated by blank lines.
func (d *Document) Body() string {
	if len(d.Parts) == 1 {
		return d.Parts[0].Text // most mail: nothing to join, nothing to copy
	}
	var b strings.Builder
	for i, p := range d.Parts {
		if i > 0 {
			b.WriteString("\n\n")
		}
		b.WriteString(p.Text)
	}
	return b.String()
}

// SkipError is returned by ReadDocument for a message that has nothing to read; Reason says
// why, in words for a person ("empty", "text in unknown charset x-foo").
type SkipError struct{ Reason string }

func (e *SkipError) Error() string { return "message skipped: " + e.Reason }

// ErrSkipped matches every *SkipError with errors.Is.
var ErrSkipped = errors.New("message skipped")

// Is makes errors.Is(err, ErrSkipped) hold for a *SkipError.
func (e *SkipError) Is(target error) bool { return target == ErrSkipped }

// ReadDocument reads a message and the text of its parts: quoted-printable and base64 decoded,
// charsets converted to UTF-8 (go-message's charset package), HTML turned into text
// (html2text), the text of PDF attachments (ledongthuc/pdf) and of attached messages. It reads
// at most o.MaxBytes of r (it does not drain r). A message with nothing readable (empty, no
// header, its only text in a charset no decoder knows, MIME too broken to find any text)
// returns a *SkipError; anything less is read as far as it goes, what was wrong listed in
// Problems. Memory is bounded by the options, not by the message's size.
func ReadDocument(r io.Reader, o *DocumentOptions) (*Document, error) {
	var opt DocumentOptions
	if o != nil {
		opt = *o
	}
	if opt.MaxBytes <= 0 {
		opt.MaxBytes = DefaultMaxDocumentBytes
	}
	if opt.MaxText <= 0 {
		opt.MaxText = DefaultMaxDocumentText
	}
	if opt.MaxAttachmentBytes <= 0 {
		opt.MaxAttachmentBytes = DefaultMaxAttachmentBytes
	}
	lim := &limitReader{r: r, n: opt.MaxBytes}
	br := readers.Get().(*bufio.Reader)
	br.Reset(lim)
	defer func() {
		br.Reset(nil)
		readers.Put(br)
	}()
	d := &document{opt: opt, lim: lim, doc: &Document{Message: &Message{MIMEType: "text/plain"}}}
	m := d.doc.Message
	// The header's bytes are read into a reused buffer: nothing of them is kept once the
	// message is read (its fields are decoded into strings of their own).
	hb := headerBlocks.Get().(*[]byte)
	h, n, err := readHeaderInto(br, m, *hb)
	defer func() {
		if cap(h.block) <= 64<<10 {
			*hb = h.block[:0]
		}
		headerBlocks.Put(hb)
	}()
	if err != nil {
		return nil, &SkipError{Reason: "could not be read: " + clean(err.Error())}
	}
	if len(h.raw) == 0 {
		if rest, _ := br.Peek(1); n == 0 && len(rest) == 0 {
			return nil, &SkipError{Reason: "empty"}
		}
		return nil, &SkipError{Reason: "no header fields: not an RFC 5322 message"}
	}
	if opt.DeclineHeader != nil && opt.DeclineHeader(h.block) {
		return nil, ErrDeclined
	}
	mh := message.Header{Header: h.mime}
	if t, _, err := mh.ContentType(); err == nil && t != "" {
		m.MIMEType = t
	}
	e, err := message.New(mh, br)
	d.entity(e, err, nil, 0)
	decodeFields(h, d.declared, m, opt.NoRecipients)
	if lim.cut {
		d.doc.Cut = true
		m.problem("message over %d bytes: the rest not read", opt.MaxBytes)
	}
	if len(d.doc.Parts) == 0 && len(d.doc.Forwarded) == 0 && d.lost != "" {
		return nil, &SkipError{Reason: d.lost}
	}
	m.Text = collapseParts(d.doc.Parts, MaxTextBytes)
	m.Attachments = append(m.Attachments, d.attachments...)
	return d.doc, nil
}

// headerBlocks hold a message's header fields while ReadDocument reads it, reused.
var headerBlocks = sync.Pool{New: func() any { b := make([]byte, 0, 4<<10); return &b }}

// partBuffers hold a text part's decoded bytes while it is read, reused across parts and
// messages (one of over 1 MiB is let go rather than kept).
var partBuffers = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// collapseParts is truncate(collapse(the parts' texts joined by spaces), n), without joining
// them or collapsing more than the first n bytes need. collapse's result is its output U
// with white space trimmed at both ends: U[lead:end]. Once a rune that is not white space
// has been written at lead+n or later, end lies past lead+n, so the result is truncate(U[lead:],
// n) whatever follows.
func collapseParts(parts []TextPart, n int) string {
	var b strings.Builder
	space := true
	lead := -1 // where U's first rune that is not white space starts
	for i, p := range parts {
		s := p.Text
		if i > 0 {
			s = " " + s
		}
		for _, r := range s {
			if r < 0x20 || r == 0x7f || r == ' ' || r == 0xa0 || r == '\u200b' || r == '\u200c' || r == '\u034f' {
				if !space {
					b.WriteByte(' ')
					space = true
				}
				continue
			}
			if !unicode.IsSpace(r) {
				if lead < 0 {
					lead = b.Len()
				} else if b.Len() >= lead+n {
					return truncate(b.String()[lead:], n)
				}
			}
			b.WriteRune(r)
			space = false
		}
	}
	return truncate(strings.TrimSpace(b.String()), n)
}

// readers are the buffered readers ReadDocument reads through, reused: a scan reads many
// messages one after another, and a fresh 16 KiB buffer each was a good part of its cost.
var readers = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, 16<<10) }}

type document struct {
	opt         DocumentOptions
	lim         *limitReader
	doc         *Document
	declared    string // the first declared charset of a text part
	textBytes   int
	parts       int
	lost        string // why text that was there could not be read
	attachments []Attachment
}

const maxDepth = 8

// entity reads one MIME entity (the message, a part, an attached message) into out (the
// document's parts when nil).
func (d *document) entity(e *message.Entity, err error, path []int, depth int) {
	if d.parts++; d.parts > maxParts || depth > maxDepth {
		return
	}
	m := d.doc.Message
	if e == nil {
		m.problem("part %v unreadable: %v", path, err)
		return
	}
	h := e.Header
	unknown := err != nil && (message.IsUnknownCharset(err) || message.IsUnknownEncoding(err))
	t, params, perr := h.ContentType()
	if perr != nil || t == "" {
		t, params = "text/plain", nil
	}
	if strings.HasPrefix(t, "multipart/") {
		mr := e.MultipartReader()
		if mr == nil {
			d.lost = "broken MIME: multipart without a boundary"
			m.problem("part %v: %s without a boundary", path, t)
			return
		}
		if t == "multipart/alternative" {
			d.alternative(mr, path, depth)
			return
		}
		for i := 0; ; i++ {
			p, err := mr.NextPart()
			if p == nil {
				if !errors.Is(err, io.EOF) && !d.lim.cut {
					m.problem("part %v: %v", path, err)
					if len(d.doc.Parts) == 0 {
						d.lost = "broken MIME: " + clean(err.Error())
					}
				}
				return
			}
			d.entity(p, err, append(path[:len(path):len(path)], i), depth+1)
		}
	}
	disp, dparams, _ := h.ContentDisposition()
	name := dparams["filename"]
	if name == "" {
		name = params["name"]
	}
	if name == "" {
		name = extParam(h.Get("Content-Disposition"), "filename")
	}
	if name == "" {
		name = extParam(h.Get("Content-Type"), "name")
	}
	name = decodeWords(name, d.declared)
	attached := strings.EqualFold(disp, "attachment")
	switch {
	case (t == "text/plain" || t == "text/html") && !attached:
		if cs := strings.ToLower(params["charset"]); d.declared == "" && cs != "" && cs != "us-ascii" && !strings.HasPrefix(cs, "utf") {
			d.declared = cs
		}
		if unknown {
			m.problem("part %v: %v: its text not read", path, err)
			d.lost = "text in " + clean(err.Error())
			return
		}
		// Read into a reused buffer: the text is copied out of it (toUTF8) before it goes
		// back, and a part's bytes were a good share of a message's allocations.
		buf := partBuffers.Get().(*bytes.Buffer)
		buf.Reset()
		buf.ReadFrom(io.LimitReader(e.Body, int64(d.opt.MaxText)*4))
		b := buf.Bytes()
		kind := TextPlain
		if t == "text/html" {
			kind = TextHTML
		}
		want := d.opt.Want == nil || d.opt.Want(kind, b)
		var s string
		if want {
			s = toUTF8(b, "")
		}
		if buf.Cap() <= 1<<20 {
			partBuffers.Put(buf)
		}
		if !want {
			return
		}
		if kind == TextHTML {
			// Table cells end without a space in html2text's output ("Total$5.00") and rows
			// without a line break: a cell boundary is a word boundary, a row is a line.
			s = cellEnds.Replace(s)
			s = html2text.HTML2TextWithOptions(s, html2text.WithUnixLineBreaks())
		}
		d.add(TextPart{Kind: kind, Text: lines(s)})
	case t == "message/rfc822" || t == "message/global":
		fm, inner := d.forwarded(e.Body, path, depth)
		if fm != nil {
			d.doc.Forwarded = append(d.doc.Forwarded, fm)
			d.add(TextPart{Kind: TextForwarded, Name: fm.Subject, Text: inner})
		}
	case !d.opt.NoPDF && (t == "application/pdf" || (strings.HasSuffix(strings.ToLower(name), ".pdf") && (t == "application/octet-stream" || t == "application/x-pdf"))):
		d.attach(name, t)
		if unknown {
			m.problem("part %v: %v", path, err)
			return
		}
		b, _ := io.ReadAll(io.LimitReader(e.Body, d.opt.MaxAttachmentBytes+1))
		if int64(len(b)) > d.opt.MaxAttachmentBytes {
			m.problem("PDF %q over %d bytes: its text not read", truncate(name, 60), d.opt.MaxAttachmentBytes)
			return
		}
		s, err := pdfText(b)
		if err != nil {
			m.problem("PDF %q: %v", truncate(name, 60), err)
			return
		}
		d.add(TextPart{Kind: TextPDF, Name: name, Text: lines(s)})
	default:
		d.attach(name, t)
	}
}

func (d *document) attach(name, t string) {
	if len(d.attachments) < 50 {
		d.attachments = append(d.attachments, Attachment{Name: name, MIMEType: t})
	}
}

// alternative keeps, of the alternatives, the first that has plain text, else the last (the
// richest, RFC 2046 5.1.4) that has any text.
func (d *document) alternative(mr message.MultipartReader, path []int, depth int) {
	saved := d.doc.Parts
	var best []TextPart
	bestPlain := false
	for i := 0; ; i++ {
		p, err := mr.NextPart()
		if p == nil {
			if !errors.Is(err, io.EOF) && !d.lim.cut {
				d.doc.Message.problem("part %v: %v", path, err)
			}
			break
		}
		if bestPlain {
			continue // plain text is kept: the richer alternatives need not be read
		}
		d.doc.Parts = nil
		d.entity(p, err, append(path[:len(path):len(path)], i), depth+1)
		got := d.doc.Parts
		plain := false
		for _, t := range got {
			if t.Kind == TextPlain && strings.TrimSpace(t.Text) != "" {
				plain = true
			}
		}
		if len(got) > 0 && !bestPlain {
			best, bestPlain = got, plain
		}
	}
	d.doc.Parts = append(saved, best...)
}

// forwarded reads an attached message: its header facts, and a text that starts with its From,
// Date and Subject lines (as a mail client shows a forwarded message) and goes on with its text.
func (d *document) forwarded(body io.Reader, path []int, depth int) (*Message, string) {
	br := bufio.NewReaderSize(body, 4<<10)
	im := &Message{MIMEType: "text/plain"}
	h, _, err := readHeader(br, im)
	if err != nil || len(h.raw) == 0 {
		d.doc.Message.problem("part %v: attached message has no header", path)
		return nil, ""
	}
	decodeHeader(h, "", im)
	saved := d.doc.Parts
	d.doc.Parts = nil
	e, err := message.New(message.Header{Header: h.mime}, br)
	d.entity(e, err, path, depth+1)
	inner := d.doc.Parts
	d.doc.Parts = saved
	var b strings.Builder
	fmt.Fprintf(&b, "From: %s\nDate: %s\nSubject: %s\n", im.From, h.get("Date"), im.Subject)
	for _, p := range inner {
		b.WriteString("\n")
		b.WriteString(p.Text)
	}
	return im, b.String()
}

var cellEnds = strings.NewReplacer("</td>", " </td>", "</TD>", " </TD>", "</th>", " </th>", "</TH>", " </TH>", "</tr>", "</tr><br>", "</TR>", "</TR><br>")

// add keeps a part, within the text budget.
func (d *document) add(p TextPart) {
	if strings.TrimSpace(p.Text) == "" {
		return
	}
	room := d.opt.MaxText - d.textBytes
	if room <= 0 {
		d.doc.Cut = true
		return
	}
	if len(p.Text) > room {
		p.Text = truncate(p.Text, room)
		d.doc.Cut = true
	}
	d.textBytes += len(p.Text)
	d.doc.Parts = append(d.doc.Parts, p)
}

// lines normalizes text: valid UTF-8, no control characters but line breaks, runs of spaces
// collapsed within each line, no blank-line runs.
func lines(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	blank := 0
	for line := range strings.SplitSeq(s, "\n") {
		l := collapse(line)
		if l == "" {
			blank++
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('\n')
			if blank > 0 {
				b.WriteByte('\n')
			}
		}
		blank = 0
		b.WriteString(l)
	}
	return clean2(b.String())
}

// clean2 is clean that keeps line breaks.
func clean2(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	return strings.Map(func(r rune) rune {
		if r != '\n' && isControl(r) {
			return ' '
		}
		return r
	}, s)
}

// pdfText returns a PDF's text. The PDF library panics on some malformed files; that is an error
// here, not a crash of the scan.
func pdfText(b []byte) (s string, err error) {
	defer func() {
		if p := recover(); p != nil {
			s, err = "", fmt.Errorf("malformed: %v", p)
		}
	}()
	r, err := pdf.NewReader(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		return "", err
	}
	tr, err := r.GetPlainText()
	if err != nil {
		return "", err
	}
	out, err := io.ReadAll(io.LimitReader(tr, 1<<20))
	return toUTF8(out, ""), err
}
