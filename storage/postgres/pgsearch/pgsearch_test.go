package pgsearch_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"svc.dev/svc/internal/pgtest"
	"svc.dev/svc/storage/postgres"
	"svc.dev/svc/storage/postgres/pgsearch"
	"svc.dev/svc/vault/search"
	"svc.dev/svc/vault/search/searchtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

func open(t *testing.T, text search.TextSource) *pgsearch.Index {
	t.Helper()
	s, err := postgres.Open(context.Background(), pgtest.Database(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	x := s.SearchIndex(&search.Options{Text: text})
	t.Cleanup(func() { x.Close() })
	return x
}

// The PostgreSQL index passes the behaviour suite the bleve index passes.
func TestSuite(t *testing.T) {
	searchtest.Run(t, func(t *testing.T, text search.TextSource) searchtest.Index { return open(t, text) })
}

func filled(t *testing.T) *pgsearch.Index {
	texts := &searchtest.Texts{}
	x := open(t, texts.Source)
	texts.Put(t, x, searchtest.Tenant, searchtest.Docs()...)
	return x
}

// What PostgreSQL does differently from bleve (docs/search.md, "On PostgreSQL"), each tested
// here by name so that a change in either shows.
func TestDifferencesFromBleve(t *testing.T) {
	x := filled(t)
	ctx := context.Background()
	q := func(s string) (search.Result, error) {
		return x.Search(ctx, searchtest.Tenant, search.Query{Q: s, Limit: 10})
	}
	t.Run("fuzzy clauses are refused", func(t *testing.T) {
		for _, s := range []string{"invoise~1", "subject:invoise~2"} {
			_, err := q(s)
			if !errors.Is(err, search.ErrInvalidQuery) || !strings.Contains(err.Error(), "fuzzy") {
				t.Errorf("%s: %v", s, err)
			}
		}
	})
	t.Run("regular expressions are PostgreSQL's", func(t *testing.T) {
		// \pL (a Unicode letter) is RE2 syntax that PostgreSQL's regular expressions lack:
		// bleve accepts it, PostgreSQL refuses it as a query error.
		if _, err := q(`/\pL+cater/`); !errors.Is(err, search.ErrInvalidQuery) {
			t.Errorf("RE2-only syntax: %v", err)
		}
		if r, err := q(`/[a-z]+ous/`); err != nil || !slices.Equal(searchtest.IDs(r), []string{"vlt_3", "vlt_2"}) {
			t.Errorf("common syntax: %v %v", searchtest.IDs(r), err)
		}
	})
	t.Run("no snippet from a wildcard alone", func(t *testing.T) {
		r, err := q("in?oic*")
		if err != nil || len(r.Hits) != 3 || r.Hits[0].Snippet != "" || !slices.Equal(r.Hits[0].Matched, []string{"body"}) {
			t.Fatalf("%+v %v", r.Hits, err)
		}
	})
	t.Run("scores are ts_rank's", func(t *testing.T) {
		r, err := q("invoice")
		if err != nil || len(r.Hits) != 3 {
			t.Fatal(err)
		}
		for _, h := range r.Hits {
			if h.Score <= 0 || h.Score > 1 {
				t.Errorf("%s: score %v outside (0, 1]", h.ID, h.Score)
			}
		}
	})
	t.Run("total is a lower bound", func(t *testing.T) {
		r, err := x.Search(ctx, searchtest.Tenant, search.Query{Q: "invoice", Limit: 2})
		if err != nil || len(r.Hits) != 2 || r.Next == "" || r.Total != 3 {
			t.Fatalf("page of 2: %d hits, total %d, next %q, %v", len(r.Hits), r.Total, r.Next, err)
		}
	})
}

// Follow applies the change feed's batches one process at a time, in order, keeping the
// position in the database: a second index on the same database sees it.
func TestFollowKeepsThePositionInTheDatabase(t *testing.T) {
	s, err := postgres.Open(context.Background(), pgtest.Database(t))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	a, b := s.SearchIndex(nil), s.SearchIndex(nil) // two replicas' indexes
	d := searchtest.Docs()

	inA, release := make(chan struct{}), make(chan struct{})
	done := make(chan error, 1)
	go func() {
		_, err := a.Follow(ctx, func(_ context.Context, after uint64) (search.Changes, uint64, error) {
			if after != 0 {
				return search.Changes{}, 0, errors.New("a: wrong position")
			}
			close(inA)
			<-release
			return search.Changes{Put: map[string][]search.Doc{searchtest.Tenant: d[:2]}}, 5, nil
		})
		done <- err
	}()
	<-inA
	// b waits for a's batch to commit, then continues after it.
	bdone := make(chan uint64, 1)
	go func() {
		pos, err := b.Follow(ctx, func(_ context.Context, after uint64) (search.Changes, uint64, error) {
			if after != 5 {
				return search.Changes{}, 0, errors.New("b: ran before a committed")
			}
			return search.Changes{Put: map[string][]search.Doc{searchtest.Tenant: d[2:]},
				Remove: map[string][]string{searchtest.Tenant: {"vlt_1"}}}, 9, nil
		})
		if err != nil {
			t.Error(err)
		}
		bdone <- pos
	}()
	select {
	case <-bdone:
		t.Fatal("b's Follow did not wait for a's")
	default:
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if pos := <-bdone; pos != 9 {
		t.Fatalf("b ended at %d", pos)
	}
	if pos, err := a.Position(ctx); err != nil || pos != 9 {
		t.Fatalf("a's position %d %v", pos, err)
	}
	if n, _ := a.Count(searchtest.Tenant); n != 3 {
		t.Fatalf("count %d", n)
	}
	// Nothing to apply: nothing moves. A failing batch applies nothing.
	if pos, err := a.Follow(ctx, func(_ context.Context, after uint64) (search.Changes, uint64, error) {
		return search.Changes{}, after, nil
	}); err != nil || pos != 9 {
		t.Fatalf("empty: %d %v", pos, err)
	}
	_, err = a.Follow(ctx, func(context.Context, uint64) (search.Changes, uint64, error) {
		return search.Changes{}, 0, errors.New("vault unreadable")
	})
	if err == nil {
		t.Fatal("failed batch reported success")
	}
	if pos, _ := b.Position(ctx); pos != 9 {
		t.Fatalf("position after a failed batch %d", pos)
	}
}

// BenchmarkSearch is vault/search's BenchmarkSearch on PostgreSQL (searchtest.Bench): the
// same corpus and queries, side by side with bleve's when both run.
//
//	SVC_SEARCH_BENCH_DOCS=20000 go test ./storage/postgres/pgsearch -run '^$' -bench Search -benchtime=1x
func BenchmarkSearch(b *testing.B) {
	searchtest.Bench(b, func(text search.TextSource) searchtest.Sized {
		s, err := postgres.Open(context.Background(), pgtest.Database(b))
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { s.Close() })
		return s.SearchIndex(&search.Options{Text: text})
	})
}

// The database itself stops a search's statement that passes the cost model's time
// (statement_timeout), and the search answers as the bleve index does when a query takes
// too long: ErrQueryTooBroad, a 400 that says to narrow it.
func TestTheDatabaseStopsALongQuery(t *testing.T) {
	x := open(t, nil)
	ctx := context.Background()
	c := searchtest.NewCorpus()
	var docs []search.Doc
	c.Docs(3000)(func(d search.Doc, _ error) bool { docs = append(docs, d); return true })
	if err := x.Put(ctx, "t", docs...); err != nil {
		t.Fatal(err)
	}
	// Regexps read every row's lexemes (no index): about as slow as an allowed query gets.
	slow := search.Query{Q: "/[a-z]+q[a-z]*z[a-z]*/ /[a-z]+x[a-z]*k[a-z]*/", Limit: 50}
	if _, err := x.Search(ctx, "t", slow); err != nil {
		t.Fatalf("within the bound: %v", err)
	}
	defer pgsearch.SetStatementTimeout(time.Millisecond)()
	_, err := x.Search(ctx, "t", slow)
	if !errors.Is(err, search.ErrQueryTooBroad) {
		t.Fatalf("past the database's bound: %v, want ErrQueryTooBroad", err)
	}
}
