// Package searchtest is the behaviour suite every vault search index passes: vault/search's
// bleve index and storage/postgres/pgsearch's PostgreSQL one. It holds them to one query
// language, one order, one paging and one cost model; what an index does differently is
// tested beside that index, by name.
package searchtest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"svc.dev/svc/vault/search"
)

// Index is what the suite needs of an index.
type Index interface {
	Put(ctx context.Context, tenant string, docs ...search.Doc) error
	Remove(ctx context.Context, tenant string, ids ...string) error
	Search(ctx context.Context, tenant string, q search.Query) (search.Result, error)
	Rebuild(ctx context.Context, tenant string, docs func(yield func(search.Doc, error) bool), progress func(int)) (int, error)
	Count(tenant string) (uint64, error)
	Exists(tenant string) bool
	Drop(tenant string) error
}

// Open returns a new, empty index whose snippets come from text; the suite closes nothing
// (the opener registers its own cleanup).
type Open func(t *testing.T, text search.TextSource) Index

// Day0 is the date of the suite's first document.
var Day0 = time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)

// Docs are the suite's four documents, in tenant Tenant of the indexes Fill makes.
func Docs() []search.Doc {
	return []search.Doc{
		{ID: "vlt_1", Subject: "Your March invoice", From: "Billing <billing@acme.example>", To: "ann@example.com", Type: "message",
			MIMEType: "message/rfc822", Provider: "simulated", SourceID: "src_A", State: "committed", Date: Day0,
			Body: "Hello Ann, the invoice for March is attached. Total due: 42 EUR. Thanks for your business."},
		{ID: "vlt_2", Subject: "Team offsite", From: "bob@example.com", To: "ann@example.com", Cc: "carol@example.com", Type: "message",
			MIMEType: "message/rfc822", Provider: "simulated", SourceID: "src_A", State: "committed", Date: Day0.Add(24 * time.Hour),
			Body: "We meet at the lake house. Bring the invoices from the caterer."},
		{ID: "vlt_3", Name: "notes.txt", Type: "file", MIMEType: "text/plain", Provider: "vendor_d_local", SourceID: "src_B",
			State: "cold", Date: Day0.Add(48 * time.Hour), Body: "Lake house booking reference 7731. Invoice paid in full."},
		{ID: "vlt_4", Name: "photo.jpg", Type: "photo", MIMEType: "image/jpeg; name=photo.jpg", Provider: "vendor_d_local", SourceID: "src_B",
			State: "committed", Date: Day0.Add(72 * time.Hour)},
	}
}

// Tenant is the tenant the suite's documents are put in.
const Tenant = "test:usr_1"

// Texts is a TextSource over the documents put through it.
type Texts struct{ m sync.Map }

// Source is the TextSource.
func (s *Texts) Source(_ context.Context, _, id string) (search.Doc, error) {
	d, ok := s.m.Load(id)
	if !ok {
		return search.Doc{}, errors.New("no such document")
	}
	return d.(search.Doc), nil
}

// Put puts documents in x and remembers their text.
func (s *Texts) Put(t testing.TB, x Index, tenant string, ds ...search.Doc) {
	t.Helper()
	for _, d := range ds {
		s.m.Store(d.ID, d)
	}
	if err := x.Put(context.Background(), tenant, ds...); err != nil {
		t.Fatal(err)
	}
}

// IDs are the ids of a page's hits.
func IDs(r search.Result) []string {
	var out []string
	for _, h := range r.Hits {
		out = append(out, h.ID)
	}
	return out
}

// Run runs the suite on the indexes open returns.
func Run(t *testing.T, open Open) {
	fill := func(t *testing.T) (Index, *Texts) {
		texts := &Texts{}
		x := open(t, texts.Source)
		texts.Put(t, x, Tenant, Docs()...)
		return x, texts
	}
	t.Run("Queries", func(t *testing.T) { x, _ := fill(t); testQueries(t, x) })
	t.Run("HitsSayWhatMatched", func(t *testing.T) { x, texts := fill(t); testMatched(t, x, texts) })
	t.Run("BadQueries", func(t *testing.T) { x, _ := fill(t); testBadQueries(t, x) })
	t.Run("StablePages", func(t *testing.T) { testStablePages(t, open(t, (&Texts{}).Source)) })
	t.Run("Rebuild", func(t *testing.T) { x, _ := fill(t); testRebuild(t, x) })
	t.Run("RemoveAndDrop", func(t *testing.T) { x, _ := fill(t); testRemoveAndDrop(t, x) })
}

func testQueries(t *testing.T, x Index) {
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		q    search.Query
		want []string
	}{
		{"one word, stemmed, any field, newest first", search.Query{Q: "invoice"}, []string{"vlt_3", "vlt_2", "vlt_1"}},
		{"case does not matter", search.Query{Q: "INVOICES"}, []string{"vlt_3", "vlt_2", "vlt_1"}},
		{"every word must match", search.Query{Q: "invoice lake"}, []string{"vlt_3", "vlt_2"}},
		{"plus is the same", search.Query{Q: "+invoice +lake"}, []string{"vlt_3", "vlt_2"}},
		{"a stop word matches nothing", search.Query{Q: "invoice the"}, nil},
		{"phrase", search.Query{Q: `"lake house booking"`}, []string{"vlt_3"}},
		{"phrase in order only", search.Query{Q: `"house lake"`}, nil},
		{"exclusion", search.Query{Q: "invoice -lake"}, []string{"vlt_1"}},
		{"only exclusions", search.Query{Q: "-invoice"}, []string{"vlt_4"}},
		{"field:value on a header", search.Query{Q: "from:bob@example.com"}, []string{"vlt_2"}},
		{"an address's domain", search.Query{Q: "to:example.com"}, []string{"vlt_2", "vlt_1"}},
		{"a name in a header", search.Query{Q: "from:billing"}, []string{"vlt_1"}},
		{"field:value is that field only", search.Query{Q: "subject:lake"}, nil},
		{"field:phrase", search.Query{Q: `subject:"march invoice"`}, []string{"vlt_1"}},
		{"cc", search.Query{Q: "cc:carol"}, []string{"vlt_2"}},
		{"keyword field", search.Query{Q: "type:photo"}, []string{"vlt_4"}},
		{"keyword field, whole value", search.Query{Q: "provider:vendor"}, nil},
		{"keyword field excluded", search.Query{Q: "invoice -state:cold"}, []string{"vlt_2", "vlt_1"}},
		{"mime type without parameters", search.Query{Q: `mime_type:image/jpeg`}, []string{"vlt_4"}},
		{"name", search.Query{Q: "name:notes.txt"}, []string{"vlt_3"}},
		{"prefix", search.Query{Q: "invo*"}, []string{"vlt_3", "vlt_2", "vlt_1"}},
		{"prefix in a field", search.Query{Q: "from:bo*"}, []string{"vlt_2"}},
		{"wildcard inside a word", search.Query{Q: "in?oic*"}, []string{"vlt_3", "vlt_2", "vlt_1"}},
		{"wildcard on a keyword field", search.Query{Q: "provider:vendor*"}, []string{"vlt_4", "vlt_3"}},
		{"regexp", search.Query{Q: "/cater.*/"}, []string{"vlt_2"}},
		{"provider filter", search.Query{Q: "invoice", Provider: "simulated"}, []string{"vlt_2", "vlt_1"}},
		{"type filter: kind", search.Query{Q: "invoice", Type: "file"}, []string{"vlt_3"}},
		{"type filter: mime type", search.Query{Q: "invoice", Type: "message/rfc822"}, []string{"vlt_2", "vlt_1"}},
		{"type filter: mime wildcard", search.Query{Q: "-invoice", Type: "image/*"}, []string{"vlt_4"}},
		{"from inclusive", search.Query{Q: "invoice", From: Day0.Add(24 * time.Hour)}, []string{"vlt_3", "vlt_2"}},
		{"to exclusive", search.Query{Q: "invoice", To: Day0.Add(48 * time.Hour)}, []string{"vlt_2", "vlt_1"}},
		{"from and to", search.Query{Q: "invoice", From: Day0.Add(time.Hour), To: Day0.Add(25 * time.Hour)}, []string{"vlt_2"}},
		{"sources", search.Query{Q: "invoice", Sources: []string{"src_B"}}, []string{"vlt_3"}},
		{"no sources", search.Query{Q: "invoice", Sources: []string{}}, nil},
		{"no match", search.Query{Q: "zeppelin"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.q.Limit = 10
			r, err := x.Search(ctx, Tenant, tc.q)
			if err != nil {
				t.Fatal(err)
			}
			if got := IDs(r); !slices.Equal(got, tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
		})
	}
	// Another tenant's index holds none of it.
	if r, err := x.Search(ctx, "live:org_2", search.Query{Q: "invoice", Limit: 10}); err != nil || len(r.Hits) != 0 {
		t.Fatalf("other tenant: %v %v", IDs(r), err)
	}
}

func testMatched(t *testing.T, x Index, texts *Texts) {
	ctx := context.Background()
	r, err := x.Search(ctx, Tenant, search.Query{Q: "march invoice", Limit: 10})
	if err != nil || len(r.Hits) != 1 {
		t.Fatalf("%v %v", IDs(r), err)
	}
	h := r.Hits[0]
	if !slices.Equal(h.Matched, []string{"body", "subject"}) || h.Score <= 0 {
		t.Fatalf("matched %v score %v", h.Matched, h.Score)
	}
	if !strings.Contains(h.Snippet, "<mark>invoice</mark>") || !strings.Contains(h.Snippet, "<mark>March</mark>") {
		t.Fatalf("snippet %q", h.Snippet)
	}
	// Only a header matched: no snippet; a keyword field is not a matched field.
	r, err = x.Search(ctx, Tenant, search.Query{Q: "cc:carol type:message", Limit: 10})
	if err != nil || len(r.Hits) != 1 || !slices.Equal(r.Hits[0].Matched, []string{"cc"}) || r.Hits[0].Snippet != "" {
		t.Fatalf("header only: %+v %v", r.Hits, err)
	}
	// The name is the snippet when only it matched.
	r, err = x.Search(ctx, Tenant, search.Query{Q: "name:photo.jpg", Limit: 10})
	if err != nil || len(r.Hits) != 1 || r.Hits[0].Snippet != "<mark>photo.jpg</mark>" {
		t.Fatalf("name: %+v %v", r.Hits, err)
	}
	// The text is escaped around the marks.
	texts.Put(t, x, Tenant, search.Doc{ID: "vlt_9", Body: "a <b> & zeppelin", Date: Day0})
	r, _ = x.Search(ctx, Tenant, search.Query{Q: "zeppelin", Limit: 10})
	if len(r.Hits) != 1 || r.Hits[0].Snippet != "a &lt;b&gt; &amp; <mark>zeppelin</mark>" {
		t.Fatalf("snippet %+v", r.Hits)
	}
}

func testBadQueries(t *testing.T, x Index) {
	ctx := context.Background()
	for _, q := range []string{"", "  ", "secret:x", `"unclosed`, "size:>5", "invoice after",
		strings.Repeat("w", search.MaxQueryBytes+1), strings.Repeat("w ", search.MaxClauses+1),
		"ab* cd* ef* gh* ij*", "*", "a*", "/.*/", "/(ab){40}/"} {
		_, err := x.Search(ctx, Tenant, search.Query{Q: q, Limit: 10, After: map[bool]string{true: "garbage"}[q == "invoice after"]})
		if !errors.Is(err, search.ErrInvalidQuery) {
			t.Errorf("%.40q: %v", q, err)
		}
	}
	if _, err := x.Search(ctx, Tenant, search.Query{Q: "invoice", Limit: 10, After: "garbage"}); !errors.Is(err, search.ErrInvalidPosition) {
		t.Errorf("bad position: %v", err)
	}
}

// Pages continue where the last ended, also when objects are added or removed in between:
// no hit twice, none of those there from the start skipped.
func testStablePages(t *testing.T, x Index) {
	ctx := context.Background()
	var all []search.Doc
	for i := range 25 {
		all = append(all, search.Doc{ID: fmt.Sprintf("vlt_%02d", i), Subject: "weekly report", Body: fmt.Sprintf("report number %d", i),
			Date: Day0.Add(time.Duration(i%5) * time.Hour)}) // ties on date are broken by id
	}
	if err := x.Put(ctx, "t", all...); err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	var order []string
	q := search.Query{Q: "report", Limit: 7}
	for page := 0; ; page++ {
		r, err := x.Search(ctx, "t", q)
		if err != nil {
			t.Fatal(err)
		}
		for _, h := range r.Hits {
			seen[h.ID]++
			order = append(order, h.ID)
		}
		if r.Next == "" {
			break
		}
		if len(r.Hits) != q.Limit {
			t.Fatalf("page %d: %d hits and a next page", page, len(r.Hits))
		}
		q.After = r.Next
		// Between pages: a new object (newest), and one already seen removed.
		x.Put(ctx, "t", search.Doc{ID: fmt.Sprintf("vlt_new%d", page), Body: "report", Date: Day0.Add(time.Hour * 100)})
		x.Remove(ctx, "t", r.Hits[0].ID)
	}
	for _, d := range all {
		if seen[d.ID] != 1 {
			t.Fatalf("%s seen %d times (%v)", d.ID, seen[d.ID], seen)
		}
	}
	// Newest first, ties by id descending.
	if order[0] != "vlt_24" || order[1] != "vlt_19" || order[len(order)-1] != "vlt_00" {
		t.Fatalf("order %v", order)
	}
}

// A rebuild replaces the index with what the vault holds, and keeps updates made while it ran.
func testRebuild(t *testing.T, x Index) {
	ctx := context.Background()
	started, release := make(chan struct{}), make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		n, err := x.Rebuild(ctx, Tenant, func(yield func(search.Doc, error) bool) {
			d := Docs()
			if !yield(d[0], nil) { // vlt_2..4 are gone from the vault
				return
			}
			close(started)
			<-release
		}, nil)
		if err != nil || n != 1 {
			t.Errorf("rebuild: %d %v", n, err)
		}
	}()
	<-started
	// During the rebuild: searches still answer from the old index; an update is kept.
	if r, err := x.Search(ctx, Tenant, search.Query{Q: "invoice", Limit: 10}); err != nil || len(r.Hits) != 3 {
		t.Fatalf("during: %v %v", IDs(r), err)
	}
	x.Put(ctx, Tenant, search.Doc{ID: "vlt_5", Subject: "late invoice", Date: Day0})
	close(release)
	wg.Wait()
	r, err := x.Search(ctx, Tenant, search.Query{Q: "invoice", Limit: 10})
	if err != nil || !slices.Equal(IDs(r), []string{"vlt_5", "vlt_1"}) {
		t.Fatalf("after: %v %v", IDs(r), err)
	}
	if n, _ := x.Count(Tenant); n != 2 {
		t.Fatalf("count %d", n)
	}
	// A rebuild whose source fails keeps the old index.
	_, err = x.Rebuild(ctx, Tenant, func(yield func(search.Doc, error) bool) { yield(search.Doc{}, errors.New("vault unreadable")) }, nil)
	if err == nil {
		t.Fatal("failed rebuild reported success")
	}
	if n, _ := x.Count(Tenant); n != 2 {
		t.Fatalf("count after a failed rebuild %d", n)
	}
	// A rebuild makes the index of a tenant that had none.
	if x.Exists("test:usr_new") {
		t.Fatal("a new tenant has an index")
	}
	if n, err := x.Rebuild(ctx, "test:usr_new", func(func(search.Doc, error) bool) {}, nil); err != nil || n != 0 || !x.Exists("test:usr_new") {
		t.Fatalf("empty rebuild: %d %v exists %v", n, err, x.Exists("test:usr_new"))
	}
}

func testRemoveAndDrop(t *testing.T, x Index) {
	ctx := context.Background()
	if !x.Exists(Tenant) || x.Exists("test:usr_2") {
		t.Fatal("Exists")
	}
	if err := x.Remove(ctx, Tenant, "vlt_2", "vlt_none"); err != nil {
		t.Fatal(err)
	}
	if err := x.Remove(ctx, "test:usr_2", "vlt_1"); err != nil || x.Exists("test:usr_2") {
		t.Fatalf("remove from a tenant without an index: %v", err)
	}
	if r, err := x.Search(ctx, Tenant, search.Query{Q: "invoice", Limit: 10}); err != nil || !slices.Equal(IDs(r), []string{"vlt_3", "vlt_1"}) {
		t.Fatalf("after remove: %v %v", IDs(r), err)
	}
	// Putting a document again replaces it.
	d := Docs()[0]
	d.Subject, d.Body = "Your April statement", "nothing due"
	if err := x.Put(ctx, Tenant, d); err != nil {
		t.Fatal(err)
	}
	if r, err := x.Search(ctx, Tenant, search.Query{Q: "invoice", Limit: 10}); err != nil || !slices.Equal(IDs(r), []string{"vlt_3"}) {
		t.Fatalf("after replace: %v %v", IDs(r), err)
	}
	if err := x.Drop(Tenant); err != nil {
		t.Fatal(err)
	}
	if x.Exists(Tenant) {
		t.Fatal("dropped index exists")
	}
	if n, err := x.Count(Tenant); err != nil || n != 0 {
		t.Fatalf("count after drop: %d %v", n, err)
	}
}
