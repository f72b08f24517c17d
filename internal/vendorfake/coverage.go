package vendorfake

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
)

// Coverage counts what a shape test checked (the schemas or routes it saw
// a fake serve) and names what it did not, so a route or shape the test
// never exercises fails it rather than passing unchecked. The zero value is
// ready; it is safe for concurrent use.
type Coverage struct {
	mu   sync.Mutex
	seen map[string]int
}

// Saw counts one check of name.
func (c *Coverage) Saw(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.seen == nil {
		c.seen = map[string]int{}
	}
	c.seen[name]++
}

// Missing returns the names of want that were never seen, sorted.
func (c *Coverage) Missing(want []string) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for _, w := range want {
		if c.seen[w] == 0 {
			out = append(out, w)
		}
	}
	slices.Sort(out)
	return out
}

// String lists the counts, for a test's log.
func (c *Coverage) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return fmt.Sprint(c.seen)
}

// T is the part of testing.TB the shape-test helpers use (so that the
// fakes, which svc serve --dev also runs, do not link package testing).
type T interface {
	Helper()
	Errorf(format string, args ...any)
	Fatalf(format string, args ...any)
}

// CheckServed checks every JSON body a Google fake serves from now on
// against its discovery document, reporting each problem with t.Errorf,
// and counts the schemas served in the returned Coverage.
func CheckServed(t T, b *Base, doc *Discovery) *Coverage {
	cov := &Coverage{}
	b.Record(func(schema string, body []byte) {
		cov.Saw(schema)
		for _, p := range doc.Check(schema, body) {
			t.Errorf("%s", p)
		}
	})
	return cov
}

// DecodeJSON decodes a JSON body with numbers as json.Number (so integer
// and 64-bit fields can be told from floats), failing the test when it is
// not JSON.
func DecodeJSON(t T, b []byte) any {
	t.Helper()
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		t.Fatalf("not JSON: %v: %s", err, b)
	}
	return v
}

// CheckGoogleError checks a Google API error body: {"error": {"code",
// "message", "status", "errors": [{"domain", "reason", "message"}]}}, as
// Google documents its JSON error responses (the discovery documents do
// not describe them): code the HTTP status, status one of Google's
// canonical codes, each legacy error with a reason. It returns one problem
// per line.
func CheckGoogleError(status int, body []byte) []string {
	var e struct {
		Error map[string]json.RawMessage `json:"error"`
	}
	if err := json.Unmarshal(body, &e); err != nil || e.Error == nil {
		return []string{fmt.Sprintf("not a Google error body: %s", body)}
	}
	var problems []string
	for k := range e.Error {
		if !slices.Contains([]string{"code", "message", "status", "errors", "details"}, k) {
			problems = append(problems, "error."+k+" is not a field of Google's error body")
		}
	}
	var code int
	if json.Unmarshal(e.Error["code"], &code) != nil || code != status {
		problems = append(problems, fmt.Sprintf("error.code %s, HTTP status %d", e.Error["code"], status))
	}
	var msg, st string
	if json.Unmarshal(e.Error["message"], &msg) != nil || msg == "" {
		problems = append(problems, "error.message missing")
	}
	canonical := []string{"INVALID_ARGUMENT", "FAILED_PRECONDITION", "OUT_OF_RANGE", "UNAUTHENTICATED", "PERMISSION_DENIED",
		"NOT_FOUND", "ABORTED", "ALREADY_EXISTS", "RESOURCE_EXHAUSTED", "CANCELLED", "DATA_LOSS", "UNKNOWN", "INTERNAL",
		"NOT_IMPLEMENTED", "UNAVAILABLE", "DEADLINE_EXCEEDED"}
	if raw, ok := e.Error["status"]; ok && (json.Unmarshal(raw, &st) != nil || !slices.Contains(canonical, st)) {
		problems = append(problems, fmt.Sprintf("error.status %s is not a canonical code", raw))
	}
	var legacy []map[string]any
	if raw, ok := e.Error["errors"]; ok {
		if json.Unmarshal(raw, &legacy) != nil {
			problems = append(problems, "error.errors is not a list of objects")
		}
		for _, l := range legacy {
			for k, v := range l {
				if _, str := v.(string); !str || !slices.Contains([]string{"domain", "reason", "message", "location", "locationType", "extendedHelp", "sendReport"}, k) {
					problems = append(problems, fmt.Sprintf("error.errors[].%s: %v", k, v))
				}
			}
			if l["reason"] == nil {
				problems = append(problems, "error.errors[] without a reason")
			}
		}
	}
	return problems
}
