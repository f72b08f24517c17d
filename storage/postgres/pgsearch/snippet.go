package pgsearch

import (
	"context"
	"html"
	"slices"
	"strings"

	"svc.dev/svc/vault/search"
)

// The markers ts_headline puts around matched words (normalize blanks them in the text).
const (
	markOpen  = '\x01'
	markClose = '\x02'
)

// headlineOptions ask ts_headline for one passage of about 15 to 35 words around the matches.
const headlineOptions = "StartSel=\x01, StopSel=\x02, MinWords=15, MaxWords=35, ShortWord=2"

// snippets fills the hits' snippets: for each, a passage of the best matching field (body,
// else subject, else name) of the text the TextSource gives now, with the words of the
// query's word, phrase and prefix clauses in <mark>...</mark> and the rest HTML-escaped
// (as the bleve index's). PostgreSQL picks the passage and the words (ts_headline, one
// statement for the page); a hit keeps no snippet when its text cannot be read, or when only
// wildcard or /regexp/ clauses matched the field.
func (x *Index) snippets(ctx context.Context, db querier, tenant string, ms []*match, hits []search.Hit) {
	if x.text == nil {
		return
	}
	var texts, queries []string
	var at []int
	for i, h := range hits {
		field := ""
		for _, f := range []string{"body", "subject", "name"} {
			if slices.Contains(h.Matched, f) {
				field = f
				break
			}
		}
		var tsqs []string
		for _, m := range ms {
			if !m.c.Not && m.tsq != "" && slices.Contains(m.fields(), field) {
				tsqs = append(tsqs, m.tsq)
			}
		}
		if field == "" || len(tsqs) == 0 {
			continue
		}
		d, err := x.text(ctx, tenant, h.ID)
		if err != nil {
			continue
		}
		var text string
		switch field {
		case "body":
			text = d.Normalized().Body
		case "subject":
			text = d.Subject
		case "name":
			text = d.Name
		}
		texts, queries, at = append(texts, text), append(queries, joinQueries(tsqs, " | ")), append(at, i)
	}
	if len(texts) == 0 {
		return
	}
	norm := make([]string, len(texts))
	for i, t := range texts {
		norm[i] = normalize(t)
	}
	rows, err := db.Query(ctx, `SELECT ts_headline('english', t, q::tsquery, $3)
		FROM unnest($1::text[], $2::text[]) WITH ORDINALITY AS x(t, q, n) ORDER BY n`, norm, queries, headlineOptions)
	if err != nil {
		return
	}
	defer rows.Close()
	for i := 0; rows.Next() && i < len(at); i++ {
		var passage string
		if rows.Scan(&passage) != nil {
			return
		}
		hits[at[i]].Snippet = cut(texts[i], norm[i], passage)
	}
}

// cut finds a passage ts_headline returned (of the normalized text, with markers) in the
// normalized text and returns the same bytes of the original text, HTML-escaped, with the
// marked words in <mark>...</mark>; "" when the passage is not found.
func cut(text, norm, passage string) string {
	plain := strings.NewReplacer(string(markOpen), "", string(markClose), "").Replace(passage)
	from := strings.Index(norm, plain)
	if from < 0 || plain == "" {
		return ""
	}
	var b strings.Builder
	pos := from // the offset in text of the next byte of the passage
	for i := 0; i < len(passage); {
		j := strings.IndexAny(passage[i:], string(markOpen)+string(markClose))
		if j < 0 {
			j = len(passage) - i
		}
		b.WriteString(html.EscapeString(text[pos : pos+j]))
		pos += j
		i += j
		if i < len(passage) {
			if passage[i] == markOpen {
				b.WriteString("<mark>")
			} else {
				b.WriteString("</mark>")
			}
			i++
		}
	}
	return strings.TrimSpace(b.String())
}
