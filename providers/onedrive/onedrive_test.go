package onedrive_test

import (
	"context"
	"testing"

	fake "svc.dev/svc/internal/vendorfake/graph"
	"svc.dev/svc/providers"
	"svc.dev/svc/providers/onedrive"
	"svc.dev/svc/providers/providertest"
)

// Config returns the config of a provider for a fake's drive.
func config(s *fake.Server) providers.Config {
	return providers.Config{
		"endpoint": s.Endpoint(), "access_token": fake.AccessToken, "refresh_token": fake.RefreshToken,
		"client_id": "svc-test", "token_url": s.TokenURL(), "requests_per_second": "1000", "burst": "100",
	}
}

func TestConformance(t *testing.T) {
	providertest.Run(t, providertest.Harness{
		Open: func(t testing.TB) (providers.Provider, string) {
			s := fake.Seeded(fake.Seed{Seed: 1, Files: 9, Messages: 1})
			t.Cleanup(s.Close)
			p, err := onedrive.New(context.Background(), config(s))
			if err != nil {
				t.Fatal(err)
			}
			return p, "default"
		},
		MinObjects: 9,
	})
}

// TestChanges: content replaced elsewhere is an upsert at its new eTag, a
// file deleted elsewhere a delete; a round without change keeps the marker.
func TestChanges(t *testing.T) {
	s := fake.Seeded(fake.Seed{Seed: 3, Files: 6, Messages: 1})
	defer s.Close()
	p, err := onedrive.New(context.Background(), config(s))
	if err != nil {
		t.Fatal(err)
	}
	objs, m := providertest.ListAll(context.Background(), t, p, "default", 2)
	s.UpdateItem(objs[0].ID, []byte("new content"))
	tr, _ := providers.AsTrasher(p)
	if _, err := tr.Trash(context.Background(), providers.ActionRequest{ObjectID: objs[1].ID, ExpectedVersion: objs[1].Version}); err != nil {
		t.Fatal(err)
	}
	pg, err := p.Changes(context.Background(), providers.ChangesRequest{Since: m, PageSize: 10})
	if err != nil || pg.NextPageToken != "" || len(pg.Changes) != 2 {
		t.Fatalf("changes: %+v, %v", pg, err)
	}
	byID := map[string]providers.Change{}
	for _, c := range pg.Changes {
		byID[c.ObjectID] = c
	}
	if c := byID[objs[0].ID]; c.Type != providers.ChangeUpsert || c.Object.Version == objs[0].Version || c.Object.SizeBytes != 11 {
		t.Errorf("replaced file: %+v", c)
	}
	if c := byID[objs[1].ID]; c.Type != providers.ChangeDelete {
		t.Errorf("trashed file: %+v", c)
	}
	again, err := p.Changes(context.Background(), providers.ChangesRequest{Since: pg.Marker})
	if err != nil || len(again.Changes) != 0 || again.Marker != pg.Marker {
		t.Errorf("changes since the new marker: %+v, %v", again, err)
	}
}
