package vault_test

import (
	"bytes"
	"path/filepath"
	"testing"
	"time"

	"svc.dev/svc/vault"
	"svc.dev/svc/vault/backend"
	"svc.dev/svc/vault/backend/local"
	"svc.dev/svc/vault/internal/seal"
	"svc.dev/svc/vault/vaulttest"
)

// A vault written before pack entries shared a key per group (seal format version 1 in
// packs: one key per entry) reads as before: its objects open, their texts open, Verify
// and Scrub find them intact, the same content put again reuses the old copy, and new
// content lands beside it in the current format.
func TestVersion1PackEntriesStillRead(t *testing.T) {
	dir := t.TempDir()
	meta, keys := vaulttest.NewMeta(), vaulttest.NewKeyStore()
	dk, err := seal.NewKey()
	if err != nil {
		t.Fatal(err)
	}
	wrapped, err := seal.Wrap(vaulttest.KEK[:], dk, tenant)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := keys.CreateWrappedKey(ctx, tenant, wrapped); err != nil {
		t.Fatal(err)
	}

	// One pack as the old code wrote it: two messages and the text of the first, each a
	// version 1 stream under its own key.
	msgs := [][]byte{
		[]byte("From: a@example.com\r\nSubject: one\r\nContent-Type: text/html\r\n\r\n<p>first <b>message</b></p>"),
		payload(7, 3000),
	}
	text := []byte("first message")
	const pack = "t/test%3Ausr_01JD0000000000000000000001/packs/00000000000000000000000000000001"
	var region []byte
	var places []vault.Placement
	for _, c := range []struct {
		plain   []byte
		purpose string
	}{{msgs[0], "content"}, {msgs[1], "content"}, {text, "text"}} {
		off := len(region)
		if region, err = seal.Seal(region, c.plain, dk, c.purpose); err != nil {
			t.Fatal(err)
		}
		places = append(places, vault.Placement{Name: pack, Offset: int64(off), Length: int64(len(region) - off), Pack: true})
	}
	hot, err := local.New(filepath.Join(dir, "hot"))
	if err != nil {
		t.Fatal(err)
	}
	if err := backend.Save(ctx, hot, pack, region); err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	ids := []string{"vlt_01JD0000000000000000000001", "vlt_01JD0000000000000000000002"}
	err = meta.Update(ctx, tenant, func(tx vault.MetaTx) error {
		for i, m := range msgs {
			d := vault.Sum(m)
			hp := places[i]
			b := vault.Blob{Digest: d, Size: int64(len(m)), Refs: 1, Hot: &hp, CreatedAt: now}
			if i == 0 {
				tp := places[2]
				b.Text, b.TextDigest, b.TextSize = &tp, vault.Sum(text), int64(len(text))
			}
			if err := tx.PutBlob(b); err != nil {
				return err
			}
			o := vault.Object{ID: ids[i], SHA256: d, SizeBytes: int64(len(m)), State: vault.StateCommitted, Held: true,
				HasText: i == 0, CreatedAt: now, CommittedAt: now, VerifiedAt: now}
			if err := tx.PutObject(o); err != nil {
				return err
			}
		}
		return tx.PutPack(vault.Pack{Name: pack, Size: int64(len(region)), Live: 3, CreatedAt: now})
	})
	if err != nil {
		t.Fatal(err)
	}

	v, err := vault.Open(dir, meta, keys, vaulttest.KEK, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	for i, id := range ids {
		if got, err := read(t, v, tenant, id); err != nil || !bytes.Equal(got, msgs[i]) {
			t.Fatalf("object %d: %d bytes, %v", i, len(got), err)
		}
		if _, err := v.Verify(ctx, tenant, id); err != nil {
			t.Fatalf("verify %d: %v", i, err)
		}
	}
	if got, err := readText(t, v, ids[0]); err != nil || got != string(text) {
		t.Fatalf("text %q, %v", got, err)
	}
	again := put(t, v, tenant, msgs[1], vault.PutRequest{})
	fresh := put(t, v, tenant, payload(8, 3000), vault.PutRequest{})
	if s := v.Stats(); s.PackWrites != 1 {
		t.Errorf("%d pack writes: the content stored in version 1 was written again, or the new one not at all", s.PackWrites)
	}
	for _, c := range []struct {
		id   string
		want []byte
	}{{again.ID, msgs[1]}, {fresh.ID, payload(8, 3000)}} {
		if got, err := read(t, v, tenant, c.id); err != nil || !bytes.Equal(got, c.want) {
			t.Fatalf("%s: %v", c.id, err)
		}
	}
	rep, err := v.Scrub(ctx, tenant, &vault.ScrubOptions{OrphanGrace: time.Nanosecond})
	if err != nil || len(rep.Corrupt) > 0 || rep.TextCorrupt > 0 || rep.Verified != 4 {
		t.Fatalf("scrub: %+v, %v", rep, err)
	}
}
