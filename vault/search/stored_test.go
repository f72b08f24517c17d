package search

import (
	"context"
	"strings"
	"testing"
	"time"

	index "github.com/blevesearch/bleve_index_api"
)

// The index keeps no text as stored fields: a document fetched back from bleve has no
// subject, name or body (nor any other stored field), only what is needed to find and sort
// it; and a snippet is cut from the TextSource, with the marks where the index says.
func TestIndexStoresNoText(t *testing.T) {
	d := Doc{ID: "vlt_s", Subject: "Quarterly Zanzibar figures", Name: "figures.eml", From: "cfo@example.com",
		Body: "The hovercraft delivered 7731 units to Zanzibar last quarter.", Type: "message", State: "committed",
		Date: time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)}
	x, err := OpenWith(t.TempDir(), &Options{Text: func(context.Context, string, string) (Doc, error) { return d, nil }})
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	ctx := context.Background()
	if err := x.Put(ctx, "t", d); err != nil {
		t.Fatal(err)
	}
	ti, err := x.tenant("t")
	if err != nil {
		t.Fatal(err)
	}
	doc, err := ti.idx.Document(d.ID)
	if err != nil || doc == nil {
		t.Fatalf("document: %v", err)
	}
	doc.VisitFields(func(f index.Field) {
		if v := string(f.Value()); f.Options().IsStored() || strings.Contains(v, "Zanzibar") || strings.Contains(v, "hovercraft") {
			t.Errorf("field %s is kept: %q (stored %v)", f.Name(), v, f.Options().IsStored())
		}
	})
	r, err := x.Search(ctx, "t", Query{Q: "zanzibar", Limit: 5})
	if err != nil || len(r.Hits) != 1 {
		t.Fatalf("%+v %v", r, err)
	}
	if want := "The hovercraft delivered 7731 units to <mark>Zanzibar</mark> last quarter."; r.Hits[0].Snippet != want {
		t.Fatalf("snippet %q, want %q", r.Hits[0].Snippet, want)
	}
}

// An index opened without a TextSource stores its text and highlights it, as before; opened
// later with one, it says it still stores text until it is rebuilt, and the rebuilt one
// stores none.
func TestIndexStoringTextIsRebuiltWithout(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	d := Doc{ID: "vlt_r", Subject: "Ledger", Body: "The zeppelin ledger for March.", Date: time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)}
	x, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := x.Put(ctx, "t", d); err != nil {
		t.Fatal(err)
	}
	if stores, err := x.StoresText("t"); err != nil || !stores {
		t.Fatalf("an index without a TextSource: stores text %v, %v", stores, err)
	}
	r, err := x.Search(ctx, "t", Query{Q: "zeppelin", Limit: 5})
	if err != nil || len(r.Hits) != 1 || !strings.Contains(r.Hits[0].Snippet, "<mark>zeppelin</mark>") {
		t.Fatalf("highlighted from stored fields: %+v %v", r, err)
	}
	x.Close()

	x, err = OpenWith(dir, &Options{Text: func(context.Context, string, string) (Doc, error) { return d, nil }})
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	if stores, _ := x.StoresText("t"); !stores {
		t.Fatal("an index made with stored fields should say so until it is rebuilt")
	}
	n, err := x.Rebuild(ctx, "t", func(yield func(Doc, error) bool) { yield(d, nil) }, nil)
	if err != nil || n != 1 {
		t.Fatalf("rebuild: %d, %v", n, err)
	}
	if stores, _ := x.StoresText("t"); stores {
		t.Fatal("the rebuilt index stores text")
	}
	r, err = x.Search(ctx, "t", Query{Q: "zeppelin", Limit: 5})
	if err != nil || len(r.Hits) != 1 || r.Hits[0].Snippet != "The <mark>zeppelin</mark> ledger for March." {
		t.Fatalf("after the rebuild: %+v %v", r, err)
	}
}
