package search_test

import (
	"context"
	"testing"

	"svc.dev/svc/vault/search"
	"svc.dev/svc/vault/search/searchtest"
)

// BenchmarkSearch indexes SVC_SEARCH_BENCH_DOCS messages (default 100,000) and runs 500
// two-word queries (searchtest.Bench; storage/postgres/pgsearch runs the same on PostgreSQL).
//
//	go test ./vault/search -run '^$' -bench Search -benchtime=1x
func BenchmarkSearch(b *testing.B) {
	searchtest.Bench(b, func(text search.TextSource) searchtest.Sized {
		x, err := search.OpenWith(b.TempDir(), &search.Options{Text: text})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { x.Close() })
		return x
	})
}

// BenchmarkPut indexes one message per call, as a vault commit does.
func BenchmarkPut(b *testing.B) {
	c := searchtest.NewCorpus()
	x, err := search.Open(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	defer x.Close()
	var docs []search.Doc
	c.Docs(1000)(func(d search.Doc, _ error) bool { docs = append(docs, d); return true })
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := x.Put(context.Background(), "t", docs[i%len(docs)]); err != nil {
			b.Fatal(err)
		}
	}
}
