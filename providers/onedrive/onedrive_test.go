package onedrive_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"slices"
	"testing"

	fake "svc.dev/svc/internal/vendorfake/graph"
	"svc.dev/svc/providers"
	"svc.dev/svc/providers/onedrive"
	"svc.dev/svc/providers/providertest"
)

// config is the fake's own provider configuration (ProviderConfig).
func config(s *fake.Server) providers.Config { return providers.Config(s.ProviderConfig()) }

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

// TestRestoreToTheOriginalPlace: a write in restore mode that names an item
// by its id (as svc's engine names the original place) brings the item back
// from the recycle bin once its content checks out; an item gone from the
// recycle bin is ErrNotFound and leaves nothing behind (no file named like
// the id).
func TestRestoreToTheOriginalPlace(t *testing.T) {
	s := fake.Seeded(fake.Seed{Seed: 4, Files: 4, Messages: 1})
	defer s.Close()
	ctx := context.Background()
	p, err := onedrive.New(ctx, config(s))
	if err != nil {
		t.Fatal(err)
	}
	objs, _ := providertest.ListAll(ctx, t, p, "default", 10)
	tr, _ := providers.AsTrasher(p)
	w, _ := providers.AsWriter(p)
	content := func(o providers.Object) []byte {
		c, err := p.Fetch(ctx, providers.FetchRequest{ObjectID: o.ID})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Body.Close()
		b, err := io.ReadAll(c.Body)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	a, b := objs[0], objs[1]
	ac, bc := content(a), content(b)
	for _, o := range []providers.Object{a, b} {
		if _, err := tr.Trash(ctx, providers.ActionRequest{ObjectID: o.ID, ExpectedVersion: o.Version}); err != nil {
			t.Fatal(err)
		}
	}
	back, err := w.Write(ctx, providers.WriteRequest{Path: a.ID, SizeBytes: int64(len(ac)), Mode: providers.WriteRestore}, bytes.NewReader(ac))
	if err != nil || back.ID != a.ID || s.ItemDeleted(a.ID) {
		t.Fatalf("restore of a trashed item by id: %+v, %v", back, err)
	}
	s.PurgeItem(b.ID)
	if _, err := w.Write(ctx, providers.WriteRequest{Path: b.ID, SizeBytes: int64(len(bc)), Mode: providers.WriteRestore}, bytes.NewReader(bc)); !errors.Is(err, providers.ErrNotFound) {
		t.Errorf("restore of a purged item by id: %v, want ErrNotFound", err)
	}
	if slices.Contains(s.LiveNames(), b.ID) {
		t.Errorf("a file named like the id was left behind")
	}
}
