package drive

import (
	"fmt"
	"slices"
	"strings"
)

// query is a parsed q: the clauses the fake understands, joined by "and".
type query []func(*file) bool

// parseQuery parses the part of Drive's query language the fake serves:
// "trashed = true|false", "mimeType = / != 'TYPE'", "name = 'NAME'" and
// "'ID' in parents", joined by "and". String literals are single-quoted
// with \' and \\ escapes, as Drive's documentation says.
func parseQuery(q string) (query, error) {
	var out query
	toks, err := tokens(q)
	if err != nil {
		return nil, err
	}
	for len(toks) > 0 {
		var c []string
		if i := slices.Index(toks, "and"); i >= 0 {
			c, toks = toks[:i], toks[i+1:]
		} else {
			c, toks = toks, nil
		}
		m, err := clause(c)
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, nil
}

// clause parses one comparison; string literals come as "'" + value.
func clause(c []string) (func(*file) bool, error) {
	lit := func(t string) (string, bool) { return strings.CutPrefix(t, "'") }
	switch {
	case len(c) == 3 && c[0] == "trashed" && c[1] == "=" && (c[2] == "true" || c[2] == "false"):
		want := c[2] == "true"
		return func(f *file) bool { return f.trashed == want }, nil
	case len(c) == 3 && c[0] == "mimeType" && (c[1] == "=" || c[1] == "!="):
		v, ok := lit(c[2])
		if !ok {
			break
		}
		eq := c[1] == "="
		return func(f *file) bool { return (f.mime == v) == eq }, nil
	case len(c) == 3 && c[0] == "name" && c[1] == "=":
		v, ok := lit(c[2])
		if !ok {
			break
		}
		return func(f *file) bool { return f.name == v }, nil
	case len(c) == 3 && c[1] == "in" && c[2] == "parents":
		v, ok := lit(c[0])
		if !ok {
			break
		}
		return func(f *file) bool { return slices.Contains(f.parents, v) }, nil
	}
	return nil, fmt.Errorf("unsupported clause %q", strings.Join(c, " "))
}

// tokens splits a query into words, operators and string literals (each
// literal as "'" + its unescaped value).
func tokens(q string) ([]string, error) {
	var out []string
	for i := 0; i < len(q); {
		switch c := q[i]; {
		case c == ' ':
			i++
		case c == '\'':
			var b strings.Builder
			i++
			for ; i < len(q) && q[i] != '\''; i++ {
				if q[i] == '\\' && i+1 < len(q) {
					i++
				}
				b.WriteByte(q[i])
			}
			if i == len(q) {
				return nil, fmt.Errorf("unterminated string in %q", q)
			}
			i++
			out = append(out, "'"+b.String())
		case c == '=':
			out = append(out, "=")
			i++
		case c == '!' && i+1 < len(q) && q[i+1] == '=':
			out = append(out, "!=")
			i += 2
		default:
			j := i
			for j < len(q) && q[j] != ' ' && q[j] != '=' && q[j] != '!' && q[j] != '\'' {
				j++
			}
			if j == i {
				return nil, fmt.Errorf("unexpected %q in %q", q[i], q)
			}
			out = append(out, q[i:j])
			i = j
		}
	}
	return out, nil
}

func matches(q query, f *file) bool {
	for _, m := range q {
		if !m(f) {
			return false
		}
	}
	return true
}
