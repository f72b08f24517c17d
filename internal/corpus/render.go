package corpus

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"mime"
	"mime/quotedprintable"
	"strings"
	"time"

	"golang.org/x/text/encoding/charmap"
	"golang.org/x/text/encoding/japanese"
)

// header is a message's header block being written, in order.
type header struct {
	fields [][2]string
	raw    []string // fields written exactly as given (raw 8-bit, odd folding)
}

func (h *header) add(k, v string) { h.fields = append(h.fields, [2]string{k, v}) }

// senderDomain is the domain of the From address.
func (h *header) senderDomain() string {
	v := ""
	for _, f := range h.fields {
		if f[0] == "From" {
			v = f[1]
		}
	}
	for _, r := range h.raw {
		if strings.HasPrefix(r, "From: ") {
			v = r
		}
	}
	v = strings.TrimRight(v, "> ")
	return v[strings.LastIndexByte(v, '@')+1:]
}

// addRaw adds a field whose value is already in its final bytes (possibly raw 8-bit).
func (h *header) addRaw(k, v string) { h.raw = append(h.raw, k+": "+v) }

// part is a MIME entity: its own header fields and its encoded body.
type part struct {
	ctype string // full Content-Type value
	cte   string // Content-Transfer-Encoding, "" for none
	disp  string // Content-Disposition value, "" for none
	body  string // already encoded
	parts []part // for multipart
}

// textPart encodes text in a charset and transfer encoding the way clients do.
func textPart(subtype, text, charset, cte string) part {
	enc := text
	switch strings.ToLower(charset) {
	case "iso-8859-1":
		enc = latin1(text)
	case "windows-1252":
		if b, err := charmap.Windows1252.NewEncoder().String(text); err == nil {
			enc = b
		}
	case "koi8-r":
		if b, err := charmap.KOI8R.NewEncoder().String(text); err == nil {
			enc = b
		}
	case "iso-2022-jp":
		if b, err := japanese.ISO2022JP.NewEncoder().String(text); err == nil {
			enc = b
		}
	}
	p := part{ctype: fmt.Sprintf("text/%s; charset=%s", subtype, charset), cte: cte}
	if subtype == "plain" && charset == "utf-8" && cte == "" {
		p.ctype = "text/plain; charset=utf-8; format=flowed"
	}
	switch cte {
	case "quoted-printable":
		var b bytes.Buffer
		w := quotedprintable.NewWriter(&b)
		w.Write([]byte(enc))
		w.Close()
		p.body = b.String()
	case "base64":
		p.body = wrap64([]byte(enc))
	default:
		p.body = enc
	}
	return p
}

func attachment(ctype, name string, size int, rfc2231 bool, fill byte) part {
	data := bytes.Repeat([]byte{fill, fill ^ 0x5a, 0x10, 0x7f}, size/4+1)[:size]
	disp := fmt.Sprintf("attachment; filename=%q", name)
	if rfc2231 {
		disp = "attachment;\r\n filename*=utf-8''" + strings.ReplaceAll(urlEscape(name), "%2E", ".")
	} else if !ascii(name) {
		disp = "attachment; filename=\"" + mime.BEncoding.Encode("utf-8", name) + "\""
	}
	return part{ctype: ctype + "; name=\"" + mime.QEncoding.Encode("utf-8", name) + "\"", cte: "base64", disp: disp, body: wrap64(data)}
}

func urlEscape(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.' {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
}

func ascii(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

func wrap64(b []byte) string {
	s := base64.StdEncoding.EncodeToString(b)
	var out strings.Builder
	for len(s) > 76 {
		out.WriteString(s[:76])
		out.WriteString("\r\n")
		s = s[76:]
	}
	out.WriteString(s)
	return out.String()
}

func latin1(s string) string {
	b, err := charmap.ISO8859_1.NewEncoder().String(s)
	if err != nil {
		b, _ = charmap.Windows1252.NewEncoder().String(s)
	}
	return b
}

func multipart(kind string, boundary string, parts ...part) part {
	return part{ctype: fmt.Sprintf("multipart/%s; boundary=\"%s\"", kind, boundary), parts: parts}
}

// render writes the message: header fields then the MIME body. nl is the line ending ("\r\n"
// as on the wire, "\n" as many Maildir writers store it).
func render(h *header, body part, nl string) []byte {
	var b bytes.Buffer
	for _, f := range h.fields {
		b.WriteString(fold(f[0]+": "+f[1], nl))
		b.WriteString(nl)
	}
	for _, r := range h.raw {
		b.WriteString(r)
		b.WriteString(nl)
	}
	b.WriteString("MIME-Version: 1.0" + nl)
	writePart(&b, body, nl)
	return b.Bytes()
}

func writePart(b *bytes.Buffer, p part, nl string) {
	b.WriteString("Content-Type: " + p.ctype + nl)
	if p.cte != "" {
		b.WriteString("Content-Transfer-Encoding: " + p.cte + nl)
	}
	if p.disp != "" {
		b.WriteString("Content-Disposition: " + strings.ReplaceAll(p.disp, "\r\n", nl) + nl)
	}
	b.WriteString(nl)
	if len(p.parts) == 0 {
		b.WriteString(strings.ReplaceAll(strings.ReplaceAll(p.body, "\r\n", "\n"), "\n", nl))
		b.WriteString(nl)
		return
	}
	boundary := p.ctype[strings.Index(p.ctype, "boundary=\"")+10 : len(p.ctype)-1]
	b.WriteString("This is a multi-part message in MIME format." + nl)
	for _, sub := range p.parts {
		b.WriteString(nl + "--" + boundary + nl)
		writePart(b, sub, nl)
	}
	b.WriteString(nl + "--" + boundary + "--" + nl)
}

// fold folds a header line at spaces near 76 columns, as RFC 5322 clients do.
func fold(line, nl string) string {
	if len(line) <= 78 {
		return line
	}
	var b strings.Builder
	for len(line) > 78 {
		i := strings.LastIndexByte(line[:78], ' ')
		if i <= 10 {
			j := strings.IndexByte(line[78:], ' ')
			if j < 0 {
				break
			}
			i = 78 + j
		}
		b.WriteString(line[:i])
		b.WriteString(nl)
		b.WriteByte(' ')
		line = line[i+1:]
	}
	b.WriteString(line)
	return b.String()
}

// encodeWord writes a header value the way a client in that charset would: plain ASCII as it
// is, otherwise RFC 2047 words (Q or B) in the charset.
func encodeWord(s, charset string, b bool) string {
	if ascii(s) {
		return s
	}
	switch charset {
	case "iso-8859-1":
		enc := latin1(s)
		if b {
			return "=?iso-8859-1?B?" + base64.StdEncoding.EncodeToString([]byte(enc)) + "?="
		}
		return qword("ISO-8859-1", enc)
	case "koi8-r":
		enc, err := charmap.KOI8R.NewEncoder().String(s)
		if err == nil {
			return "=?koi8-r?B?" + base64.StdEncoding.EncodeToString([]byte(enc)) + "?="
		}
	case "iso-2022-jp":
		enc, err := japanese.ISO2022JP.NewEncoder().String(s)
		if err == nil {
			return "=?ISO-2022-JP?B?" + base64.StdEncoding.EncodeToString([]byte(enc)) + "?="
		}
	}
	if b {
		return mime.BEncoding.Encode("UTF-8", s)
	}
	return mime.QEncoding.Encode("utf-8", s)
}

func qword(cs, enc string) string {
	var b strings.Builder
	b.WriteString("=?" + cs + "?Q?")
	for i := 0; i < len(enc); i++ {
		c := enc[i]
		switch {
		case c == ' ':
			b.WriteByte('_')
		case c >= 0x80 || c == '=' || c == '?' || c == '_' || c < 0x20:
			fmt.Fprintf(&b, "=%02X", c)
		default:
			b.WriteByte(c)
		}
	}
	b.WriteString("?=")
	return b.String()
}

func rfc1123(t time.Time) string { return t.Format("Mon, 02 Jan 2006 15:04:05 -0700") }

func encodeKOI8(s string) string {
	b, err := charmap.KOI8R.NewEncoder().String(s)
	if err != nil {
		return s
	}
	return b
}
