package graph_test

import (
	"encoding/base64"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"
)

// schema is the part of Graph's CSDL (testdata/graph-v1.0-subset.csdl.xml)
// a shape is checked against.
type schema struct {
	types map[string]*edmType
	terms map[string]edmTerm // instance annotation terms by name
}

type edmType struct {
	Kind     string // EntityType, ComplexType, EnumType
	Name     string `xml:"Name,attr"`
	BaseType string `xml:"BaseType,attr"`
	OpenType bool   `xml:"OpenType,attr"`
	Props    []struct {
		Name     string `xml:"Name,attr"`
		Type     string `xml:"Type,attr"`
		Nullable string `xml:"Nullable,attr"`
	} `xml:",any"`
}

type edmTerm struct {
	Name      string `xml:"Name,attr"`
	Type      string `xml:"Type,attr"`
	AppliesTo string `xml:"AppliesTo,attr"`
}

func loadSchema(path string) (*schema, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var doc struct {
		Schema struct {
			Entities []edmType `xml:"EntityType"`
			Complex  []edmType `xml:"ComplexType"`
			Enums    []edmType `xml:"EnumType"`
			Terms    []edmTerm `xml:"Term"`
		} `xml:"DataServices>Schema"`
	}
	if err := xml.Unmarshal(b, &doc); err != nil {
		return nil, err
	}
	s := &schema{types: map[string]*edmType{}, terms: map[string]edmTerm{}}
	for kind, list := range map[string][]edmType{"EntityType": doc.Schema.Entities, "ComplexType": doc.Schema.Complex, "EnumType": doc.Schema.Enums} {
		for i := range list {
			t := list[i]
			t.Kind = kind
			s.types[t.Name] = &t
		}
	}
	for _, t := range doc.Schema.Terms {
		s.terms[t.Name] = t
	}
	return s, nil
}

func local(t string) string {
	t = strings.TrimPrefix(t, "graph.")
	return strings.TrimPrefix(t, "microsoft.graph.")
}

// property finds a property of a type or its bases.
func (s *schema) property(typ, name string) (ptype string, nullable bool, ok bool) {
	for t := s.types[typ]; t != nil; t = s.types[local(t.BaseType)] {
		for _, p := range t.Props {
			if p.Name == name && p.Type != "" {
				return p.Type, p.Nullable != "false", true
			}
		}
	}
	return "", false, false
}

func (s *schema) isA(typ, base string) bool {
	for t := s.types[typ]; t != nil; t = s.types[local(t.BaseType)] {
		if t.Name == base {
			return true
		}
	}
	return false
}

// controlInfo are the OData JSON format's control annotations (OData JSON
// Format 4.01, section 4.5) Graph emits on entities, and "@removed", the
// delta query's annotation on an entity that left the collection.
var controlInfo = []string{"@odata.type", "@odata.etag", "@odata.id", "@removed"}

// check reports every way v (decoded with UseNumber) departs from the
// EDM type typ ("graph.message", "Collection(Edm.String)", ...).
func (s *schema) check(v any, typ, at string, nullable bool) []string {
	if v == nil {
		if nullable {
			return nil
		}
		return []string{at + ": null for a non-nullable " + typ}
	}
	if inner, ok := strings.CutPrefix(typ, "Collection("); ok {
		inner = strings.TrimSuffix(inner, ")")
		list, ok := v.([]any)
		if !ok {
			return []string{fmt.Sprintf("%s: %T for %s", at, v, typ)}
		}
		var errs []string
		for i, e := range list {
			errs = append(errs, s.check(e, inner, fmt.Sprintf("%s[%d]", at, i), false)...)
		}
		return errs
	}
	bad := func() []string { return []string{fmt.Sprintf("%s: %v (%T) is not %s", at, v, v, typ)} }
	switch typ {
	case "Edm.String", "Edm.Guid":
		if _, ok := v.(string); !ok {
			return bad()
		}
		return nil
	case "Edm.Binary":
		str, ok := v.(string)
		if _, err := base64.StdEncoding.DecodeString(str); !ok || err != nil {
			if _, err := base64.RawURLEncoding.DecodeString(str); err != nil {
				return bad()
			}
		}
		return nil
	case "Edm.Boolean":
		if _, ok := v.(bool); !ok {
			return bad()
		}
		return nil
	case "Edm.Int16", "Edm.Int32", "Edm.Int64", "Edm.Byte":
		n, ok := v.(json.Number)
		if _, err := n.Int64(); !ok || err != nil {
			return bad()
		}
		return nil
	case "Edm.Double", "Edm.Single", "Edm.Decimal":
		if _, ok := v.(json.Number); !ok {
			return bad()
		}
		return nil
	case "Edm.DateTimeOffset":
		str, _ := v.(string)
		if _, err := time.Parse(time.RFC3339Nano, str); err != nil {
			return bad()
		}
		return nil
	case "Edm.Date":
		str, _ := v.(string)
		if _, err := time.Parse("2006-01-02", str); err != nil {
			return bad()
		}
		return nil
	}
	t := s.types[local(typ)]
	if t == nil {
		return []string{at + ": type " + typ + " is not in the schema subset"}
	}
	if t.Kind == "EnumType" {
		str, _ := v.(string)
		if !slices.ContainsFunc(t.Props, func(p struct {
			Name     string `xml:"Name,attr"`
			Type     string `xml:"Type,attr"`
			Nullable string `xml:"Nullable,attr"`
		}) bool {
			return p.Name == str
		}) {
			return []string{fmt.Sprintf("%s: %q is not a member of %s", at, str, typ)}
		}
		return nil
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return bad()
	}
	var errs []string
	for k, val := range obj {
		path := at + "." + k
		if strings.Contains(k, "@") {
			errs = append(errs, s.checkAnnotation(t.Name, k, val, path)...)
			continue
		}
		ptype, pnull, ok := s.property(t.Name, k)
		if !ok {
			errs = append(errs, path+": no property "+k+" in "+typ)
			continue
		}
		errs = append(errs, s.check(val, ptype, path, pnull)...)
	}
	return errs
}

func (s *schema) checkAnnotation(typ, k string, val any, path string) []string {
	if slices.Contains(controlInfo, k) {
		if k == "@odata.type" {
			str, _ := val.(string)
			if !s.isA(local(strings.TrimPrefix(str, "#")), typ) {
				return []string{fmt.Sprintf("%s: %q is not %s", path, str, typ)}
			}
		}
		return nil
	}
	name, ok := strings.CutPrefix(k, "@microsoft.graph.")
	term, found := s.terms[name]
	if !ok || !found || !s.isA(typ, local(term.AppliesTo)) {
		return []string{path + ": annotation " + k + " is not a term of the schema that applies to " + typ}
	}
	return s.check(val, term.Type, path, true)
}
