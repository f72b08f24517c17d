package svc

import (
	"context"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/storage/bolt"
	"svc.dev/svc/vault"
	"svc.dev/svc/vault/search"
	"svc.dev/svc/vault/vaulttest"
)

// feedRig is what the index worker needs, on a data directory that survives a "crash": the
// bbolt store, the vault and the search index, opened again by openFeedRig; its worker never
// runs on its own (the test drains the feed).
type feedRig struct {
	dir  string
	seam *bolt.Seam
	vlt  *vault.Vault
	ix   *vaultIndex
}

func openFeedRig(t *testing.T, dir string) *feedRig {
	t.Helper()
	seam, err := bolt.OpenSeam(filepath.Join(dir, "svc.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	vlt, err := vault.Open(filepath.Join(dir, "vault"), seam.VaultMeta(), seam.VaultMeta(), vaulttest.KEK, nil)
	if err != nil {
		t.Fatal(err)
	}
	c := &core{store: seam, vault: vlt, log: slog.New(slog.DiscardHandler)}
	if c.search, err = openSearch(dir, c, nil); err != nil {
		t.Fatal(err)
	}
	return &feedRig{dir: dir, seam: seam, vlt: vlt, ix: c.search}
}

// crash closes everything without applying the feed, as a process killed before its index
// worker ran.
func (r *feedRig) crash() {
	r.ix.close()
	r.vlt.Close()
	r.seam.Close()
}

func (r *feedRig) found(t *testing.T, tenant, q string) []string {
	t.Helper()
	res, err := r.ix.index.Search(context.Background(), tenant, search.Query{Q: q, Limit: 50})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, h := range res.Hits {
		ids = append(ids, h.ID)
	}
	return ids
}

// TestSearchFeedSurvivesACrash: a commit is in the vault's change feed from its own
// transaction, so an object committed just before a crash (the index worker never ran) is
// indexed after the restart; an object that names a manifest is announced by the manifest's
// transaction, once, and indexed with the manifest's headers; applied entries are removed.
func TestSearchFeedSurvivesACrash(t *testing.T) {
	ctx, tenant, dir := context.Background(), "test:usr_feed", t.TempDir()
	r := openFeedRig(t, dir)
	note, err := r.vlt.Put(ctx, tenant, vault.PutRequest{Name: "notes.txt", MIMEType: "text/plain", SizeBytes: -1},
		strings.NewReader("the lighthouse keeper's ledger"))
	if err != nil {
		t.Fatal(err)
	}
	const assetID = "ast_01JD0000000000000000000001"
	msg, err := r.vlt.Put(ctx, tenant, vault.PutRequest{AssetID: assetID, ManifestID: "mfs_01JD0000000000000000000001",
		MIMEType: "message/rfc822", Kind: "message", SizeBytes: -1},
		strings.NewReader("From: a@example.com\r\nSubject: raw subject\r\n\r\nabout the harbour\r\n"))
	if err != nil {
		t.Fatal(err)
	}
	entries, _, err := r.ix.feed.Read(ctx, 0, 100)
	if err != nil || len(entries) != 1 || entries[0].ObjectID != note.ID {
		t.Fatalf("feed after the commits: %+v %v; want only %s (the message waits for its manifest)", entries, err, note.ID)
	}
	m := &svcv1.Manifest{ManifestId: "mfs_01JD0000000000000000000001", AssetId: assetID,
		Content: &svcv1.ManifestContent{Kind: svcv1.ContentKind_CONTENT_KIND_MESSAGE,
			Message: &svcv1.ManifestMessage{Subject: "Quarterly harbour dues", From: "harbourmaster@example.com",
				Date: timestamppb.New(msg.CommittedAt)}}}
	err = r.seam.Manifests().Upsert(ctx, tenant, assetID, func() (*svcv1.Manifest, error) { return m, nil },
		func(*svcv1.Manifest) error { return nil }, r.seam.VaultChanged(tenant, msg.ID))
	if err != nil {
		t.Fatal(err)
	}
	r.crash()

	r = openFeedRig(t, dir)
	if got := r.found(t, tenant, "lighthouse"); len(got) != 0 {
		t.Fatalf("indexed before the worker ran: %v", got)
	}
	r.ix.drain(ctx, ctx)
	if got := r.found(t, tenant, "lighthouse"); len(got) != 1 || got[0] != note.ID {
		t.Fatalf("after the restart, lighthouse: %v, want [%s]", got, note.ID)
	}
	if got := r.found(t, tenant, "subject:dues harbour"); len(got) != 1 || got[0] != msg.ID {
		t.Fatalf("after the restart, the message by its manifest's subject: %v, want [%s]", got, msg.ID)
	}
	if entries, _, _ := r.ix.feed.Read(ctx, 0, 100); len(entries) != 0 {
		t.Fatalf("applied entries left in the feed: %+v", entries)
	}

	// A deletion is announced in its own transaction too.
	if _, err := r.vlt.Delete(ctx, tenant, note.ID); err != nil {
		t.Fatal(err)
	}
	if entries, _, _ := r.ix.feed.Read(ctx, 0, 100); len(entries) != 1 || entries[0].ObjectID != note.ID {
		t.Fatalf("feed after the deletion: %+v, want %s", entries, note.ID)
	}
	waiting, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if err := r.ix.sync(waiting); err == nil {
		t.Fatal("sync returned before the deletion was applied")
	}
	r.ix.drain(ctx, ctx)
	if err := r.ix.sync(ctx); err != nil {
		t.Fatal(err)
	}
	if got := r.found(t, tenant, "lighthouse"); len(got) != 0 {
		t.Fatalf("a deleted object is still found: %v", got)
	}

	// After a restart with nothing left in the feed, a search does not wait for entries that
	// were applied and deleted by the previous process.
	r.crash()
	r = openFeedRig(t, dir)
	r.ix.drain(ctx, ctx)
	quick, cancel2 := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel2()
	if err := r.ix.sync(quick); err != nil {
		t.Fatalf("sync after a restart with an empty feed: %v", err)
	}
	r.crash()
}
