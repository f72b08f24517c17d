package svc_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"svc.dev/svc"
	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/storage/storagetest"
)

func TestSearchTheVault(t *testing.T) { searchTheVault(t, nil) }

// TestSearchTheVaultOnAnotherStore: search follows the in-memory store's change feed too.
func TestSearchTheVaultOnAnotherStore(t *testing.T) {
	searchTheVault(t, &svc.Options{Store: storagetest.NewMemory()})
}

// searchTheVault: an embedded program vaults a folder and finds its files by name and by
// content, page by page; another tenant finds nothing; bad queries are refused with the field
// at fault; a rebuilt index finds the same.
func searchTheVault(t *testing.T, opts *svc.Options) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	sv, err := svc.OpenMemory(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer sv.Close()
	root := t.TempDir()
	files := map[string]string{
		"harbour-dues.txt": "The lighthouse keeper paid the harbour dues in March.",
		"lake-house.txt":   "Booking reference for the lake house: 7731.",
		"recipe.html":      "<html><body><h1>Lemon cake</h1><p>Flour, sugar and lemons from the harbour market.</p></body></html>",
		"minutes.eml": "From: clerk@example.com\r\nTo: board@example.com\r\nSubject: Board minutes\r\n" +
			"Date: Mon, 02 Mar 2026 09:00:00 +0000\r\n\r\nThe board discussed the harbour.\r\n",
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(root, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	src, x := rescue(ctx, t, sv, root, true)
	if x.GetStatus() != svcv1.ExecutionStatus_EXECUTION_STATUS_COMPLETED {
		t.Fatalf("execution: %v", x.GetStatus())
	}

	// Right after the execution: the search waits for the index to follow the vault.
	names := func(q svc.SearchQuery) []string {
		t.Helper()
		res, err := sv.SearchVault(ctx, q)
		if err != nil {
			t.Fatalf("search %+v: %v", q, err)
		}
		var out []string
		for _, h := range res.Hits {
			if h.Object.SourceID != src.Id || len(h.Matched) == 0 || h.Score <= 0 {
				t.Fatalf("hit %+v", h)
			}
			out = append(out, h.Object.Name)
		}
		slices.Sort(out)
		return out
	}
	if got := names(svc.SearchQuery{Q: "lighthouse"}); !slices.Equal(got, []string{"harbour-dues.txt"}) {
		t.Fatalf("by content: %v", got)
	}
	if got := names(svc.SearchQuery{Q: "name:lake-house.txt"}); !slices.Equal(got, []string{"lake-house.txt"}) {
		t.Fatalf("by name: %v", got)
	}
	if got := names(svc.SearchQuery{Q: "subject:minutes"}); !slices.Equal(got, []string{"minutes.eml"}) {
		t.Fatalf("a message by its subject: %v", got)
	}
	if got := names(svc.SearchQuery{Q: "harbour -lemons"}); !slices.Equal(got, []string{"harbour-dues.txt", "minutes.eml"}) {
		t.Fatalf("harbour without lemons: %v", got)
	}
	res, err := sv.SearchVault(ctx, svc.SearchQuery{Q: "lemon"})
	if err != nil || len(res.Hits) != 1 || res.Hits[0].Snippet == "" {
		t.Fatalf("snippet: %+v %v", res, err)
	}

	// Pages: three hits for harbour, one at a time, each once.
	var paged []string
	q := svc.SearchQuery{Q: "harbour", Limit: 1}
	for range 4 {
		res, err := sv.SearchVault(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		for _, h := range res.Hits {
			paged = append(paged, h.Object.Name)
		}
		if res.Next == "" {
			break
		}
		q.Cursor = res.Next
	}
	slices.Sort(paged)
	if !slices.Equal(paged, []string{"harbour-dues.txt", "minutes.eml", "recipe.html"}) {
		t.Fatalf("paged: %v", paged)
	}

	// Another tenant's search finds none of it.
	other := sv.Tenant(svc.Tenant{Owner: "someone-else", Mode: svc.ModeLive})
	if res, err := other.SearchVault(ctx, svc.SearchQuery{Q: "harbour"}); err != nil || len(res.Hits) != 0 {
		t.Fatalf("another tenant: %+v %v", res, err)
	}

	// Refusals name the field at fault.
	for _, c := range []struct {
		q     svc.SearchQuery
		field string
	}{
		{svc.SearchQuery{Q: ""}, "q"},
		{svc.SearchQuery{Q: "size:>5"}, "q"},
		{svc.SearchQuery{Q: "nosuchfield:x"}, "q"},
		{svc.SearchQuery{Q: "harbour", Cursor: "not a cursor"}, "cursor"},
		{svc.SearchQuery{Q: "harbour", Limit: svc.MaxSearchLimit + 1}, "limit"},
		{svc.SearchQuery{Q: "harbour", From: time.Now(), To: time.Now().Add(-time.Hour)}, "to"},
	} {
		_, err := sv.SearchVault(ctx, c.q)
		var se *svc.Error
		if !errors.As(err, &se) || se.Code != svc.CodeInvalidArgument || se.Field != c.field {
			t.Errorf("search %+v: %v, want validation_failed on %s", c.q, err, c.field)
		}
	}

	// A rebuild from the vault finds the same.
	if !sv.SearchIndexed() {
		t.Fatal("no index after the execution")
	}
	var progressed bool
	st, err := sv.ReindexVault(ctx, func(n int, total int64) { progressed = total == int64(len(files)) })
	if err != nil || st.Indexed != len(files) || st.IndexBytes <= 0 || !progressed {
		t.Fatalf("reindex: %+v %v (progress told %v)", st, err, progressed)
	}
	if got := names(svc.SearchQuery{Q: "lighthouse"}); !slices.Equal(got, []string{"harbour-dues.txt"}) {
		t.Fatalf("after the rebuild: %v", got)
	}
}
