package search_test

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

var day0 = time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)

func docs() []search.Doc {
	return []search.Doc{
		{ID: "vlt_1", Subject: "Your March invoice", From: "Billing <billing@acme.example>", To: "ann@example.com", Type: "message",
			MIMEType: "message/rfc822", Provider: "simulated", SourceID: "src_A", State: "committed", Date: day0,
			Body: "Hello Ann, the invoice for March is attached. Total due: 42 EUR. Thanks for your business."},
		{ID: "vlt_2", Subject: "Team offsite", From: "bob@example.com", To: "ann@example.com", Cc: "carol@example.com", Type: "message",
			MIMEType: "message/rfc822", Provider: "simulated", SourceID: "src_A", State: "committed", Date: day0.Add(24 * time.Hour),
			Body: "We meet at the lake house. Bring the invoices from the caterer."},
		{ID: "vlt_3", Name: "notes.txt", Type: "file", MIMEType: "text/plain", Provider: "vendor_d_local", SourceID: "src_B",
			State: "cold", Date: day0.Add(48 * time.Hour), Body: "Lake house booking reference 7731. Invoice paid in full."},
		{ID: "vlt_4", Name: "photo.jpg", Type: "photo", MIMEType: "image/jpeg", Provider: "vendor_d_local", SourceID: "src_B",
			State: "committed", Date: day0.Add(72 * time.Hour)},
	}
}

// texts is the TextSource of the tests' indexes: the documents they put.
var texts sync.Map // id -> search.Doc

func textSource(_ context.Context, _, id string) (search.Doc, error) {
	d, ok := texts.Load(id)
	if !ok {
		return search.Doc{}, errors.New("no such document")
	}
	return d.(search.Doc), nil
}

func putDocs(t *testing.T, x *search.Index, tenant string, ds ...search.Doc) {
	t.Helper()
	for _, d := range ds {
		texts.Store(d.ID, d)
	}
	if err := x.Put(context.Background(), tenant, ds...); err != nil {
		t.Fatal(err)
	}
}

func open(t *testing.T) *search.Index {
	t.Helper()
	for _, d := range docs() {
		texts.Store(d.ID, d)
	}
	x, err := search.OpenWith(t.TempDir(), &search.Options{Text: textSource})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { x.Close() })
	if err := x.Put(context.Background(), "test:usr_1", docs()...); err != nil {
		t.Fatal(err)
	}
	return x
}

func ids(r search.Result) []string {
	var out []string
	for _, h := range r.Hits {
		out = append(out, h.ID)
	}
	return out
}

func TestQueries(t *testing.T) {
	x := open(t)
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		q    search.Query
		want []string
	}{
		{"one word, stemmed, any field, newest first", search.Query{Q: "invoice"}, []string{"vlt_3", "vlt_2", "vlt_1"}},
		{"every word must match", search.Query{Q: "invoice lake"}, []string{"vlt_3", "vlt_2"}},
		{"phrase", search.Query{Q: `"lake house booking"`}, []string{"vlt_3"}},
		{"exclusion", search.Query{Q: "invoice -lake"}, []string{"vlt_1"}},
		{"field:value on a header", search.Query{Q: "from:bob@example.com"}, []string{"vlt_2"}},
		{"field:phrase", search.Query{Q: `subject:"march invoice"`}, []string{"vlt_1"}},
		{"cc", search.Query{Q: "cc:carol"}, []string{"vlt_2"}},
		{"keyword field", search.Query{Q: "type:photo"}, []string{"vlt_4"}},
		{"name", search.Query{Q: "name:notes.txt"}, []string{"vlt_3"}},
		{"provider filter", search.Query{Q: "invoice", Provider: "simulated"}, []string{"vlt_2", "vlt_1"}},
		{"type filter: kind", search.Query{Q: "invoice", Type: "file"}, []string{"vlt_3"}},
		{"type filter: mime type", search.Query{Q: "invoice", Type: "message/rfc822"}, []string{"vlt_2", "vlt_1"}},
		{"type filter: mime wildcard", search.Query{Q: "-invoice", Type: "image/*"}, []string{"vlt_4"}},
		{"from inclusive", search.Query{Q: "invoice", From: day0.Add(24 * time.Hour)}, []string{"vlt_3", "vlt_2"}},
		{"to exclusive", search.Query{Q: "invoice", To: day0.Add(48 * time.Hour)}, []string{"vlt_2", "vlt_1"}},
		{"from and to", search.Query{Q: "invoice", From: day0.Add(time.Hour), To: day0.Add(25 * time.Hour)}, []string{"vlt_2"}},
		{"sources", search.Query{Q: "invoice", Sources: []string{"src_B"}}, []string{"vlt_3"}},
		{"no sources", search.Query{Q: "invoice", Sources: []string{}}, nil},
		{"no match", search.Query{Q: "zeppelin"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.q.Limit = 10
			r, err := x.Search(ctx, "test:usr_1", tc.q)
			if err != nil {
				t.Fatal(err)
			}
			if got := ids(r); !slices.Equal(got, tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
		})
	}
	// Another tenant's index holds none of it.
	if r, err := x.Search(ctx, "live:org_2", search.Query{Q: "invoice", Limit: 10}); err != nil || len(r.Hits) != 0 {
		t.Fatalf("other tenant: %v %v", ids(r), err)
	}
}

func TestHitsSayWhatMatched(t *testing.T) {
	x := open(t)
	r, err := x.Search(context.Background(), "test:usr_1", search.Query{Q: "march invoice", Limit: 10})
	if err != nil || len(r.Hits) != 1 {
		t.Fatalf("%v %v", ids(r), err)
	}
	h := r.Hits[0]
	if !slices.Equal(h.Matched, []string{"body", "subject"}) || h.Score <= 0 {
		t.Fatalf("matched %v score %v", h.Matched, h.Score)
	}
	if !strings.Contains(h.Snippet, "<mark>invoice</mark>") || !strings.Contains(h.Snippet, "<mark>March</mark>") {
		t.Fatalf("snippet %q", h.Snippet)
	}
	// Stored text is escaped around the marks.
	putDocs(t, x, "test:usr_1", search.Doc{ID: "vlt_9", Body: "a <b> & zeppelin", Date: day0})
	r, _ = x.Search(context.Background(), "test:usr_1", search.Query{Q: "zeppelin", Limit: 10})
	if len(r.Hits) != 1 || r.Hits[0].Snippet != "a &lt;b&gt; &amp; <mark>zeppelin</mark>" {
		t.Fatalf("snippet %+v", r.Hits)
	}
}

func TestBadQueries(t *testing.T) {
	x := open(t)
	for _, q := range []string{"", "  ", "secret:x", `"unclosed`, "size:>5", "invoice after"} {
		_, err := x.Search(context.Background(), "test:usr_1", search.Query{Q: q, Limit: 10, After: map[bool]string{true: "garbage"}[q == "invoice after"]})
		if !errors.Is(err, search.ErrInvalidQuery) {
			t.Errorf("%q: %v", q, err)
		}
	}
}

// Pages continue where the last ended, also when objects are added or removed in between:
// no hit twice, none of those there from the start skipped.
func TestStablePages(t *testing.T) {
	x, err := search.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	ctx := context.Background()
	var all []search.Doc
	for i := range 25 {
		all = append(all, search.Doc{ID: fmt.Sprintf("vlt_%02d", i), Subject: "weekly report", Body: fmt.Sprintf("report number %d", i),
			Date: day0.Add(time.Duration(i%5) * time.Hour)}) // ties on date are broken by id
	}
	if err := x.Put(ctx, "t", all...); err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	q := search.Query{Q: "report", Limit: 7}
	for page := 0; ; page++ {
		r, err := x.Search(ctx, "t", q)
		if err != nil {
			t.Fatal(err)
		}
		for _, h := range r.Hits {
			seen[h.ID]++
		}
		if r.Next == "" {
			break
		}
		q.After = r.Next
		// Between pages: a new object (newest), and one already seen removed.
		x.Put(ctx, "t", search.Doc{ID: fmt.Sprintf("vlt_new%d", page), Body: "report", Date: day0.Add(time.Hour * 100)})
		x.Remove(ctx, "t", r.Hits[0].ID)
	}
	for _, d := range all {
		if seen[d.ID] != 1 {
			t.Fatalf("%s seen %d times (%v)", d.ID, seen[d.ID], seen)
		}
	}
}

// A rebuild replaces the index with what the vault holds, and keeps updates made while it ran.
func TestRebuild(t *testing.T) {
	x := open(t)
	ctx := context.Background()
	started, release := make(chan struct{}), make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		n, err := x.Rebuild(ctx, "test:usr_1", func(yield func(search.Doc, error) bool) {
			d := docs()
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
	// During the rebuild: searches still answer from the old index; an update lands in both.
	if r, err := x.Search(ctx, "test:usr_1", search.Query{Q: "invoice", Limit: 10}); err != nil || len(r.Hits) != 3 {
		t.Fatalf("during: %v %v", ids(r), err)
	}
	x.Put(ctx, "test:usr_1", search.Doc{ID: "vlt_5", Subject: "late invoice", Date: day0})
	close(release)
	wg.Wait()
	r, err := x.Search(ctx, "test:usr_1", search.Query{Q: "invoice", Limit: 10})
	if err != nil || !slices.Equal(ids(r), []string{"vlt_5", "vlt_1"}) {
		t.Fatalf("after: %v %v", ids(r), err)
	}
	if n, _ := x.Count("test:usr_1"); n != 2 {
		t.Fatalf("count %d", n)
	}
	// A rebuild whose source fails keeps the old index.
	_, err = x.Rebuild(ctx, "test:usr_1", func(yield func(search.Doc, error) bool) { yield(search.Doc{}, errors.New("vault unreadable")) }, nil)
	if err == nil {
		t.Fatal("failed rebuild reported success")
	}
	if n, _ := x.Count("test:usr_1"); n != 2 {
		t.Fatalf("count after a failed rebuild %d", n)
	}
}

// The index survives a reopen.
func TestReopen(t *testing.T) {
	dir := t.TempDir()
	x, err := search.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	x.Put(context.Background(), "test:usr_1", docs()...)
	x.Close()
	if !x.Exists("test:usr_1") || x.Exists("test:usr_2") {
		t.Fatal("Exists")
	}
	x, _ = search.Open(dir)
	defer x.Close()
	if n, err := x.Count("test:usr_1"); err != nil || n != 4 {
		t.Fatalf("after reopen: %d %v", n, err)
	}
}
