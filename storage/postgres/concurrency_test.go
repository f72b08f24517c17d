package postgres_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/vault"
)

// Concurrent upserts of one new manifest each apply once: the ones that lose the race to
// insert it run again and update the one inserted.
func TestConcurrentUpserts(t *testing.T) {
	s := open(t)
	defer s.Close()
	ctx := context.Background()
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			err := s.Manifests().Upsert(ctx, tenantA, "ast_1",
				func() (*svcv1.Manifest, error) { return &svcv1.Manifest{AssetId: "ast_1"}, nil },
				func(m *svcv1.Manifest) error { m.Lineage = append(m.Lineage, &svcv1.ManifestLineage{}); return nil })
			if err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if m, err := s.Manifests().Get(ctx, tenantA, "ast_1"); err != nil || len(m.GetLineage()) != 16 {
		t.Fatalf("after 16 concurrent upserts: %d lineage entries, %v", len(m.GetLineage()), err)
	}
}

// A follower of a journal that writers append to concurrently, and of the vault's change feed
// that concurrent commits feed, reads every entry exactly once: positions and sequence numbers
// follow commit order, so none appears behind one already read.
func TestFollowersMissNothing(t *testing.T) {
	s := open(t)
	defer s.Close()
	ctx := context.Background()
	const writers, each = 8, 25
	var wg sync.WaitGroup
	done := make(chan struct{})
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				if err := s.Journal().Append(ctx, tenantA, "exe_1", [][]byte{fmt.Appendf(nil, "%d-%d", w, i)}); err != nil {
					t.Error(err)
					return
				}
				o := vault.Object{ID: fmt.Sprintf("vlt_%02d%04d", w, i), State: vault.StateCommitted}
				if err := s.VaultMeta().Update(ctx, fmt.Sprintf("test:usr_%d", w), func(tx vault.MetaTx) error { return tx.PutObject(o) }); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	go func() { wg.Wait(); close(done) }()
	journal, feed := map[string]int{}, map[string]int{}
	var pos, seq uint64
	follow := func() {
		err := s.Journal().ScanAfter(ctx, tenantA, "exe_1", pos, func(p uint64, b []byte) error {
			pos = p
			journal[string(b)]++
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		for {
			got, _, err := s.VaultChanges().Read(ctx, seq, 50)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) == 0 {
				break
			}
			for _, c := range got {
				feed[c.Tenant+"/"+c.ObjectID]++
				seq = c.Seq
			}
			if err := s.VaultChanges().Ack(ctx, seq); err != nil {
				t.Fatal(err)
			}
		}
	}
	for running := true; running; {
		select {
		case <-done:
			running = false
		default:
		}
		follow()
	}
	follow()
	if len(journal) != writers*each || len(feed) != writers*each {
		t.Fatalf("followed %d journal entries and %d feed entries, want %d of each", len(journal), len(feed), writers*each)
	}
	for k, n := range journal {
		if n != 1 {
			t.Fatalf("journal entry %s read %d times", k, n)
		}
	}
	for k, n := range feed {
		if n != 1 {
			t.Fatalf("feed entry %s read %d times", k, n)
		}
	}
}
