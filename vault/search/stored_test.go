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
