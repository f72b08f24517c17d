package intelcorpus

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"mime"
	"mime/quotedprintable"
	"strings"
	"time"

	"golang.org/x/text/encoding/charmap"
)

// part is a MIME entity being written.
type part struct {
	ctype, cte, disp string
	body             string // encoded
	parts            []part
}

func textPart(subtype, text, charset, cte string) part {
	raw := text
	if charset == "windows-1252" || charset == "iso-8859-15" {
		enc := charmap.Windows1252.NewEncoder()
		if charset == "iso-8859-15" {
			enc = charmap.ISO8859_15.NewEncoder()
		}
		if b, err := enc.String(text); err == nil {
			raw = b
		} else {
			charset = "utf-8"
		}
	}
	p := part{ctype: fmt.Sprintf("text/%s; charset=%s", subtype, charset), cte: cte}
	switch cte {
	case "quoted-printable":
		var b bytes.Buffer
		w := quotedprintable.NewWriter(&b)
		w.Write([]byte(raw))
		w.Close()
		p.body = strings.ReplaceAll(b.String(), "\r\n", "\n")
	case "base64":
		p.body = wrap64([]byte(raw))
	default:
		p.body = raw
	}
	return p
}

func attachment(ctype, name string, data []byte) part {
	return part{ctype: fmt.Sprintf("%s; name=%q", ctype, name), cte: "base64", disp: fmt.Sprintf("attachment; filename=%q", name), body: wrap64(data)}
}

func multipart(kind, boundary string, ps ...part) part {
	return part{ctype: fmt.Sprintf("multipart/%s; boundary=%q", kind, boundary), parts: ps}
}

func wrap64(b []byte) string {
	s := base64.StdEncoding.EncodeToString(b)
	var out strings.Builder
	for len(s) > 76 {
		out.WriteString(s[:76] + "\n")
		s = s[76:]
	}
	out.WriteString(s + "\n")
	return out.String()
}

type field struct{ k, v string }

func render(h []field, body part, crlf bool) []byte {
	var b bytes.Buffer
	for _, f := range h {
		b.WriteString(f.k + ": " + f.v + "\n")
	}
	b.WriteString("MIME-Version: 1.0\n")
	writePart(&b, body, true)
	out := bytes.ReplaceAll(b.Bytes(), []byte("\r\n"), []byte("\n"))
	if crlf {
		out = bytes.ReplaceAll(out, []byte("\n"), []byte("\r\n"))
	}
	return out
}

func writePart(b *bytes.Buffer, p part, top bool) {
	b.WriteString("Content-Type: " + p.ctype + "\n")
	if p.cte != "" {
		b.WriteString("Content-Transfer-Encoding: " + p.cte + "\n")
	}
	if p.disp != "" {
		b.WriteString("Content-Disposition: " + p.disp + "\n")
	}
	b.WriteString("\n")
	if len(p.parts) == 0 {
		b.WriteString(p.body)
		if !strings.HasSuffix(p.body, "\n") {
			b.WriteString("\n")
		}
		return
	}
	_, params, _ := mime.ParseMediaType(p.ctype)
	bd := params["boundary"]
	if top {
		b.WriteString("This is a multi-part message in MIME format.\n")
	}
	for _, c := range p.parts {
		b.WriteString("--" + bd + "\n")
		writePart(b, c, false)
	}
	b.WriteString("--" + bd + "--\n")
}

func encodeWord(s string) string {
	for _, r := range s {
		if r > 126 {
			return mime.QEncoding.Encode("utf-8", s)
		}
	}
	return s
}

func rfc1123(t time.Time) string { return t.Format("Mon, 02 Jan 2006 15:04:05 -0700") }

func htmlEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}
