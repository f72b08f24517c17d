package vendorfake

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Discovery is a Google API discovery document's schemas, for checking
// what a fake serves against what Google publishes.
type Discovery struct {
	Schemas map[string]*Schema `json:"schemas"`
}

// Schema is one schema of a discovery document.
type Schema struct {
	Ref                  string             `json:"$ref"`
	Type                 string             `json:"type"`
	Format               string             `json:"format"`
	Properties           map[string]*Schema `json:"properties"`
	Items                *Schema            `json:"items"`
	AdditionalProperties *Schema            `json:"additionalProperties"`
}

// LoadDiscovery reads the discovery document google.golang.org/api ships
// beside a generated client, rel to the module's directory
// ("gmail/v1/gmail-api.json"). The module is found with "go list -m", so
// the document is the one of the version go.mod pins.
func LoadDiscovery(rel string) (*Discovery, error) {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "google.golang.org/api").Output()
	if err != nil {
		return nil, fmt.Errorf("find google.golang.org/api: %w", err)
	}
	raw, err := os.ReadFile(filepath.Join(strings.TrimSpace(string(out)), rel))
	if err != nil {
		return nil, err
	}
	var d Discovery
	if err := json.Unmarshal(raw, &d); err != nil {
		return nil, fmt.Errorf("%s: %w", rel, err)
	}
	return &d, nil
}

// Check checks a JSON body against the named schema: every field must be
// a property of the schema, with the JSON type its type and format give
// (int64 and uint64 travel as strings). It returns one problem per line.
func (d *Discovery) Check(schema string, body []byte) []string {
	var v any
	if err := json.Unmarshal(body, &v); err != nil {
		return []string{"not JSON: " + err.Error()}
	}
	s, ok := d.Schemas[schema]
	if !ok {
		return []string{"no schema " + schema}
	}
	var problems []string
	d.check(schema, s, v, &problems)
	return problems
}

func (d *Discovery) check(at string, s *Schema, v any, problems *[]string) {
	bad := func(format string, args ...any) {
		*problems = append(*problems, at+": "+fmt.Sprintf(format, args...))
	}
	for s.Ref != "" {
		r, ok := d.Schemas[s.Ref]
		if !ok {
			bad("unknown $ref %s", s.Ref)
			return
		}
		s = r
	}
	switch s.Type {
	case "any", "":
		if s.Properties == nil {
			return
		}
		fallthrough
	case "object":
		m, ok := v.(map[string]any)
		if !ok {
			bad("want an object, got %T", v)
			return
		}
		for k, x := range m {
			p, ok := s.Properties[k]
			if !ok && s.AdditionalProperties != nil {
				p = s.AdditionalProperties
			}
			if p == nil {
				bad("field %q is not in the schema", k)
				continue
			}
			d.check(at+"."+k, p, x, problems)
		}
	case "array":
		a, ok := v.([]any)
		if !ok {
			bad("want an array, got %T", v)
			return
		}
		for i, x := range a {
			d.check(fmt.Sprintf("%s[%d]", at, i), s.Items, x, problems)
		}
	case "string":
		if _, ok := v.(string); !ok {
			bad("want a string (format %q), got %T", s.Format, v)
		}
	case "integer":
		f, ok := v.(float64)
		if !ok || f != float64(int64(f)) {
			bad("want an integer, got %v", v)
		}
	case "number":
		if _, ok := v.(float64); !ok {
			bad("want a number, got %T", v)
		}
	case "boolean":
		if _, ok := v.(bool); !ok {
			bad("want a boolean, got %T", v)
		}
	default:
		bad("schema type %q", s.Type)
	}
}
