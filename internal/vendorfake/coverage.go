package vendorfake

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"testing"
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

// CheckServed checks every JSON body a Google fake serves from now on
// against its discovery document, reporting each problem with t.Errorf,
// and counts the schemas served in the returned Coverage.
func CheckServed(t testing.TB, b *Base, doc *Discovery) *Coverage {
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
func DecodeJSON(t testing.TB, b []byte) any {
	t.Helper()
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		t.Fatalf("not JSON: %v: %s", err, b)
	}
	return v
}
