package svc_test

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"svc.dev/svc"
	"svc.dev/svc/internal/pgtest"
	"svc.dev/svc/storage/postgres"
	"svc.dev/svc/vault/search"
)

// TestSearchInACluster: two instances on one PostgreSQL database and one vault (two replicas
// of a cluster; here they share a directory for the vault and the keys, as replicas share a
// bucket and a master key) search one index in the database: what one vaults the other finds
// at once, a page from one continues on the other, a deletion through one is gone from the
// other's results, and no index is kept in the data directory.
func TestSearchInACluster(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dsn, dir := pgtest.Database(t), t.TempDir()
	open := func() *svc.Instance {
		st, err := postgres.Open(ctx, dsn)
		if err != nil {
			t.Fatal(err)
		}
		sv, err := svc.Open(ctx, dir, &svc.Options{Store: st,
			SearchIndex: func(o *search.Options) (svc.SearchIndex, error) { return st.SearchIndex(o), nil }})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { sv.Close(); st.Close() })
		return sv
	}
	a, b := open(), open()
	root := t.TempDir()
	for name, body := range map[string]string{
		"harbour-dues.txt": "The lighthouse keeper paid the harbour dues in March.",
		"lake-house.txt":   "Booking reference for the lake house: 7731, near the harbour.",
		"recipe.txt":       "Lemon cake with lemons from the harbour market.",
	} {
		if err := os.WriteFile(filepath.Join(root, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	rescue(ctx, t, a, root, true)

	names := func(res svc.SearchResult) []string {
		var out []string
		for _, h := range res.Hits {
			out = append(out, h.Object.Name)
		}
		slices.Sort(out)
		return out
	}
	res, err := b.SearchVault(ctx, svc.SearchQuery{Q: "lighthouse"})
	if err != nil || !slices.Equal(names(res), []string{"harbour-dues.txt"}) {
		t.Fatalf("b finds what a vaulted: %v %v", names(res), err)
	}
	if res.Hits[0].Snippet == "" || !slices.Equal(res.Hits[0].Matched, []string{"body"}) {
		t.Fatalf("hit %+v", res.Hits[0])
	}
	// A page from a, the next from b.
	first, err := a.SearchVault(ctx, svc.SearchQuery{Q: "harbour", Limit: 2})
	if err != nil || len(first.Hits) != 2 || first.Next == "" {
		t.Fatalf("a's page: %v %v", names(first), err)
	}
	second, err := b.SearchVault(ctx, svc.SearchQuery{Q: "harbour", Limit: 2, Cursor: first.Next})
	if err != nil || len(second.Hits) != 1 || second.Next != "" {
		t.Fatalf("b's page: %v %v", names(second), err)
	}
	all := append(names(first), names(second)...)
	slices.Sort(all)
	if !slices.Equal(all, []string{"harbour-dues.txt", "lake-house.txt", "recipe.txt"}) {
		t.Fatalf("pages: %v", all)
	}
	// A deletion through a: b's next search no longer finds it.
	if _, err := a.Vault().Delete(ctx, svc.DefaultTenant.String(), res.Hits[0].Object.ID); err != nil {
		t.Fatal(err)
	}
	res, err = b.SearchVault(ctx, svc.SearchQuery{Q: "lighthouse"})
	if err != nil || len(res.Hits) != 0 {
		t.Fatalf("b after a's deletion: %v %v", names(res), err)
	}
	if _, err := os.Stat(filepath.Join(dir, svc.SearchDir)); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("a search index in the data directory: %v", err)
	}
	if !a.SearchIndexed() || a.SearchIndexStoresText() {
		t.Fatal("SearchIndexed / SearchIndexStoresText")
	}
}
