package search

import (
	"context"
	"html"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/blevesearch/bleve/v2/search"
)

// snippetBytes is about how much text a snippet shows.
const snippetBytes = 200

// snippet cuts a passage of the best matching field (body, else subject, else name) of a
// hit from the text the TextSource gives now, with the matched words (the byte ranges the
// index recorded) in <mark>...</mark> and the rest HTML-escaped. It is empty without a
// source, when only other fields matched, or when the text no longer fits the positions.
func (x *Index) snippet(ctx context.Context, tenant, id string, locs search.FieldTermLocationMap) string {
	if x.text == nil {
		return ""
	}
	var field string
	for _, f := range []string{"body", "subject", "name"} {
		if len(locs[f]) > 0 {
			field = f
			break
		}
	}
	if field == "" {
		return ""
	}
	d, err := x.text(ctx, tenant, id)
	if err != nil {
		return ""
	}
	var text string
	switch field {
	case "body":
		text = clip(d.Body, MaxBodyBytes)
	case "subject":
		text = d.Subject
	case "name":
		text = d.Name
	}
	type span struct{ start, end int }
	var spans []span
	for _, ls := range locs[field] {
		for _, l := range ls {
			s, e := int(l.Start), int(l.End)
			if s < 0 || e > len(text) || s >= e || !boundary(text, s) || !boundary(text, e) {
				return "" // the text is not what was indexed
			}
			spans = append(spans, span{s, e})
		}
	}
	slices.SortFunc(spans, func(a, b span) int { return a.start - b.start })
	// The passage starts a little before the first match, on a word boundary, and runs for
	// about snippetBytes.
	from := max(spans[0].start-snippetBytes/4, 0)
	for from > 0 && from < spans[0].start && !isSpace(text[from-1]) {
		from++
	}
	for from > 0 && !boundary(text, from) {
		from--
	}
	to := min(from+snippetBytes, len(text))
	to = max(to, spans[0].end)
	for to < len(text) && !boundary(text, to) {
		to++
	}
	var b strings.Builder
	at := from
	for _, sp := range spans {
		if sp.start < at || sp.end > to {
			continue
		}
		b.WriteString(html.EscapeString(text[at:sp.start]))
		b.WriteString("<mark>")
		b.WriteString(html.EscapeString(text[sp.start:sp.end]))
		b.WriteString("</mark>")
		at = sp.end
	}
	b.WriteString(html.EscapeString(text[at:to]))
	return strings.TrimSpace(b.String())
}

func boundary(s string, i int) bool { return i == len(s) || i == 0 || utf8.RuneStart(s[i]) }

func isSpace(c byte) bool { return c == ' ' || c == '\n' || c == '\t' || c == '\r' }
