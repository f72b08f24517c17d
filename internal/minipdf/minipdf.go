// Package minipdf writes the smallest valid PDF that carries lines of text (one page, a
// standard font), for tests and generated corpora of invoices sent as PDF attachments.
package minipdf

import (
	"bytes"
	"fmt"
	"strings"

	"golang.org/x/text/encoding/charmap"
)

// Text returns a one-page PDF showing lines, one under another. Characters outside
// Windows-1252 are written as '?'.
func Text(lines []string) []byte {
	var content strings.Builder
	content.WriteString("BT /F1 11 Tf 72 740 Td 14 TL\n")
	for _, l := range lines {
		content.WriteString("(" + escape(l) + ") Tj T*\n")
	}
	content.WriteString("ET\n")
	objs := []string{
		"<< /Type /Catalog /Pages 2 0 R >>",
		"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
		"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 4 0 R >> >> /Contents 5 0 R >>",
		"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>",
		fmt.Sprintf("<< /Length %d >>\nstream\n%sendstream", content.Len(), content.String()),
	}
	var b bytes.Buffer
	b.WriteString("%PDF-1.4\n")
	offs := make([]int, len(objs))
	for i, o := range objs {
		offs[i] = b.Len()
		fmt.Fprintf(&b, "%d 0 obj\n%s\nendobj\n", i+1, o)
	}
	xref := b.Len()
	fmt.Fprintf(&b, "xref\n0 %d\n0000000000 65535 f \n", len(objs)+1)
	for _, o := range offs {
		fmt.Fprintf(&b, "%010d 00000 n \n", o)
	}
	fmt.Fprintf(&b, "trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n", len(objs)+1, xref)
	return b.Bytes()
}

// escape writes s as a PDF string in the font's WinAnsiEncoding (Windows-1252: €, £, –, é
// and the like have codes); what it cannot encode becomes '?'.
func escape(s string) string {
	var b strings.Builder
	enc := charmap.Windows1252.NewEncoder()
	for _, r := range s {
		switch {
		case r == '(' || r == ')' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r >= 32 && r <= 126:
			b.WriteRune(r)
		default:
			c, err := enc.String(string(r))
			if err != nil || len(c) != 1 {
				b.WriteByte('?')
				continue
			}
			fmt.Fprintf(&b, "\\%03o", c[0])
		}
	}
	return b.String()
}
