package dropbox_test

import (
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// A reader of the stone language (the Dropbox API spec's), for the subset
// of it that testdata/stone/subset.stone uses: structs with fields,
// defaults, "extends" and enumerated subtypes; unions (open and closed, with
// "extends"); aliases. Doc strings, examples and annotations are skipped.

type stoneDef struct {
	ns, kind, name, base string // kind: struct, union, alias
	fields               []stoneField
	subtypes             []stoneField // a struct's enumerated subtypes
	alias                string
}

type stoneField struct {
	name, typ  string
	hasDefault bool
}

type stone map[string]*stoneDef // by "ns.Name"

func loadStone(path string) (stone, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	st := stone{}
	ns := ""
	var cur *stoneDef
	inDoc, inExample, inSubtypes := false, false, false
	for _, line := range strings.Split(string(b), "\n") {
		s := strings.TrimSpace(line)
		indent := len(line) - len(strings.TrimLeft(line, " "))
		switch {
		case inDoc:
			if strings.HasSuffix(s, `"`) && !strings.HasSuffix(s, `\"`) {
				inDoc = false
			}
			continue
		case strings.HasPrefix(s, `"`):
			if len(s) == 1 || !strings.HasSuffix(s, `"`) || strings.HasSuffix(s, `\"`) {
				inDoc = true
			}
			continue
		case s == "" || strings.HasPrefix(s, "#") || strings.HasPrefix(s, "@"):
			continue
		}
		if indent == 0 {
			inExample, inSubtypes, cur = false, false, nil
			f := strings.Fields(s)
			switch f[0] {
			case "namespace":
				ns = f[1]
			case "struct", "union", "union_closed":
				cur = &stoneDef{ns: ns, kind: strings.TrimSuffix(f[0], "_closed"), name: f[1]}
				if len(f) == 4 && f[2] == "extends" {
					cur.base = f[3]
				}
				st[ns+"."+cur.name] = cur
			case "alias":
				_, rhs, _ := strings.Cut(s, "=")
				cur = &stoneDef{ns: ns, kind: "alias", name: f[1], alias: strings.TrimSpace(rhs)}
				st[ns+"."+cur.name] = cur
			default:
				return nil, fmt.Errorf("stone: unexpected %q", s)
			}
			continue
		}
		if cur == nil {
			continue
		}
		if indent == 4 {
			inExample, inSubtypes = false, false
			switch {
			case strings.HasPrefix(s, "example "):
				inExample = true
				continue
			case s == "union" || s == "union_closed":
				inSubtypes = true
				continue
			}
			name, rest, _ := strings.Cut(s, " ")
			typ, def := splitDefault(strings.TrimSpace(rest))
			if typ == "" {
				typ = "Void"
			}
			cur.fields = append(cur.fields, stoneField{name: name, typ: typ, hasDefault: def})
			continue
		}
		if inSubtypes && indent == 8 {
			name, typ, _ := strings.Cut(s, " ")
			cur.subtypes = append(cur.subtypes, stoneField{name: name, typ: strings.TrimSpace(typ)})
		}
		_ = inExample
	}
	return st, nil
}

// splitDefault splits "Type = default" at a top-level "=".
func splitDefault(s string) (string, bool) {
	depth, quoted := 0, false
	for i, r := range s {
		switch {
		case r == '"':
			quoted = !quoted
		case quoted:
		case r == '(':
			depth++
		case r == ')':
			depth--
		case r == '=' && depth == 0:
			return strings.TrimSpace(s[:i]), true
		}
	}
	return s, false
}

func (st stone) lookup(ns, name string) *stoneDef {
	if strings.Contains(name, ".") {
		return st[name]
	}
	return st[ns+"."+name]
}

// fieldsOf returns a struct's fields, its bases' first.
func (st stone) fieldsOf(d *stoneDef) []stoneField {
	var out []stoneField
	if d.base != "" {
		if b := st.lookup(d.ns, d.base); b != nil {
			out = st.fieldsOf(b)
		}
	}
	return append(out, d.fields...)
}

func (st stone) member(d *stoneDef, tag string) (stoneField, *stoneDef, bool) {
	for u := d; u != nil; {
		for _, f := range u.fields {
			if f.name == tag {
				return f, u, true
			}
		}
		if u.base == "" {
			break
		}
		u = st.lookup(u.ns, u.base)
	}
	return stoneField{}, nil, false
}

// args splits "Name(a, b=c)" into Name and its top-level arguments.
func args(typ string) (string, []string) {
	name, rest, ok := strings.Cut(typ, "(")
	if !ok {
		return typ, nil
	}
	rest = strings.TrimSuffix(rest, ")")
	var out []string
	depth, quoted, start := 0, false, 0
	for i, r := range rest {
		switch {
		case r == '"' && (i == 0 || rest[i-1] != '\\'):
			quoted = !quoted
		case quoted:
		case r == '(':
			depth++
		case r == ')':
			depth--
		case r == ',' && depth == 0:
			out = append(out, strings.TrimSpace(rest[start:i]))
			start = i + 1
		}
	}
	return name, append(out, strings.TrimSpace(rest[start:]))
}

func kwarg(as []string, key string) (string, bool) {
	for _, a := range as {
		if v, ok := strings.CutPrefix(a, key+"="); ok {
			if u, err := strconv.Unquote(v); err == nil {
				return u, true
			}
			return v, true
		}
	}
	return "", false
}

var strftime = strings.NewReplacer("%Y", "2006", "%m", "01", "%d", "02", "%H", "15", "%M", "04", "%S", "05")

// check reports every way v (decoded with UseNumber) departs from the stone
// type typ, read in namespace ns.
func (st stone) check(v any, typ, ns, at string) []string {
	nullable := strings.HasSuffix(typ, "?")
	typ = strings.TrimSuffix(typ, "?")
	if v == nil {
		if nullable {
			return nil
		}
		return []string{at + ": null for " + typ}
	}
	bad := func(why string) []string { return []string{fmt.Sprintf("%s: %v (%T): %s", at, v, v, why)} }
	name, as := args(typ)
	switch name {
	case "String":
		s, ok := v.(string)
		if !ok {
			return bad("not a String")
		}
		if n, ok := kwarg(as, "min_length"); ok {
			if k, _ := strconv.Atoi(n); len(s) < k {
				return bad("shorter than " + n)
			}
		}
		if n, ok := kwarg(as, "max_length"); ok {
			if k, _ := strconv.Atoi(n); len(s) > k {
				return bad("longer than " + n)
			}
		}
		if p, ok := kwarg(as, "pattern"); ok {
			if !regexp.MustCompile(`^(?:` + p + `)$`).MatchString(s) {
				return bad("does not match " + p)
			}
		}
		return nil
	case "UInt64", "UInt32", "Int64", "Int32":
		n, ok := v.(json.Number)
		k, err := n.Int64()
		if !ok || err != nil || (strings.HasPrefix(name, "U") && k < 0) {
			return bad("not a " + name)
		}
		return nil
	case "Float64", "Float32":
		if _, ok := v.(json.Number); !ok {
			return bad("not a number")
		}
		return nil
	case "Boolean":
		if _, ok := v.(bool); !ok {
			return bad("not a Boolean")
		}
		return nil
	case "Timestamp":
		s, _ := v.(string)
		layout, _ := strconv.Unquote(as[0])
		if _, err := time.Parse(strftime.Replace(layout), s); err != nil {
			return bad("not a Timestamp " + layout)
		}
		return nil
	case "List":
		list, ok := v.([]any)
		if !ok {
			return bad("not a List")
		}
		var errs []string
		for i, e := range list {
			errs = append(errs, st.check(e, as[0], ns, fmt.Sprintf("%s[%d]", at, i))...)
		}
		return errs
	case "Void":
		return bad("a value for Void")
	}
	d := st.lookup(ns, name)
	if d == nil {
		return []string{at + ": type " + typ + " is not in the spec subset"}
	}
	switch d.kind {
	case "alias":
		return st.check(v, d.alias, d.ns, at)
	case "struct":
		obj, ok := v.(map[string]any)
		if !ok {
			return bad("not a struct " + d.name)
		}
		return st.checkStruct(obj, d, at, false)
	}
	return st.checkUnion(v, d, at)
}

func (st stone) checkStruct(obj map[string]any, d *stoneDef, at string, tagged bool) []string {
	if len(d.subtypes) > 0 {
		tag, _ := obj[".tag"].(string)
		for _, sub := range d.subtypes {
			if sub.name == tag {
				return st.checkStruct(obj, st.lookup(d.ns, sub.typ), at, true)
			}
		}
		return []string{fmt.Sprintf("%s: .tag %q is not a subtype of %s", at, tag, d.name)}
	}
	fields := st.fieldsOf(d)
	var errs []string
	for k, val := range obj {
		if k == ".tag" && tagged {
			continue
		}
		found := false
		for _, f := range fields {
			if f.name == k {
				found = true
				errs = append(errs, st.check(val, f.typ, d.ns, at+"."+k)...)
			}
		}
		if !found {
			errs = append(errs, fmt.Sprintf("%s: %s has no field %q", at, d.name, k))
		}
	}
	for _, f := range fields {
		if _, ok := obj[f.name]; !ok && !strings.HasSuffix(f.typ, "?") && !f.hasDefault {
			errs = append(errs, fmt.Sprintf("%s: required field %s.%s missing", at, d.name, f.name))
		}
	}
	return errs
}

func (st stone) checkUnion(v any, d *stoneDef, at string) []string {
	var tag string
	obj, isObj := v.(map[string]any)
	if s, ok := v.(string); ok {
		tag = s
	} else if isObj {
		tag, _ = obj[".tag"].(string)
	}
	f, owner, ok := st.member(d, tag)
	if !ok {
		return []string{fmt.Sprintf("%s: %q is not a member of union %s", at, tag, d.name)}
	}
	at += "/" + tag
	if f.typ == "Void" {
		if isObj && len(obj) != 1 {
			return []string{at + ": a void member with fields"}
		}
		return nil
	}
	if !isObj {
		if strings.HasSuffix(f.typ, "?") {
			return nil
		}
		return []string{at + ": member needs a value"}
	}
	name, _ := args(strings.TrimSuffix(f.typ, "?"))
	if sd := st.lookup(owner.ns, name); sd != nil && sd.kind == "struct" {
		// A struct member's fields are inlined beside .tag.
		return st.checkStruct(obj, sd, at, true)
	}
	val, present := obj[tag]
	if !present {
		if strings.HasSuffix(f.typ, "?") {
			return nil
		}
		return []string{at + ": member value missing"}
	}
	if len(obj) != 2 {
		return []string{at + ": extra keys beside .tag and the value"}
	}
	return st.check(val, f.typ, owner.ns, at)
}
