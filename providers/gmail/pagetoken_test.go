package gmail_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"slices"
	"testing"

	fake "svc.dev/svc/internal/vendorfake/gmail"
	"svc.dev/svc/providers"
	"svc.dev/svc/providers/pagetoken"
)

// legacyToken is the page token encoder vendor_a_mail used before
// providers/pagetoken, kept to make the tokens a paused listing may hand
// back after an upgrade.
func legacyToken(history uint64, page string) string {
	b, _ := json.Marshal(struct {
		V       int    `json:"v"`
		History uint64 `json:"h"`
		Page    string `json:"p"`
	}{1, history, page})
	return base64.RawURLEncoding.EncodeToString(b)
}

// goldenLegacyToken was made by the old encoder for the fake's mailbox at
// history 20000, Gmail's page token after seeded message 6
// ("18c0000000000006").
const goldenLegacyToken = "eyJ2IjoxLCJoIjoyMDAwMCwicCI6Ik1UaGpNREF3TURBd01EQXdNREF3TmcifQ"

// TestLegacyPageTokens: a listing or a delta paused before the move to
// providers/pagetoken resumes from its old token at the same place.
func TestLegacyPageTokens(t *testing.T) {
	s := fake.New(t, fake.Options{Messages: 30, Seed: 3})
	p := open(t, s, nil)
	ctx := context.Background()

	if got := legacyToken(20000, base64.RawURLEncoding.EncodeToString([]byte("18c0000000000006"))); got != goldenLegacyToken {
		t.Fatalf("the kept encoder makes %s, not the golden token", got)
	}
	page, err := p.List(ctx, providers.ListRequest{SourceRef: "me", PageToken: goldenLegacyToken, PageSize: 5})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Objects) == 0 || page.Objects[0].ID != "18c0000000000007" || page.NextPageToken == "" {
		t.Fatalf("golden token: page %v, want it to start after seeded message 6", ids(page.Objects))
	}

	// A token of today's format, rewritten in the old one, gives the same pages.
	first, err := p.List(ctx, providers.ListRequest{SourceRef: "me", PageSize: 7})
	if err != nil {
		t.Fatal(err)
	}
	var st struct {
		H uint64 `json:"h"`
		P string `json:"p"`
	}
	if err := pagetoken.DecodeState("gmail.list", first.NextPageToken, &st); err != nil {
		t.Fatalf("the listing's token is not a providers/pagetoken one: %v", err)
	}
	for _, tok := range []string{first.NextPageToken, legacyToken(st.H, st.P)} {
		var all []providers.Object
		var marker providers.Marker
		for tok != "" {
			pg, err := p.List(ctx, providers.ListRequest{SourceRef: "me", PageToken: tok, PageSize: 7})
			if err != nil {
				t.Fatal(err)
			}
			all, tok, marker = append(all, pg.Objects...), pg.NextPageToken, pg.Marker
		}
		if len(all) != 30-7 || all[0].ID == first.Objects[len(first.Objects)-1].ID || marker.Value != "20000" {
			t.Errorf("resumed: %d objects from %s, marker %v; want the 23 after the first page and the listing's marker", len(all), all[0].ID, marker)
		}
	}

	// A delta's old token too.
	for range 3 {
		s.Insert([]byte("From: a@example.com\r\nSubject: new\r\n\r\nx\r\n"), "INBOX")
	}
	since := providers.Marker{Kind: providers.MarkerHistoryID, Value: "20000"}
	cp, err := p.Changes(ctx, providers.ChangesRequest{SourceRef: "me", Since: since, PageSize: 1})
	if err != nil || cp.NextPageToken == "" {
		t.Fatalf("changes: %v, %+v", err, cp)
	}
	if err := pagetoken.DecodeState("gmail.changes", cp.NextPageToken, &st); err != nil {
		t.Fatal(err)
	}
	next, err := p.Changes(ctx, providers.ChangesRequest{SourceRef: "me", Since: since, PageSize: 1, PageToken: legacyToken(st.H, st.P)})
	if err != nil || len(next.Changes) != 1 || next.Changes[0].ObjectID == cp.Changes[0].ObjectID {
		t.Errorf("changes from an old token: %v, %+v; want the second change", err, next)
	}

	// A token of one kind is not taken by the other, nor garbage.
	for _, bad := range []string{"nope", cp.NextPageToken} {
		if _, err := p.List(ctx, providers.ListRequest{SourceRef: "me", PageToken: bad}); !errors.Is(err, providers.ErrInvalidArgument) {
			t.Errorf("list with %q: %v, want ErrInvalidArgument", bad, err)
		}
	}
}

func ids(objs []providers.Object) []string {
	out := make([]string, len(objs))
	for i, o := range objs {
		out[i] = o.ID
	}
	return slices.Clip(out)
}
