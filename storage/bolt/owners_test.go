package bolt_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	bbolt "go.etcd.io/bbolt"

	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/id"
	"svc.dev/svc/platform"
	"svc.dev/svc/storage/bolt"
)

func TestOwnerIndex(t *testing.T) {
	db, path := open(t)
	ctx := context.Background()
	plans := bolt.NewCollection(db, "plans", func() *svcv1.Plan { return &svcv1.Plan{} }).WithOwnerIndex()
	events := bolt.NewCollection(db, "events", func() *svcv1.Event { return &svcv1.Event{} })
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
	if _, err := db.OwnerOf(ctx, e.Id); !errors.Is(err, bolt.ErrNotFound) {
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
	raw, err := bbolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := raw.Update(func(tx *bbolt.Tx) error { return tx.DeleteBucket([]byte("resource_owners")) }); err != nil {
		t.Fatal(err)
	}
	raw.Close()
	db2, err := bolt.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer db2.Close()
	for want, rid := range map[string]string{"test:usr_A": p.PlanId, "live:usr_B": "rcp_1"} {
		if tn, err := db2.OwnerOf(ctx, rid); err != nil || tn != want {
			t.Fatalf("after rebuild, OwnerOf(%s) = %q, %v", rid, tn, err)
		}
	}
	plans2 := bolt.NewCollection(db2, "plans", func() *svcv1.Plan { return &svcv1.Plan{} }).WithOwnerIndex()
	if err := plans2.Delete(ctx, "test:usr_A", p.PlanId); err != nil {
		t.Fatal(err)
	}
	if _, err := db2.OwnerOf(ctx, p.PlanId); !errors.Is(err, bolt.ErrNotFound) {
		t.Fatalf("a deleted plan still resolves: %v", err)
	}
}

func TestConnectionsOfAppUser(t *testing.T) {
	db, path := open(t)
	ctx := context.Background()
	for _, c := range []*platform.Connection{
		{ID: "cxn_1", AppID: "app_A", UserID: "usr_1"}, {ID: "cxn_2", AppID: "app_A", UserID: "usr_2"},
		{ID: "cxn_3", AppID: "app_B", UserID: "usr_1"}, {ID: "cxn_4", AppID: "app_A", UserID: "usr_1"},
	} {
		if err := db.CreateConnection(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	ids := func(db *bolt.DB, app, user string) []string {
		cs, err := db.ConnectionsOfAppUser(ctx, app, user)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, c := range cs {
			out = append(out, c.ID)
		}
		return out
	}
	if got := ids(db, "app_A", "usr_1"); !slices.Equal(got, []string{"cxn_1", "cxn_4"}) {
		t.Fatalf("app_A/usr_1: %v", got)
	}
	if got := ids(db, "app_A", ""); len(got) != 0 {
		t.Fatalf("no user: %v", got)
	}
	// By user and by application, from the indexes.
	idsOf := func(cs []*platform.Connection, err error) []string {
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, c := range cs {
			out = append(out, c.ID)
		}
		slices.Sort(out)
		return out
	}
	if got := idsOf(db.ConnectionsOf(ctx, "usr_1")); !slices.Equal(got, []string{"cxn_1", "cxn_3", "cxn_4"}) {
		t.Fatalf("ConnectionsOf(usr_1): %v", got)
	}
	if got := idsOf(db.ConnectionsOf(ctx, "usr_")); len(got) != 0 {
		t.Fatalf("ConnectionsOf(usr_) matched another user's prefix: %v", got)
	}
	if got := idsOf(db.ConnectionsOfApp(ctx, "app_A")); !slices.Equal(got, []string{"cxn_1", "cxn_2", "cxn_4"}) {
		t.Fatalf("ConnectionsOfApp(app_A): %v", got)
	}
	// Built from the stored connections for a store written before the index existed.
	db.Close()
	raw, err := bbolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	raw.Update(func(tx *bbolt.Tx) error {
		return errors.Join(tx.DeleteBucket([]byte("connections_by_app")), tx.DeleteBucket([]byte("connections_by_user")))
	})
	raw.Close()
	db2, err := bolt.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer db2.Close()
	if got := ids(db2, "app_B", "usr_1"); !slices.Equal(got, []string{"cxn_3"}) {
		t.Fatalf("after rebuild, app_B/usr_1: %v", got)
	}
	if got := idsOf(db2.ConnectionsOf(ctx, "usr_2")); !slices.Equal(got, []string{"cxn_2"}) {
		t.Fatalf("after rebuild, ConnectionsOf(usr_2): %v", got)
	}
}

// ConnectionsOf answers from a cache that every change of the connections invalidates.
func TestConnectionsOfSeesChanges(t *testing.T) {
	db, _ := open(t)
	ctx := context.Background()
	count := func(user string) int {
		cs, err := db.ConnectionsOf(ctx, user)
		if err != nil {
			t.Fatal(err)
		}
		return len(cs)
	}
	if n := count("usr_1"); n != 0 {
		t.Fatalf("%d connections before any", n)
	}
	if err := db.CreateConnection(ctx, &platform.Connection{ID: "cxn_1", AppID: "app_A", UserID: "usr_1"}); err != nil {
		t.Fatal(err)
	}
	if n := count("usr_1"); n != 1 {
		t.Fatalf("%d connections after a create", n)
	}
	// A caller changing what it got does not change the cache.
	cs, _ := db.ConnectionsOf(ctx, "usr_1")
	cs[0].AppID = "app_X"
	if cs, _ := db.ConnectionsOf(ctx, "usr_1"); cs[0].AppID != "app_A" {
		t.Fatalf("the cache kept a caller's change: %+v", cs[0])
	}
	now := time.Now()
	if _, err := db.UpdateConnection(ctx, "cxn_1", func(c *platform.Connection) error { c.RevokedAt = &now; return nil }); err != nil {
		t.Fatal(err)
	}
	if cs, _ := db.ConnectionsOf(ctx, "usr_1"); cs[0].RevokedAt == nil {
		t.Fatal("a revoke is not seen")
	}
	if err := db.CreateUser(ctx, &platform.User{ID: "usr_1", Email: "u1@example.com"}); err != nil {
		t.Fatal(err)
	}
	if err := db.DeleteUser(ctx, "usr_1"); err != nil {
		t.Fatal(err)
	}
	if n := count("usr_1"); n != 0 {
		t.Fatalf("%d connections after the user's erasure", n)
	}
}
