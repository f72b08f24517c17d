package search_test

import (
	"context"
	"testing"

	"svc.dev/svc/vault/search"
	"svc.dev/svc/vault/search/searchtest"
)

// The bleve index passes the behaviour suite every vault search index passes.
func TestSuite(t *testing.T) {
	searchtest.Run(t, func(t *testing.T, text search.TextSource) searchtest.Index {
		x, err := search.OpenWith(t.TempDir(), &search.Options{Text: text})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { x.Close() })
		return x
	})
}

// The index survives a reopen.
func TestReopen(t *testing.T) {
	dir := t.TempDir()
	x, err := search.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	x.Put(context.Background(), searchtest.Tenant, searchtest.Docs()...)
	x.Close()
	if !x.Exists(searchtest.Tenant) || x.Exists("test:usr_2") {
		t.Fatal("Exists")
	}
	x, _ = search.Open(dir)
	defer x.Close()
	if n, err := x.Count(searchtest.Tenant); err != nil || n != 4 {
		t.Fatalf("after reopen: %d %v", n, err)
	}
}

// Parse gives another index the clauses bleve's query string holds, checked as Search
// checks them.
func TestParse(t *testing.T) {
	cs, err := search.Parse(`invoice -from:bob "lake house" inv* /cater.*/ word~1 type:photo`)
	if err != nil {
		t.Fatal(err)
	}
	want := []search.Clause{
		{Kind: search.Words, Text: "invoice"},
		{Kind: search.Phrase, Text: "lake house"},
		{Kind: search.Wildcard, Text: "inv*"},
		{Kind: search.Regexp, Text: "cater.*"},
		{Kind: search.Fuzzy, Text: "word", Fuzziness: 1},
		{Field: "type", Kind: search.Words, Text: "photo"},
		{Field: "from", Kind: search.Words, Text: "bob", Not: true},
	}
	if len(cs) != len(want) {
		t.Fatalf("got %+v", cs)
	}
	for i := range want {
		if cs[i] != want[i] {
			t.Errorf("clause %d: got %+v, want %+v", i, cs[i], want[i])
		}
	}
	if _, err := search.Parse("secret:x"); err == nil {
		t.Fatal("unknown field parsed")
	}
}
