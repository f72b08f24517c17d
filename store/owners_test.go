package store_test

import (
	"context"
	"errors"
	"testing"

	bolt "go.etcd.io/bbolt"

	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/id"
	"svc.dev/svc/store"
)

func TestOwnerIndex(t *testing.T) {
	db, path := open(t)
	ctx := context.Background()
	plans := store.NewCollection(db, "plans", func() *svcv1.Plan { return &svcv1.Plan{} }).WithOwnerIndex()
	events := store.NewCollection(db, "events", func() *svcv1.Event { return &svcv1.Event{} })
	p := &svcv1.Plan{PlanId: id.New("pln")}
	if err := plans.Put(ctx, "test:usr_A", p.PlanId, p); err != nil {
		t.Fatal(err)
	}
	e := &svcv1.Event{Id: id.New("evt")}
	if err := events.Put(ctx, "test:usr_A", e.Id, e); err != nil {
		t.Fatal(err)
	}
	if tn, err := db.OwnerOf(ctx, p.PlanId); err != nil || tn != "test:usr_A" {
		t.Fatalf("OwnerOf(plan) = %q, %v", tn, err)
	}
	if _, err := db.OwnerOf(ctx, e.Id); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("an unindexed collection's id resolved: %v", err)
	}
	if err := db.PutOwnedBlob(ctx, "receipts", "live:usr_B", "rcp_1", []byte("{}")); err != nil {
		t.Fatal(err)
	}
	if tn, err := db.OwnerOf(ctx, "rcp_1"); err != nil || tn != "live:usr_B" {
		t.Fatalf("OwnerOf(receipt) = %q, %v", tn, err)
	}

	// A store written before the index existed gets it at its next open.
	db.Close()
	raw, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := raw.Update(func(tx *bolt.Tx) error { return tx.DeleteBucket([]byte("resource_owners")) }); err != nil {
		t.Fatal(err)
	}
	raw.Close()
	db2, err := store.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer db2.Close()
	for want, rid := range map[string]string{"test:usr_A": p.PlanId, "live:usr_B": "rcp_1"} {
		if tn, err := db2.OwnerOf(ctx, rid); err != nil || tn != want {
			t.Fatalf("after rebuild, OwnerOf(%s) = %q, %v", rid, tn, err)
		}
	}
	plans2 := store.NewCollection(db2, "plans", func() *svcv1.Plan { return &svcv1.Plan{} }).WithOwnerIndex()
	if err := plans2.Delete(ctx, "test:usr_A", p.PlanId); err != nil {
		t.Fatal(err)
	}
	if _, err := db2.OwnerOf(ctx, p.PlanId); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a deleted plan still resolves: %v", err)
	}
}
