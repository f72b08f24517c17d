package bolt_test

import (
	"context"
	"path/filepath"
	"testing"

	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/storage/bolt"
	"svc.dev/svc/vault"
)

// The vault's records announce an object in the change feed, in the transaction of the
// change, exactly when it becomes or stops being searchable; a first commit of an object
// that names a manifest is left to the manifest's transaction (Extra). Read returns entries
// in order; Ack removes them.
func TestVaultChangeFeed(t *testing.T) {
	ctx, tenant := context.Background(), "test:usr_1"
	db, err := bolt.Open(filepath.Join(t.TempDir(), "svc.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	meta, feed := db.VaultMeta(), db.VaultChanges()
	put := func(o vault.Object) {
		t.Helper()
		if err := meta.Update(ctx, tenant, func(tx vault.MetaTx) error { return tx.PutObject(o) }); err != nil {
			t.Fatal(err)
		}
	}
	plain := vault.Object{ID: "vlt_01JD00000000000000000000A1"}
	named := vault.Object{ID: "vlt_01JD00000000000000000000B2", ManifestID: "mfs_01JD0000000000000000000001"}
	steps := []struct {
		o    vault.Object
		st   vault.State
		want bool
	}{
		{plain, vault.StateUploading, false},
		{plain, vault.StateVerifying, false},
		{plain, vault.StateCommitted, true},
		{plain, vault.StateCommitted, false}, // no change of state
		{named, vault.StateUploading, false},
		{named, vault.StateCommitted, false}, // its manifest announces it
		{named, vault.StateCold, true},
		{named, vault.StateCommitted, true}, // warmed
		{named, vault.StateCorrupt, false},
		{plain, vault.StateDeleting, false},
		{plain, vault.StateDeleted, true},
	}
	var want []string
	for _, s := range steps {
		o := s.o
		o.State = s.st
		put(o)
		if s.want {
			want = append(want, o.ID)
		}
	}
	// The manifest's transaction announces the named object.
	manifests := bolt.NewCollection(db, "manifests", func() *svcv1.Manifest { return &svcv1.Manifest{} })
	if err := manifests.PutWith(ctx, tenant, "ast_1", &svcv1.Manifest{AssetId: "ast_1"}, feed.Extra(tenant, named.ID)); err != nil {
		t.Fatal(err)
	}
	want = append(want, named.ID)
	got, last, err := feed.Read(ctx, 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("feed: %+v, want %v", got, want)
	}
	for i, c := range got {
		if c.ObjectID != want[i] || c.Tenant != tenant || (i > 0 && c.Seq <= got[i-1].Seq) {
			t.Fatalf("entry %d: %+v, want %s of %s in order", i, c, want[i], tenant)
		}
	}
	if l, _ := feed.Last(ctx); l != last || last != got[len(got)-1].Seq {
		t.Fatalf("last %d and %d, want %d", l, last, got[len(got)-1].Seq)
	}
	if page, _, _ := feed.Read(ctx, got[1].Seq, 1); len(page) != 1 || page[0].Seq != got[2].Seq {
		t.Fatalf("a page after entry 1: %+v", page)
	}
	if err := feed.Ack(ctx, got[1].Seq); err != nil {
		t.Fatal(err)
	}
	if rest, _, _ := feed.Read(ctx, 0, 100); len(rest) != len(got)-2 || rest[0].Seq != got[2].Seq {
		t.Fatalf("after acknowledging two: %+v", rest)
	}
}
