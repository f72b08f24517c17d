package dropbox_test

import (
	"context"
	"errors"
	"testing"
	"time"

	fake "svc.dev/svc/internal/vendorfake/dropbox"
	"svc.dev/svc/providers"
	"svc.dev/svc/providers/dropbox"
	"svc.dev/svc/providers/providertest"
)

// config is the fake's own provider configuration (ProviderConfig).
func config(s *fake.Server) providers.Config { return providers.Config(s.ProviderConfig()) }

func TestConformance(t *testing.T) {
	providertest.Run(t, providertest.Harness{
		Open: func(t testing.TB) (providers.Provider, string) {
			s := fake.Seeded(fake.Seed{Seed: 1, Files: 9})
			t.Cleanup(s.Close)
			p, err := dropbox.New(context.Background(), config(s))
			if err != nil {
				t.Fatal(err)
			}
			return p, "default"
		},
		MinObjects: 9,
	})
}

// TestChanges: a new revision written elsewhere is an upsert at its new
// rev, a deleted file a delete; a round without change keeps the marker;
// untrash restores the deleted revision and refuses to replace a file that
// took its path since.
func TestChanges(t *testing.T) {
	s := fake.Seeded(fake.Seed{Seed: 3, Files: 6})
	defer s.Close()
	p, err := dropbox.New(context.Background(), config(s))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	objs, m := providertest.ListAll(ctx, t, p, "default", 2)
	a, b := objs[0], objs[1]
	s.AddFile("/"+a.Path, []byte("new revision"), time.Now())
	tr, _ := providers.AsTrasher(p)
	res, err := tr.Trash(ctx, providers.ActionRequest{ObjectID: b.ID, ExpectedVersion: b.Version})
	if err != nil {
		t.Fatal(err)
	}
	pg, err := p.Changes(ctx, providers.ChangesRequest{Since: m, PageSize: 10})
	if err != nil || pg.NextPageToken != "" || len(pg.Changes) != 2 {
		t.Fatalf("changes: %+v, %v", pg, err)
	}
	for _, c := range pg.Changes {
		switch {
		case c.ObjectID == a.ID && (c.Type != providers.ChangeUpsert || c.Object.Version == a.Version):
			t.Errorf("new revision: %+v", c)
		case c.ObjectID == b.ID && c.Type != providers.ChangeDelete:
			t.Errorf("deleted file: %+v", c)
		}
	}
	if again, err := p.Changes(ctx, providers.ChangesRequest{Since: pg.Marker}); err != nil || len(again.Changes) != 0 || again.Marker != pg.Marker {
		t.Errorf("changes since the new marker: %+v, %v", again, err)
	}
	// Another file takes the trashed one's path: untrash must not replace it.
	s.AddFile("/"+b.Path, []byte("someone else's"), time.Now())
	un, _ := providers.AsUntrasher(p)
	if _, err := un.Untrash(ctx, providers.UntrashRequest{ObjectID: b.ID, ResultID: res.ResultID}); !errors.Is(err, providers.ErrAlreadyExists) {
		t.Errorf("untrash onto another file: %v, want ErrAlreadyExists", err)
	}
}
