package gdrive_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"slices"
	"testing"

	fake "svc.dev/svc/internal/vendorfake/drive"
	"svc.dev/svc/providers"
	"svc.dev/svc/providers/pagetoken"
)

// legacyToken is the page token encoder vendor_a_files used before
// providers/pagetoken, kept to make the tokens a paused listing may hand
// back after an upgrade.
func legacyToken(marker, page string) string {
	b, _ := json.Marshal(struct {
		V      int    `json:"v"`
		Marker string `json:"m"`
		Page   string `json:"p"`
	}{1, marker, page})
	return base64.RawURLEncoding.EncodeToString(b)
}

// TestLegacyPageTokens: a listing or a delta paused before the move to
// providers/pagetoken resumes from its old token at the same place, in My
// Drive and in a shared drive.
func TestLegacyPageTokens(t *testing.T) {
	s := fake.New(t, fake.Options{Files: 12, SharedFiles: 9, Seed: 4})
	p := open(t, s)
	ctx := context.Background()
	for _, src := range []string{"root", "drive:" + fake.SharedDriveID} {
		t.Run(src, func(t *testing.T) {
			var want []string
			var wantMarker providers.Marker
			first, err := p.List(ctx, providers.ListRequest{SourceRef: src, PageSize: 4})
			if err != nil {
				t.Fatal(err)
			}
			var st struct {
				M string `json:"m"`
				P string `json:"p"`
			}
			if err := pagetoken.DecodeState("gdrive.list", first.NextPageToken, &st); err != nil {
				t.Fatalf("the listing's token is not a providers/pagetoken one: %v", err)
			}
			for i, tok := range []string{first.NextPageToken, legacyToken(st.M, st.P)} {
				var got []string
				var marker providers.Marker
				for tok != "" {
					pg, err := p.List(ctx, providers.ListRequest{SourceRef: src, PageToken: tok, PageSize: 4})
					if err != nil {
						t.Fatal(err)
					}
					for _, o := range pg.Objects {
						got = append(got, o.ID)
					}
					tok, marker = pg.NextPageToken, pg.Marker
				}
				if i == 0 {
					want, wantMarker = got, marker
					continue
				}
				if !slices.Equal(got, want) || marker != wantMarker || len(got) == 0 {
					t.Errorf("resumed from the old token: %v, marker %v; from the new one: %v, marker %v", got, marker, want, wantMarker)
				}
			}
		})
	}

	// A delta's old token too.
	objs, since := listAllOf(t, p, "root")
	for _, o := range objs[:3] {
		if _, err := p.(providers.Trasher).Trash(ctx, providers.ActionRequest{SourceRef: "root", ObjectID: o.ID}); err != nil {
			t.Fatal(err)
		}
	}
	cp, err := p.Changes(ctx, providers.ChangesRequest{SourceRef: "root", Since: since, PageSize: 1})
	if err != nil || cp.NextPageToken == "" {
		t.Fatalf("changes: %v, %+v", err, cp)
	}
	var st struct {
		M string `json:"m"`
		P string `json:"p"`
	}
	if err := pagetoken.DecodeState("gdrive.changes", cp.NextPageToken, &st); err != nil {
		t.Fatal(err)
	}
	fromNew, err := p.Changes(ctx, providers.ChangesRequest{SourceRef: "root", Since: since, PageSize: 1, PageToken: cp.NextPageToken})
	if err != nil {
		t.Fatal(err)
	}
	fromOld, err := p.Changes(ctx, providers.ChangesRequest{SourceRef: "root", Since: since, PageSize: 1, PageToken: legacyToken(st.M, st.P)})
	if err != nil || len(fromOld.Changes) == 0 || fromOld.Changes[0].ObjectID != fromNew.Changes[0].ObjectID {
		t.Errorf("changes from the old token: %v, %+v; from the new one %+v", err, fromOld, fromNew)
	}
	for _, bad := range []string{"nope", cp.NextPageToken} {
		if _, err := p.List(ctx, providers.ListRequest{SourceRef: "root", PageToken: bad}); !errors.Is(err, providers.ErrInvalidArgument) {
			t.Errorf("list with %q: %v, want ErrInvalidArgument", bad, err)
		}
	}
}

func listAllOf(t *testing.T, p providers.Provider, src string) ([]providers.Object, providers.Marker) {
	t.Helper()
	var objs []providers.Object
	tok := ""
	for {
		pg, err := p.List(context.Background(), providers.ListRequest{SourceRef: src, PageToken: tok, PageSize: 5})
		if err != nil {
			t.Fatal(err)
		}
		objs = append(objs, pg.Objects...)
		if tok = pg.NextPageToken; tok == "" {
			return objs, pg.Marker
		}
	}
}
