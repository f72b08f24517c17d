package gdrive_test

import (
	"context"
	"errors"
	"io"
	"slices"
	"testing"

	fake "svc.dev/svc/internal/vendorfake/drive"
	"svc.dev/svc/providers"
	"svc.dev/svc/providers/gdrive"
	"svc.dev/svc/providers/providertest"
)

func open(t testing.TB, s *fake.Server) providers.Provider {
	t.Helper()
	p, err := gdrive.New(context.Background(), providers.Config(s.Config()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = providers.CloseProvider(p) })
	return p
}

func TestConformance(t *testing.T) {
	providertest.Run(t, providertest.Harness{
		Open: func(t testing.TB) (providers.Provider, string) {
			return open(t, fake.New(t, fake.Options{Files: 25, Seed: 2})), "root"
		},
		MinObjects: 25,
	})
}

// TestListing: files only (no folders, no Google Docs), with their folder
// paths, checksums and permissions.
func TestListing(t *testing.T) {
	s := fake.New(t, fake.Options{Files: 60, Seed: 4})
	p := open(t, s)
	objs, m := providertest.ListAll(context.Background(), t, p, "root", 7)
	if len(objs) != 60 || m.Kind != providers.MarkerPageToken {
		t.Fatalf("listed %d of 60, marker %v", len(objs), m)
	}
	var photos, shared, link, nested int
	for _, o := range objs {
		if o.SHA256 == "" || o.Version == "" || len(o.Containers) > 1 {
			t.Fatalf("object %+v", o)
		}
		if len(o.Containers) == 0 {
			if o.Path != o.Name {
				t.Fatalf("object at the root: %+v", o)
			}
			continue
		}
		if o.Path != o.Containers[0]+"/"+o.Name {
			t.Fatalf("object %+v", o)
		}
		if o.Kind == providers.KindPhoto {
			photos++
		}
		if o.Shared {
			shared++
		}
		if slices.ContainsFunc(o.Permissions, func(x providers.Permission) bool { return x.Type == providers.PrincipalLink }) {
			link++
		}
		if o.Containers[0] == "Photos/2024" || o.Containers[0] == "Documents/Invoices" {
			nested++
		}
		if !slices.ContainsFunc(o.Permissions, func(x providers.Permission) bool { return x.Role == providers.RoleOwner }) {
			t.Errorf("%s has no owner: %+v", o.ID, o.Permissions)
		}
	}
	if photos == 0 || shared == 0 || link == 0 || nested == 0 {
		t.Errorf("photos %d, shared %d, link-shared %d, in nested folders %d: want some of each", photos, shared, link, nested)
	}
}

// TestChecksum: content that does not match Drive's sha256Checksum fails
// the read with ErrInvalidData.
func TestChecksum(t *testing.T) {
	s := fake.New(t, fake.Options{Files: 5})
	p := open(t, s)
	ctx := context.Background()
	objs, _ := providertest.ListAll(ctx, t, p, "root", 0)
	s.Corrupt(objs[0].ID)
	c, err := p.Fetch(ctx, providers.FetchRequest{SourceRef: "root", ObjectID: objs[0].ID, ExpectedVersion: objs[0].Version})
	if err != nil {
		t.Fatal(err)
	}
	_, err = io.ReadAll(c.Body)
	c.Body.Close()
	if !errors.Is(err, providers.ErrInvalidData) {
		t.Errorf("corrupt content read: %v, want ErrInvalidData", err)
	}
}

// TestChangesAndQuota: an upload, a rewrite, a trash and a deletion show up
// in the delta; the quota is the account's.
func TestChangesAndQuota(t *testing.T) {
	s := fake.New(t, fake.Options{Files: 6})
	p := open(t, s)
	ctx := context.Background()
	objs, m := providertest.ListAll(ctx, t, p, "root", 0)
	added := s.Add("new.txt", "text/plain", "root", []byte("new"))
	s.Rewrite(objs[1].ID, []byte("rewritten"))
	if _, err := p.(providers.Trasher).Trash(ctx, providers.ActionRequest{SourceRef: "root", ObjectID: objs[2].ID, ExpectedVersion: objs[2].Version}); err != nil {
		t.Fatal(err)
	}
	s.Delete(objs[3].ID)
	want := map[string]providers.ChangeType{added: providers.ChangeUpsert, objs[1].ID: providers.ChangeUpsert,
		objs[2].ID: providers.ChangeDelete, objs[3].ID: providers.ChangeDelete}
	tok := ""
	for {
		pg, err := p.Changes(ctx, providers.ChangesRequest{SourceRef: "root", Since: m, PageToken: tok, PageSize: 1})
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range pg.Changes {
			if want[c.ObjectID] == c.Type {
				delete(want, c.ObjectID)
			}
		}
		if tok = pg.NextPageToken; tok == "" {
			if pg.Marker == m {
				t.Errorf("marker did not move")
			}
			break
		}
	}
	if len(want) > 0 {
		t.Errorf("changes missed %v", want)
	}
	q, err := p.(providers.Quotaer).Quota(ctx, "root")
	if err != nil || q.LimitBytes != 15<<30 || q.TrashBytes == 0 || q.Breakdown["drive"] == 0 || q.UsedBytes <= q.Breakdown["drive"] {
		t.Errorf("quota %+v, %v", q, err)
	}
}

func TestRevokedGrant(t *testing.T) {
	s := fake.New(t, fake.Options{Files: 3})
	p := open(t, s)
	s.Revoke()
	if _, err := p.List(context.Background(), providers.ListRequest{SourceRef: "root"}); !errors.Is(err, providers.ErrReauthRequired) {
		t.Errorf("list after revocation: %v", err)
	}
}
