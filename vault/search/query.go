package search

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"regexp/syntax"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/search/query"
)

// Query is one search.
type Query struct {
	// Q is the query string: words (all must match, in any text field), "phrases", -word,
	// field:value, field:"a phrase" (field one of Fields), and bleve's wildcards (inv*).
	Q string
	// Filters: zero values do not filter. From is inclusive, To exclusive; both apply to the
	// document's Date. Type is a content kind (message, file, ...) or, with a "/", a MIME
	// type; "image/*" matches every image type.
	Provider, Type string
	From, To       time.Time
	// Sources, when not nil, limits hits to objects of these sources (an empty list: none).
	Sources []string
	// Limit is the page size; After continues after a position a previous page returned.
	Limit int
	After string
}

// Hit is one matching object.
type Hit struct {
	ID      string
	Score   float64
	Matched []string // the fields that matched, sorted
	// Snippet is a passage of the best matching stored field (body, subject, name) with the
	// matched words in <mark>...</mark>; the rest of the passage is HTML-escaped. Empty when
	// only other fields matched.
	Snippet string
}

// Result is one page of hits, newest first. Next is the position after the last hit, empty
// on the last page.
type Result struct {
	Hits  []Hit
	Total uint64 // matching documents in all
	Next  string
}

// Search runs a query on a tenant's index.
func (x *Index) Search(ctx context.Context, tenant string, q Query) (Result, error) {
	root, err := parse(q.Q)
	if err != nil {
		return Result{}, err
	}
	if f := filters(&q); f != nil {
		root.AddFilter(f)
	}
	limit := max(q.Limit, 1)
	req := bleve.NewSearchRequestOptions(root, limit+1, 0, false)
	req.SortBy([]string{"order"})
	req.IncludeLocations = true // which fields matched, and where (for snippets)
	if x.text == nil {
		// No TextSource: bleve highlights the stored fields (an index opened without options
		// stores subject, name and body).
		req.Highlight = bleve.NewHighlightWithStyle("html")
		req.Highlight.Fields = []string{"body", "subject", "name"}
	}
	if q.After != "" {
		after, err := decodePosition(q.After)
		if err != nil {
			return Result{}, err
		}
		req.SetSearchAfter(after)
	}
	t, err := x.tenant(tenant)
	if err != nil {
		return Result{}, err
	}
	qctx, cancel := context.WithTimeout(ctx, QueryTimeout)
	defer cancel()
	select {
	case x.slots <- struct{}{}:
		defer func() { <-x.slots }()
	case <-qctx.Done():
		if ctx.Err() == nil {
			return Result{}, ErrBusy
		}
		return Result{}, ctx.Err()
	}
	t.mu.RLock()
	res, err := t.idx.SearchInContext(qctx, req)
	t.mu.RUnlock()
	if err != nil {
		if ctx.Err() == nil && qctx.Err() != nil {
			return Result{}, fmt.Errorf("%w: it took more than %s; narrow it", ErrQueryTooBroad, QueryTimeout)
		}
		return Result{}, fmt.Errorf("search: %w", err)
	}
	out := Result{Total: res.Total, Hits: make([]Hit, 0, min(len(res.Hits), limit))}
	for i, h := range res.Hits {
		if i == limit {
			out.Next = encodePosition(res.Hits[i-1].Sort)
			break
		}
		hit := Hit{ID: h.ID, Score: h.Score, Matched: []string{}}
		for f := range h.Locations {
			hit.Matched = append(hit.Matched, f)
		}
		sort.Strings(hit.Matched)
		if x.text != nil {
			hit.Snippet = x.snippet(ctx, tenant, h.ID, h.Locations)
		} else {
			for _, f := range []string{"body", "subject", "name"} {
				if frags := h.Fragments[f]; len(frags) > 0 {
					hit.Snippet = strings.TrimSpace(frags[0])
					break
				}
			}
		}
		out.Hits = append(out.Hits, hit)
	}
	return out, nil
}

// parse turns a query string into a boolean query with mail-search semantics: bleve's
// optional clauses become required (every word must match), and an unfielded clause matches
// in any text field. Fields outside Fields are refused.
func parse(qs string) (*query.BooleanQuery, error) {
	cs, err := clauses(qs)
	if err != nil {
		return nil, err
	}
	var must, not []query.Query
	for _, c := range cs {
		e, err := expand(c.q)
		if err != nil {
			return nil, err
		}
		if c.not {
			not = append(not, e)
		} else {
			must = append(must, e)
		}
	}
	if len(must) == 0 {
		// Only exclusions: they narrow everything.
		must = append(must, query.NewMatchAllQuery())
	}
	return query.NewBooleanQuery(must, nil, not), nil
}

// clause is one clause of a query string as bleve parsed it, and whether it excludes.
type clause struct {
	q   query.Query
	not bool
}

// clauses parses a query string and checks it against the cost model and Fields: every
// index (bleve's, pgsearch's) accepts and refuses the same queries up to here.
func clauses(qs string) ([]clause, error) {
	if strings.TrimSpace(qs) == "" {
		return nil, fmt.Errorf("%w: the query is empty", ErrInvalidQuery)
	}
	if len(qs) > MaxQueryBytes {
		return nil, fmt.Errorf("%w: the query is longer than %d bytes", ErrInvalidQuery, MaxQueryBytes)
	}
	parsed, err := query.NewQueryStringQuery(qs).Parse()
	if err != nil {
		return nil, fmt.Errorf("%w: %s", ErrInvalidQuery, firstLine(err.Error()))
	}
	b, ok := parsed.(*query.BooleanQuery)
	if !ok {
		return nil, fmt.Errorf("%w: unsupported query", ErrInvalidQuery)
	}
	var out []clause
	clauseCount, expansions := 0, 0
	for _, part := range []struct {
		q   query.Query
		not bool
	}{{b.Must, false}, {b.Should, false}, {b.MustNot, true}} {
		var cs []query.Query
		switch c := part.q.(type) {
		case nil:
		case *query.ConjunctionQuery:
			cs = c.Conjuncts
		case *query.DisjunctionQuery:
			cs = c.Disjuncts
		default:
			return nil, fmt.Errorf("%w: unsupported query", ErrInvalidQuery)
		}
		for _, c := range cs {
			if clauseCount++; clauseCount > MaxClauses {
				return nil, fmt.Errorf("%w: more than %d words or clauses; narrow the query", ErrInvalidQuery, MaxClauses)
			}
			if err := checkExpansion(c, &expansions); err != nil {
				return nil, err
			}
			if _, err := expand(c); err != nil { // the field, fuzziness and pattern checks
				return nil, err
			}
			out = append(out, clause{c, part.not})
		}
	}
	return out, nil
}

// expand checks a clause's field, makes multi-word values need every word, and turns an
// unfielded clause into the same clause on every text field.
func expand(c query.Query) (query.Query, error) {
	f, ok := c.(query.FieldableQuery)
	if !ok {
		return nil, fmt.Errorf("%w: unsupported query", ErrInvalidQuery)
	}
	if f.Field() != "" {
		if !slices.Contains(Fields, f.Field()) {
			return nil, fmt.Errorf("%w: unknown field %q (fields: %s)", ErrInvalidQuery, f.Field(), strings.Join(Fields, ", "))
		}
		return fielded(f, f.Field())
	}
	any := make([]query.Query, 0, len(textFields))
	for _, name := range textFields {
		q, err := fielded(f, name)
		if err != nil {
			return nil, err
		}
		any = append(any, q)
	}
	return query.NewDisjunctionQuery(any), nil
}

// fielded returns a copy of a clause on a field.
func fielded(c query.FieldableQuery, field string) (query.Query, error) {
	var out query.FieldableQuery
	switch q := c.(type) {
	case *query.MatchQuery:
		if q.Fuzziness > maxFuzziness {
			return nil, fmt.Errorf("%w: ~%d: at most ~%d edits", ErrInvalidQuery, q.Fuzziness, maxFuzziness)
		}
		cp := *q
		cp.Operator = query.MatchQueryOperatorAnd
		out = &cp
	case *query.MatchPhraseQuery:
		if q.Fuzziness > maxFuzziness {
			return nil, fmt.Errorf("%w: ~%d: at most ~%d edits", ErrInvalidQuery, q.Fuzziness, maxFuzziness)
		}
		cp := *q
		out = &cp
	case *query.WildcardQuery:
		cp := *q
		out = &cp
	case *query.RegexpQuery:
		if err := checkRegexp(q.Regexp); err != nil {
			return nil, err
		}
		cp := *q
		out = &cp
	case *query.FuzzyQuery:
		if q.Fuzziness > maxFuzziness {
			return nil, fmt.Errorf("%w: ~%d: at most ~%d edits", ErrInvalidQuery, q.Fuzziness, maxFuzziness)
		}
		cp := *q
		out = &cp
	case *query.PrefixQuery:
		cp := *q
		out = &cp
	case *query.TermQuery:
		cp := *q
		out = &cp
	default:
		return nil, fmt.Errorf("%w: ranges and other operators are not supported; use the from and to parameters", ErrInvalidQuery)
	}
	out.SetField(field)
	return out, nil
}

// filters are the query's filters as one query, nil when there are none.
func filters(q *Query) query.Query {
	var fs []query.Query
	term := func(field, v string) query.Query {
		t := query.NewTermQuery(v)
		t.SetField(field)
		return t
	}
	if q.Provider != "" {
		fs = append(fs, term("provider", q.Provider))
	}
	switch typ := strings.ToLower(q.Type); {
	case typ == "":
	case strings.HasSuffix(typ, "/*"):
		p := query.NewPrefixQuery(strings.TrimSuffix(typ, "*"))
		p.SetField("mime_type")
		fs = append(fs, p)
	case strings.Contains(typ, "/"):
		fs = append(fs, term("mime_type", typ))
	default:
		fs = append(fs, term("type", typ))
	}
	if !q.From.IsZero() || !q.To.IsZero() {
		inclusive, exclusive := true, false
		r := query.NewDateRangeInclusiveQuery(q.From.UTC(), q.To.UTC(), &inclusive, &exclusive)
		r.SetField("date")
		fs = append(fs, r)
	}
	if q.Sources != nil {
		if len(q.Sources) == 0 {
			fs = append(fs, query.NewMatchNoneQuery())
		} else {
			any := make([]query.Query, len(q.Sources))
			for i, s := range q.Sources {
				any[i] = term("source_id", s)
			}
			fs = append(fs, query.NewDisjunctionQuery(any))
		}
	}
	switch len(fs) {
	case 0:
		return nil
	case 1:
		return fs[0]
	}
	return query.NewConjunctionQuery(fs)
}

// A position is the last hit's sort values (its order key), base64url-encoded in a JSON array.
func encodePosition(sortValues []string) string {
	enc := make([]string, len(sortValues))
	for i, v := range sortValues {
		enc[i] = base64.RawURLEncoding.EncodeToString([]byte(v))
	}
	b, _ := json.Marshal(enc)
	return string(b)
}

func decodePosition(s string) ([]string, error) {
	var enc []string
	if err := json.Unmarshal([]byte(s), &enc); err != nil || len(enc) != 1 {
		return nil, ErrInvalidPosition
	}
	out := make([]string, len(enc))
	for i, v := range enc {
		b, err := base64.RawURLEncoding.DecodeString(v)
		if err != nil {
			return nil, ErrInvalidPosition
		}
		out[i] = string(b)
	}
	return out, nil
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// Bounds of a query's patterns: what the index can expand without a cost out of proportion to
// the request (fuzziness beyond 2 edits is refused by the index itself).
const (
	maxFuzziness    = 2
	maxRegexpLength = 100
	maxRegexpRepeat = 32
)

// checkRegexp refuses a /regexp/ that does not parse, is long, or repeats a part more than
// maxRegexpRepeat times (such patterns compile to automata too large to run).
func checkRegexp(re string) error {
	if len(re) > maxRegexpLength {
		return fmt.Errorf("%w: the pattern is longer than %d characters", ErrInvalidQuery, maxRegexpLength)
	}
	t, err := syntax.Parse(re, syntax.Perl)
	if err != nil {
		return fmt.Errorf("%w: /%s/: %s", ErrInvalidQuery, re, firstLine(err.Error()))
	}
	var walk func(*syntax.Regexp) error
	walk = func(r *syntax.Regexp) error {
		if r.Op == syntax.OpRepeat && (r.Max > maxRegexpRepeat || r.Min > maxRegexpRepeat) {
			return fmt.Errorf("%w: /%s/ repeats a part more than %d times", ErrInvalidQuery, re, maxRegexpRepeat)
		}
		for _, sub := range r.Sub {
			if err := walk(sub); err != nil {
				return err
			}
		}
		return nil
	}
	return walk(t)
}

// The cost model of a query (docs/search.md): what one query may ask of the index, so that no
// request (an anonymous key's, say) can take the server's memory or its cores. A query over
// these bounds is refused with a problem on q that says which.
const (
	// MaxQueryBytes bounds a query's text.
	MaxQueryBytes = 512
	// MaxClauses bounds its words and clauses.
	MaxClauses = 16
	// MaxExpansions bounds its wildcard, prefix, fuzzy and regexp clauses: each is expanded
	// against every term of the index's text fields.
	MaxExpansions = 4
	// minLiteral is how many literal characters an expanding clause needs ("in*", not "*").
	minLiteral = 2
	// QueryTimeout bounds the time one query may take.
	QueryTimeout = 5 * time.Second
)

// ErrBusy is returned when a query waited its whole time for one of the slots queries run
// in (half the cores): the index is busy with other queries; retry later.
var ErrBusy = errors.New("search: busy with other queries")

// ErrQueryTooBroad is returned (it wraps ErrInvalidQuery) when a query asks more of the index
// than its cost model allows.
var ErrQueryTooBroad = fmt.Errorf("%w: too broad", ErrInvalidQuery)

// checkExpansion counts a clause that expands over the index's terms and refuses one that
// would match nearly every term.
func checkExpansion(c query.Query, n *int) error {
	var literal string
	switch q := c.(type) {
	case *query.WildcardQuery:
		literal = strings.NewReplacer("*", "", "?", "").Replace(q.Wildcard)
	case *query.PrefixQuery:
		literal = q.Prefix
	case *query.RegexpQuery:
		literal = regexpLiteral(q.Regexp)
	case *query.FuzzyQuery:
		literal = q.Term
	case *query.MatchQuery:
		if q.Fuzziness == 0 {
			return nil
		}
		literal = q.Match
	default:
		return nil
	}
	if *n++; *n > MaxExpansions {
		return fmt.Errorf("%w: more than %d wildcard, prefix, fuzzy or /regexp/ clauses", ErrQueryTooBroad, MaxExpansions)
	}
	if len([]rune(literal)) < minLiteral {
		return fmt.Errorf("%w: a wildcard, fuzzy or /regexp/ clause needs at least %d literal characters", ErrQueryTooBroad, minLiteral)
	}
	return nil
}

// regexpLiteral is the literal characters of a pattern (what it must match as written).
func regexpLiteral(re string) string {
	t, err := syntax.Parse(re, syntax.Perl)
	if err != nil {
		return ""
	}
	var b strings.Builder
	var walk func(*syntax.Regexp)
	walk = func(r *syntax.Regexp) {
		if r.Op == syntax.OpLiteral {
			b.WriteString(string(r.Rune))
		}
		if r.Op == syntax.OpConcat || r.Op == syntax.OpCapture {
			for _, sub := range r.Sub {
				walk(sub)
			}
		}
	}
	walk(t)
	return b.String()
}
