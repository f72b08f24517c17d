package gdrive_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"slices"
	"strings"
	"testing"

	fake "svc.dev/svc/internal/vendorfake/drive"
	"svc.dev/svc/providers"
	"svc.dev/svc/providers/gdrive"
	"svc.dev/svc/providers/providertest"
)

func open(t testing.TB, s *fake.Server) providers.Provider {
	t.Helper()
	return openWith(t, s, nil)
}

// openWith opens a provider on a fake with its configuration changed by
// edit (nil: as the fake gives it).
func openWith(t testing.TB, s *fake.Server, edit func(providers.Config)) providers.Provider {
	t.Helper()
	cfg := providers.Config(s.Config())
	if edit != nil {
		edit(cfg)
	}
	p, err := gdrive.New(context.Background(), cfg)
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
	if len(objs) != 62 || m.Kind != providers.MarkerPageToken {
		t.Fatalf("listed %d of 62 (60 files, 2 Docs editors files), marker %v", len(objs), m)
	}
	var photos, shared, link, nested, docs int
	for _, o := range objs {
		if native := o.Metadata["drive.native_mime"]; native != "" {
			docs++
			e := gdrive.Exports[native]
			if o.MIMEType != e.MIMEType || !strings.HasSuffix(o.Name, e.Ext) || o.SHA256 != "" || o.SizeBytes == 0 || o.Containers[0] != "Documents" {
				t.Errorf("Docs editors file %+v", o)
			}
			continue
		}
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
	if photos == 0 || shared == 0 || link == 0 || nested == 0 || docs != 2 {
		t.Errorf("photos %d, shared %d, link-shared %d, in nested folders %d, Docs editors files %d: want some of each", photos, shared, link, nested, docs)
	}
	skip := openWith(t, s, func(cfg providers.Config) { cfg["docs"] = "skip" })
	if objs, _ := providertest.ListAll(context.Background(), t, skip, "root", 0); len(objs) != 60 {
		t.Errorf("docs skip: listed %d, want the 60 files", len(objs))
	}
}

// TestDocsExported: a Google Doc is fetched as its DOCX export, at the size
// the listing said, and refused at a moved version; Docs editors files
// trash and untrash as files do.
func TestDocsExported(t *testing.T) {
	s := fake.New(t, fake.Options{Files: 3, Seed: 8})
	p := open(t, s)
	ctx := context.Background()
	objs, _ := providertest.ListAll(ctx, t, p, "root", 0)
	i := slices.IndexFunc(objs, func(o providers.Object) bool { return o.Metadata["drive.native_mime"] == fake.DocType })
	if i < 0 {
		t.Fatal("no Google Doc listed")
	}
	doc := objs[i]
	c, err := p.Fetch(ctx, providers.FetchRequest{SourceRef: "root", ObjectID: doc.ID, ExpectedVersion: doc.Version})
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(c.Body)
	c.Body.Close()
	if err != nil || int64(len(b)) != doc.SizeBytes || c.Object.SizeBytes != doc.SizeBytes ||
		!strings.HasPrefix(string(b), gdrive.Exports[fake.DocType].MIMEType+" export of "+doc.ID) {
		t.Fatalf("export: %d bytes (%v), listed %d: %.80q", len(b), err, doc.SizeBytes, b)
	}
	s.Rewrite(doc.ID, []byte("Day 1: Porto."))
	if _, err := p.Fetch(ctx, providers.FetchRequest{SourceRef: "root", ObjectID: doc.ID, ExpectedVersion: doc.Version}); !errors.As(err, new(*providers.VersionMismatchError)) {
		t.Fatalf("export at a moved version: %v", err)
	}
	if _, err := p.Fetch(ctx, providers.FetchRequest{SourceRef: "root", ObjectID: doc.ID, MaxBytes: 10}); !errors.Is(err, providers.ErrTooLarge) {
		t.Errorf("export over the bound: %v", err)
	}
	// A document Drive will not export (over 10 MB: 403 exportSizeLimitExceeded) is left
	// out of listings, and its fetch is ErrTooLarge, not a lost grant.
	s.Rewrite(doc.ID, bytes.Repeat([]byte("x"), fake.MaxExport))
	after, _ := providertest.ListAll(ctx, t, p, "root", 0)
	if len(after) != len(objs)-1 || slices.ContainsFunc(after, func(o providers.Object) bool { return o.ID == doc.ID }) {
		t.Errorf("listing with a document over the export limit: %d objects, before %d", len(after), len(objs))
	}
	_, err = p.Fetch(ctx, providers.FetchRequest{SourceRef: "root", ObjectID: doc.ID})
	if !errors.Is(err, providers.ErrTooLarge) || errors.Is(err, providers.ErrPermission) {
		t.Errorf("fetch of a document over the export limit: %v, want ErrTooLarge", err)
	}
}

// TestChecksum: content that does not match Drive's sha256Checksum fails
// the read with ErrInvalidData.
func TestChecksum(t *testing.T) {
	s := fake.New(t, fake.Options{Files: 5})
	p := open(t, s)
	ctx := context.Background()
	objs, _ := providertest.ListAll(ctx, t, p, "root", 0)
	objs = slices.DeleteFunc(objs, func(o providers.Object) bool { return o.SHA256 == "" }) // Docs exports have no checksum
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
	// A file Drive flags as abusive refuses its content with a 403 that is about the
	// file, not the grant.
	s.FlagAbusive(objs[1].ID)
	_, err = p.Fetch(ctx, providers.FetchRequest{SourceRef: "root", ObjectID: objs[1].ID})
	if !errors.Is(err, providers.ErrUnsupported) || errors.Is(err, providers.ErrPermission) {
		t.Errorf("fetch of a file flagged as abusive: %v, want ErrUnsupported", err)
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
