package pgsearch

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"svc.dev/svc/vault/search"
)

// textColumns are the text fields' columns, in search.Fields' order.
var textColumns = map[string]string{
	"subject": "f_subject", "from": "f_from", "to": "f_to", "cc": "f_cc", "name": "f_name", "body": "f_body",
}

// textFields are the text fields in the order hits name them (sorted).
var textFields = []string{"body", "cc", "from", "name", "subject", "to"}

// keywordColumns are the keyword fields' columns.
var keywordColumns = map[string]string{
	"type": "type", "mime_type": "mime_type", "provider": "provider", "source_id": "source_id", "state": "state",
}

// sqlArgs collects a statement's arguments.
type sqlArgs []any

func (a *sqlArgs) add(v any) string {
	*a = append(*a, v)
	return fmt.Sprintf("$%d", len(*a))
}

// match is one clause of a query, ready to be written as SQL.
type match struct {
	c search.Clause
	// tsq is the clause's tsquery (text), for word, phrase and prefix clauses on text fields;
	// empty when it holds no lexeme (stop words only).
	tsq string
	// pattern is a LIKE pattern (wildcards) or an anchored regular expression (regexp) that
	// a text field's lexeme, or a keyword field's value, must match.
	pattern string
	regexp  bool
}

// fields are the text fields a clause is matched in (none for a keyword field).
func (m *match) fields() []string {
	switch {
	case m.c.Field == "":
		return textFields
	case search.TextField(m.c.Field):
		return []string{m.c.Field}
	}
	return nil
}

// onText is the clause's predicate on one text field's column.
func (m *match) onText(col string, args *sqlArgs) string {
	if m.pattern == "" {
		return fmt.Sprintf("%s @@ %s::tsquery", col, args.add(m.tsq))
	}
	op := "LIKE"
	if m.regexp {
		op = "~"
	}
	return fmt.Sprintf("EXISTS (SELECT 1 FROM unnest(%s) u WHERE u.lexeme %s %s)", col, op, args.add(m.pattern))
}

// predicate is the clause's condition on a document.
func (m *match) predicate(args *sqlArgs) string {
	if col, ok := keywordColumns[m.c.Field]; ok {
		switch {
		case m.pattern == "":
			return fmt.Sprintf("%s = %s", col, args.add(m.c.Text))
		case m.regexp:
			return fmt.Sprintf("%s ~ %s", col, args.add(m.pattern))
		}
		return fmt.Sprintf("%s LIKE %s", col, args.add(m.pattern))
	}
	var any []string
	for _, f := range m.fields() {
		any = append(any, m.onText(textColumns[f], args))
	}
	return "(" + strings.Join(any, " OR ") + ")"
}

// compile turns a query string into matches: the same checks as bleve's index
// (search.Parse), then what PostgreSQL cannot do is refused, and the word, phrase and prefix
// clauses' tsqueries are made by the database (one round trip), so that they are analysed
// exactly as the documents were.
func compile(ctx context.Context, db querier, qs string) ([]*match, error) {
	cs, err := search.Parse(qs)
	if err != nil {
		return nil, err
	}
	var ms []*match
	var exprs []string
	var args sqlArgs
	for _, c := range cs {
		m := &match{c: c}
		keyword := c.Field != "" && !search.TextField(c.Field)
		switch c.Kind {
		case search.Fuzzy:
			return nil, fmt.Errorf("%w: fuzzy matching (~) is not supported by the PostgreSQL search index", search.ErrInvalidQuery)
		case search.Regexp:
			m.pattern, m.regexp = "^(?:"+c.Text+")$", true
		case search.Wildcard:
			if p, ok := strings.CutSuffix(c.Text, "*"); ok && !keyword && isPlainPrefix(p) {
				m.c.Kind, m.c.Text = search.Prefix, p
			} else {
				m.pattern = likePattern(c.Text)
			}
		case search.Prefix:
			if keyword || !isPlainPrefix(c.Text) {
				m.pattern = likePattern(c.Text + "*")
			}
		}
		ms = append(ms, m)
		if keyword || m.pattern != "" {
			continue
		}
		switch m.c.Kind {
		case search.Phrase:
			exprs = append(exprs, fmt.Sprintf("phraseto_tsquery('english', %s)::text", args.add(normalize(m.c.Text))))
		case search.Prefix:
			exprs = append(exprs, fmt.Sprintf("to_tsquery('simple', %s)::text", args.add("'"+m.c.Text+"':*")))
		case search.Term:
			exprs = append(exprs, fmt.Sprintf("to_tsquery('simple', %s)::text", args.add("'"+strings.ReplaceAll(m.c.Text, "'", "''")+"'")))
		default:
			exprs = append(exprs, fmt.Sprintf("plainto_tsquery('english', %s)::text", args.add(normalize(m.c.Text))))
		}
	}
	if len(exprs) == 0 {
		return ms, nil
	}
	tsqs := make([]string, len(exprs))
	dest := make([]any, len(exprs))
	for i := range tsqs {
		dest[i] = &tsqs[i]
	}
	if err := db.QueryRow(ctx, "SELECT "+strings.Join(exprs, ", "), args...).Scan(dest...); err != nil {
		return nil, fmt.Errorf("search: analyse the query: %w", err)
	}
	i := 0
	for _, m := range ms {
		if m.pattern == "" && (m.c.Field == "" || search.TextField(m.c.Field)) {
			m.tsq = tsqs[i]
			i++
		}
	}
	return ms, nil
}

// isPlainPrefix reports whether a prefix can be a tsquery prefix (lexeme:*) that matches
// exactly the lexemes starting with it: lower-case letters and digits only (a lexeme is
// lower case, and bleve's prefixes are not lower-cased either).
func isPlainPrefix(p string) bool {
	if p == "" {
		return false
	}
	for _, r := range p {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r > 0x7f && strings.ToLower(string(r)) == string(r)) {
			return false
		}
	}
	return !strings.ContainsAny(p, "*?")
}

// likePattern is a wildcard pattern (* any run, ? one character) as a LIKE pattern.
func likePattern(w string) string {
	var b strings.Builder
	for _, r := range w {
		switch r {
		case '*':
			b.WriteByte('%')
		case '?':
			b.WriteByte('_')
		case '%', '_', '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// Search runs a query on a tenant's index: the same hits, order and positions as the bleve
// index's Search, within the same cost model (search.Parse's bounds, QueryTimeout, and this
// process's slots). Result.Total is a lower bound here: the hits of the page, and one more
// when another page follows (counting every match would cost the whole match set).
func (x *Index) Search(ctx context.Context, tenant string, q search.Query) (search.Result, error) {
	if err := x.check(ctx); err != nil {
		return search.Result{}, err
	}
	limit := max(q.Limit, 1)
	var after string
	if q.After != "" {
		var err error
		if after, err = search.DecodePosition(q.After); err != nil {
			return search.Result{}, err
		}
	}
	qctx, cancel := context.WithTimeout(ctx, search.QueryTimeout)
	defer cancel()
	select {
	case x.slots <- struct{}{}:
		defer func() { <-x.slots }()
	case <-qctx.Done():
		if ctx.Err() == nil {
			return search.Result{}, search.ErrBusy
		}
		return search.Result{}, ctx.Err()
	}
	// The server stops the query too when it passes the timeout (statement_timeout), not
	// only this process (the context).
	var res search.Result
	err := pgx.BeginTxFunc(qctx, x.pool, pgx.TxOptions{AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		if _, err := tx.Exec(qctx, fmt.Sprintf("SET LOCAL statement_timeout = %d", max(statementTimeout.Milliseconds(), 1))); err != nil {
			return err
		}
		var err error
		res, err = x.search(qctx, tx, tenant, q, limit, after)
		return err
	})
	if err != nil {
		var pgErr *pgconn.PgError
		switch {
		case errors.Is(err, search.ErrInvalidQuery):
			return search.Result{}, err
		case ctx.Err() == nil && (qctx.Err() != nil || errors.As(err, &pgErr) && pgErr.Code == "57014"): // query_canceled
			return search.Result{}, fmt.Errorf("%w: it took more than %s; narrow it", search.ErrQueryTooBroad, search.QueryTimeout)
		case errors.As(err, &pgErr) && pgErr.Code == "2201B": // invalid_regular_expression
			return search.Result{}, fmt.Errorf("%w: %s", search.ErrInvalidQuery, pgErr.Message)
		}
		return search.Result{}, fmt.Errorf("search: %w", err)
	}
	return res, nil
}

// querier is what a search needs of its transaction.
type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

func (x *Index) search(ctx context.Context, db querier, tenant string, q search.Query, limit int, after string) (search.Result, error) {
	ms, err := compile(ctx, db, q.Q)
	if err != nil {
		return search.Result{}, err
	}
	out := search.Result{Hits: []search.Hit{}}
	var args sqlArgs
	where := []string{"tenant = " + args.add(tenant)}
	var positive []string // the tsqueries that make a hit (rank, snippets)
	for _, m := range ms {
		textual := m.c.Field == "" || search.TextField(m.c.Field)
		if textual && m.pattern == "" && m.tsq == "" {
			if m.c.Not {
				continue // excludes nothing, as a clause of stop words excludes nothing in bleve
			}
			return out, nil // matches nothing
		}
		if m.c.Not {
			where = append(where, "NOT "+m.predicate(&args))
			continue
		}
		where = append(where, m.predicate(&args))
		if textual && m.pattern == "" {
			positive = append(positive, m.tsq)
		}
	}
	if len(positive) > 0 {
		// Whatever a field matches, every text field together (words) matches: the GIN index
		// finds the candidates, with one condition for the planner to estimate.
		where = append(where, "words @@ "+args.add(joinQueries(positive, " & "))+"::tsquery")
	}
	if w, ok := filters(&q, &args); !ok {
		return out, nil
	} else {
		where = append(where, w...)
	}
	if after != "" {
		where = append(where, "order_key > "+args.add(after))
	}
	rank := "1.0::real"
	if len(positive) > 0 {
		rank = "ts_rank(words, " + args.add(joinQueries(positive, " & ")) + "::tsquery)"
	}
	cols := []string{"id", "order_key", rank}
	for _, f := range textFields { // which fields each hit matched
		var any []string
		for _, m := range ms {
			if !m.c.Not && slices.Contains(m.fields(), f) {
				any = append(any, m.onText(textColumns[f], &args))
			}
		}
		if len(any) == 0 {
			any = []string{"false"}
		}
		cols = append(cols, "("+strings.Join(any, " OR ")+")")
	}
	sql := fmt.Sprintf("SELECT %s FROM search_docs WHERE %s ORDER BY order_key LIMIT %d",
		strings.Join(cols, ", "), strings.Join(where, " AND "), limit+1)
	rows, err := db.Query(ctx, sql, args...)
	if err != nil {
		return out, err
	}
	defer rows.Close()
	var last string
	for rows.Next() {
		var h search.Hit
		var key string
		var score float32
		matched := make([]bool, len(textFields))
		dest := []any{&h.ID, &key, &score}
		for i := range matched {
			dest = append(dest, &matched[i])
		}
		if err := rows.Scan(dest...); err != nil {
			return out, err
		}
		if len(out.Hits) == limit {
			out.Next = search.EncodePosition(last)
			break
		}
		h.Score, h.Matched = float64(score), []string{}
		for i, ok := range matched {
			if ok {
				h.Matched = append(h.Matched, textFields[i])
			}
		}
		out.Hits, last = append(out.Hits, h), key
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return out, err
	}
	out.Total = uint64(len(out.Hits))
	if out.Next != "" {
		out.Total++
	}
	x.snippets(ctx, db, tenant, ms, out.Hits)
	return out, nil
}

// statementTimeout is the database's bound on each statement of a search: the cost model's
// (a variable for the test that shows the database enforces it).
var statementTimeout = search.QueryTimeout

// joinQueries joins tsqueries (as text) with & or |.
func joinQueries(qs []string, op string) string {
	return "(" + strings.Join(qs, ")"+op+"(") + ")"
}

// filters are the conditions of the query's filters; ok is false when they admit nothing.
func filters(q *search.Query, args *sqlArgs) (where []string, ok bool) {
	if q.Provider != "" {
		where = append(where, "provider = "+args.add(q.Provider))
	}
	switch typ := strings.ToLower(q.Type); {
	case typ == "":
	case strings.HasSuffix(typ, "/*"):
		where = append(where, "starts_with(mime_type, "+args.add(strings.TrimSuffix(typ, "*"))+")")
	case strings.Contains(typ, "/"):
		where = append(where, "mime_type = "+args.add(typ))
	default:
		where = append(where, "type = "+args.add(typ))
	}
	if !q.From.IsZero() {
		where = append(where, "date >= "+args.add(q.From.UTC()))
	}
	if !q.To.IsZero() {
		where = append(where, "date < "+args.add(q.To.UTC()))
	}
	if q.Sources != nil {
		if len(q.Sources) == 0 {
			return nil, false
		}
		where = append(where, "source_id = ANY("+args.add(q.Sources)+")")
	}
	return where, true
}
