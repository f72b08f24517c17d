package search

import (
	"fmt"
	"slices"

	"github.com/blevesearch/bleve/v2/search/query"
)

// ClauseKind is what a clause of a query asks for.
type ClauseKind int

// The kinds of clauses a query string holds.
const (
	// Words: every word of Text (analysed: lower-cased, stop words dropped, stemmed).
	Words ClauseKind = iota + 1
	// Phrase: the words of Text, next to each other in this order.
	Phrase
	// Term: Text as it is, not analysed (a keyword field's whole value, say).
	Term
	// Prefix: a term that starts with Text.
	Prefix
	// Wildcard: a term matching Text, where * is any run of characters and ? one character.
	Wildcard
	// Regexp: a term matching the regular expression Text, whole.
	Regexp
	// Fuzzy: a term within Fuzziness edits of Text (also Words and Phrase with a ~N).
	Fuzzy
)

// Clause is one clause of a query, as Parse returns it to an index other than bleve's.
type Clause struct {
	// Field is one of Fields, or "" for any text field.
	Field string
	Kind  ClauseKind
	Text  string
	// Fuzziness is the edits a Fuzzy clause allows (1 or 2).
	Fuzziness int
	// Not excludes what the clause matches (-word).
	Not bool
}

// TextField reports whether a field is a text field (analysed words, searched by unfielded
// clauses), as opposed to a keyword field (matched whole).
func TextField(name string) bool { return slices.Contains(textFields, name) }

// Parse checks a query string as Search does (the syntax, Fields, the cost model: length,
// clauses, expansions and patterns) and returns its clauses: every clause must match, except
// those with Not, which must not. It is how another index (pgsearch) speaks the same query
// language; an error wraps ErrInvalidQuery and says what is wrong.
func Parse(qs string) ([]Clause, error) {
	cs, err := clauses(qs)
	if err != nil {
		return nil, err
	}
	out := make([]Clause, 0, len(cs))
	for _, c := range cs {
		f, ok := c.q.(query.FieldableQuery)
		if !ok {
			return nil, fmt.Errorf("%w: unsupported query", ErrInvalidQuery)
		}
		cl := Clause{Field: f.Field(), Not: c.not}
		switch q := c.q.(type) {
		case *query.MatchQuery:
			cl.Kind, cl.Text, cl.Fuzziness = Words, q.Match, q.Fuzziness
		case *query.MatchPhraseQuery:
			cl.Kind, cl.Text, cl.Fuzziness = Phrase, q.MatchPhrase, q.Fuzziness
		case *query.TermQuery:
			cl.Kind, cl.Text = Term, q.Term
		case *query.PrefixQuery:
			cl.Kind, cl.Text = Prefix, q.Prefix
		case *query.WildcardQuery:
			cl.Kind, cl.Text = Wildcard, q.Wildcard
		case *query.RegexpQuery:
			cl.Kind, cl.Text = Regexp, q.Regexp
		case *query.FuzzyQuery:
			cl.Kind, cl.Text, cl.Fuzziness = Fuzzy, q.Term, q.Fuzziness
		default:
			return nil, fmt.Errorf("%w: unsupported query", ErrInvalidQuery)
		}
		if cl.Fuzziness > 0 {
			cl.Kind = Fuzzy
		}
		out = append(out, cl)
	}
	return out, nil
}

// Normalized is the document as an index keeps it: the body clipped to MaxBodyBytes, the
// MIME type without parameters in lower case, the date in UTC.
func (d Doc) Normalized() Doc {
	d.Body = clip(d.Body, MaxBodyBytes)
	d.MIMEType = mediaType(d.MIMEType)
	d.Date = d.Date.UTC()
	return d
}

// OrderKey is the document's place in results: newest first (by Date), then by ID
// descending, as one string that sorts ascending (bytewise). Positions (Query.After,
// Result.Next) are order keys encoded by EncodePosition, whichever index made them.
func (d Doc) OrderKey() string { return orderKey(&d) }

// EncodePosition is the position after a hit with the order key given (Result.Next).
func EncodePosition(orderKey string) string { return encodePosition([]string{orderKey}) }

// DecodePosition returns the order key of a position; an error wraps ErrInvalidPosition.
func DecodePosition(pos string) (string, error) {
	v, err := decodePosition(pos)
	if err != nil {
		return "", err
	}
	return v[0], nil
}

// Changes are updates of several tenants' indexes, applied together by an index that keeps
// its own place in the vault's change feed (pgsearch's Follow).
type Changes struct {
	// Put adds or replaces documents, by tenant.
	Put map[string][]Doc
	// Remove deletes documents by id, by tenant.
	Remove map[string][]string
}
