package vaulttest

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/vault"
)

// RunMeta runs the conformance suite for a vault.Meta implementation.
// open must return an empty Meta each time.
func RunMeta(t *testing.T, open func(t testing.TB) vault.Meta) {
	ctx := context.Background()
	now := time.Date(2026, 11, 22, 10, 0, 0, 123456000, time.UTC)
	full := vault.Object{
		ID: "vlt_01JD0000000000000000000001", AssetID: "ast_01JD0000000000000000000001", Name: "n.eml",
		Provider: svcv1.Provider_PROVIDER_VENDOR_D_LOCAL, SourceID: "src_01JD0000000000000000000001",
		SHA256: vault.Sum([]byte("x")), SizeBytes: 1, MIMEType: "message/rfc822", Kind: "message",
		State: vault.StateCold, CreatedAt: now, CommittedAt: now, VerifiedAt: now, MediumVerifiedAt: now, ColdSince: now,
		HasText: true, ManifestID: "mfs_01JD0000000000000000000001", Reason: "r", Held: true,
	}
	blob := vault.Blob{
		Digest: full.SHA256, Size: 1, Refs: 2, ColdRefs: 1,
		Hot:  &vault.Placement{Name: "t/a/packs/p", Offset: 10, Length: 50, Pack: true, Format: 4, VerifiedAt: now},
		Cold: &vault.Placement{Name: "t/a/data/00/x", Length: 50, Corrupt: true},
		Text: &vault.Placement{Name: "t/a/text/00/x", Length: 60}, TextDigest: vault.Sum([]byte("t")), TextSize: 1,
		Name: "n", MIMEType: "m", Kind: "message", CreatedAt: now,
	}
	t.Run("RoundTrip", func(t *testing.T) {
		m := open(t)
		err := m.Update(ctx, "tn", func(tx vault.MetaTx) error {
			if err := tx.PutObject(full); err != nil {
				return err
			}
			if err := tx.PutBlob(blob); err != nil {
				return err
			}
			return tx.PutPack(vault.Pack{Name: "t/a/packs/p", Size: 100, Live: 3, CreatedAt: now})
		})
		if err != nil {
			t.Fatal(err)
		}
		err = m.View(ctx, "tn", func(tx vault.MetaTx) error {
			o, err := tx.Object(full.ID)
			if err != nil {
				return err
			}
			if !reflect.DeepEqual(o, full) {
				return fmt.Errorf("object round trip:\n got %+v\nwant %+v", o, full)
			}
			b, err := tx.Blob(blob.Digest)
			if err != nil {
				return err
			}
			if !reflect.DeepEqual(b, blob) {
				return fmt.Errorf("blob round trip:\n got %+v\nwant %+v", b, blob)
			}
			p, err := tx.Pack("t/a/packs/p")
			if err != nil || p.Live != 3 || p.Size != 100 || !p.CreatedAt.Equal(now) {
				return fmt.Errorf("pack: %+v, %v", p, err)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	})
	t.Run("NotFoundAndTenants", func(t *testing.T) {
		m := open(t)
		if err := m.Update(ctx, "a", func(tx vault.MetaTx) error { return tx.PutObject(full) }); err != nil {
			t.Fatal(err)
		}
		err := m.View(ctx, "b", func(tx vault.MetaTx) error {
			if _, err := tx.Object(full.ID); !errors.Is(err, vault.ErrNotFound) {
				return fmt.Errorf("another tenant's object: %v", err)
			}
			if _, err := tx.Blob(blob.Digest); !errors.Is(err, vault.ErrNotFound) {
				return fmt.Errorf("missing blob: %v", err)
			}
			if _, err := tx.Pack("x"); !errors.Is(err, vault.ErrNotFound) {
				return fmt.Errorf("missing pack: %v", err)
			}
			n := 0
			_ = tx.Objects("", func(vault.Object) bool { n++; return true })
			if n != 0 {
				return fmt.Errorf("tenant b lists %d objects of tenant a", n)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	})
	t.Run("Rollback", func(t *testing.T) {
		m := open(t)
		boom := errors.New("boom")
		err := m.Update(ctx, "tn", func(tx vault.MetaTx) error {
			if err := tx.PutObject(full); err != nil {
				return err
			}
			if _, err := tx.Object(full.ID); err != nil {
				return fmt.Errorf("a transaction does not read its own write: %w", err)
			}
			return boom
		})
		if !errors.Is(err, boom) {
			t.Fatalf("Update returned %v", err)
		}
		_ = m.View(ctx, "tn", func(tx vault.MetaTx) error {
			if _, err := tx.Object(full.ID); !errors.Is(err, vault.ErrNotFound) {
				t.Errorf("a failed transaction's write is visible: %v", err)
			}
			return nil
		})
	})
	t.Run("DeleteAndOrder", func(t *testing.T) {
		m := open(t)
		var digests []vault.Digest
		err := m.Update(ctx, "tn", func(tx vault.MetaTx) error {
			for i := range 20 {
				o := full
				o.ID = fmt.Sprintf("vlt_01JD00000000000000000000%02d", 19-i)
				if err := tx.PutObject(o); err != nil {
					return err
				}
				b := blob
				b.Digest = vault.Sum([]byte{byte(i)})
				digests = append(digests, b.Digest)
				if err := tx.PutBlob(b); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		err = m.Update(ctx, "tn", func(tx vault.MetaTx) error {
			if err := tx.DeleteBlob(digests[0]); err != nil {
				return err
			}
			if err := tx.DeleteBlob(vault.Sum([]byte("never"))); err != nil {
				return fmt.Errorf("deleting a missing blob: %w", err)
			}
			return tx.DeletePack("never")
		})
		if err != nil {
			t.Fatal(err)
		}
		_ = m.View(ctx, "tn", func(tx vault.MetaTx) error {
			var ids []string
			_ = tx.Objects("vlt_01JD0000000000000000000004", func(o vault.Object) bool {
				ids = append(ids, o.ID)
				return len(ids) < 3
			})
			if fmt.Sprint(ids) != "[vlt_01JD0000000000000000000005 vlt_01JD0000000000000000000006 vlt_01JD0000000000000000000007]" {
				t.Errorf("objects after ...04: %v", ids)
			}
			var prev vault.Digest
			n := 0
			_ = tx.Blobs(vault.Digest{}, func(b vault.Blob) bool {
				if n > 0 && string(b.Digest[:]) <= string(prev[:]) {
					t.Errorf("blobs out of order")
				}
				if b.Digest == digests[0] {
					t.Errorf("deleted blob listed")
				}
				prev = b.Digest
				n++
				return true
			})
			if n != 19 {
				t.Errorf("%d blobs listed, want 19", n)
			}
			mid := 0
			_ = tx.Blobs(prev, func(vault.Blob) bool { mid++; return true })
			if mid != 0 {
				t.Errorf("%d blobs after the last", mid)
			}
			return nil
		})
	})
	t.Run("ConcurrentUpdates", func(t *testing.T) {
		m := open(t)
		if err := m.Update(ctx, "tn", func(tx vault.MetaTx) error { return tx.PutBlob(vault.Blob{Digest: blob.Digest}) }); err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		for range 50 {
			wg.Go(func() {
				err := m.Update(ctx, "tn", func(tx vault.MetaTx) error {
					b, err := tx.Blob(blob.Digest)
					if err != nil {
						return err
					}
					b.Refs++
					return tx.PutBlob(b)
				})
				if err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
		_ = m.View(ctx, "tn", func(tx vault.MetaTx) error {
			b, _ := tx.Blob(blob.Digest)
			if b.Refs != 50 {
				t.Errorf("50 concurrent increments gave %d", b.Refs)
			}
			return nil
		})
	})
	t.Run("ViewIsReadOnly", func(t *testing.T) {
		m := open(t)
		err := m.View(ctx, "tn", func(tx vault.MetaTx) error { return tx.PutObject(full) })
		if err == nil {
			t.Error("PutObject in a View succeeded")
		}
	})
}
