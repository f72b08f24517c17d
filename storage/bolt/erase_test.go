package bolt_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/platform"
	"svc.dev/svc/storage/bolt"
)

func TestEraseTenant(t *testing.T) {
	ctx := context.Background()
	db, err := bolt.Open(filepath.Join(t.TempDir(), "svc.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	jobs := bolt.NewCollection(db, "jobs", func() *svcv1.Job { return &svcv1.Job{} })
	for i := range 2500 {
		id := fmt.Sprintf("job_%05d", i)
		if err := jobs.Put(ctx, "live:usr_A", id, &svcv1.Job{Id: id}); err != nil {
			t.Fatal(err)
		}
	}
	jobs.Put(ctx, "live:usr_AB", "job_1", &svcv1.Job{Id: "job_1"}) // a tenant whose name extends A's
	jobs.Put(ctx, "test:usr_A", "job_1", &svcv1.Job{Id: "job_1"})
	db.PutBlob(ctx, "receipts", "live:usr_A/rcp_1", []byte("kept"))
	db.PutBlob(ctx, "receipts", "live:usr_A/rcp_2", []byte("erased"))
	n, err := db.EraseTenant(ctx, "live:usr_A", func(bucket, key string) bool { return key == "live:usr_A/rcp_1" })
	if err != nil || n != 2501 {
		t.Fatalf("erased %d, %v", n, err)
	}
	if c, _ := jobs.Count(ctx, "live:usr_A", nil); c != 0 {
		t.Errorf("%d jobs left", c)
	}
	for _, tn := range []string{"live:usr_AB", "test:usr_A"} {
		if _, err := jobs.Get(ctx, tn, "job_1"); err != nil {
			t.Errorf("%s: %v", tn, err)
		}
	}
	if _, err := db.GetBlob(ctx, "receipts", "live:usr_A/rcp_1"); err != nil {
		t.Error("kept blob erased")
	}
	if _, err := db.GetBlob(ctx, "receipts", "live:usr_A/rcp_2"); err == nil {
		t.Error("blob not erased")
	}
}

func TestDeleteUser(t *testing.T) {
	ctx := context.Background()
	db, err := bolt.Open(filepath.Join(t.TempDir(), "svc.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	now := time.Now()
	for _, u := range []*platform.User{{ID: "usr_A", Email: "A@example.com"}, {ID: "usr_B", Email: "b@example.com"}} {
		if err := db.CreateUser(ctx, u); err != nil {
			t.Fatal(err)
		}
		db.CreateSession(ctx, &platform.Session{TokenHash: "h" + u.ID, UserID: u.ID, ExpiresAt: now.Add(time.Hour)})
		db.CreateConnection(ctx, &platform.Connection{ID: "cxn_" + u.ID, UserID: u.ID, AppID: "app_1"})
		db.CreateConnectSession(ctx, &platform.ConnectSession{ID: "csn_" + u.ID, AppID: "app_1", UserID: u.ID, ConnectedSourceIDs: []string{"src_1"}})
	}
	if err := db.DeleteUser(ctx, "usr_A"); err != nil {
		t.Fatal(err)
	}
	if _, err := db.User(ctx, "usr_A"); !errors.Is(err, platform.ErrNotFound) {
		t.Errorf("user: %v", err)
	}
	if _, err := db.UserByEmail(ctx, "a@example.com"); !errors.Is(err, platform.ErrNotFound) {
		t.Errorf("email index: %v", err)
	}
	if _, err := db.Session(ctx, "husr_A"); !errors.Is(err, platform.ErrNotFound) {
		t.Errorf("session: %v", err)
	}
	if _, err := db.Connection(ctx, "cxn_usr_A"); !errors.Is(err, platform.ErrNotFound) {
		t.Errorf("connection: %v", err)
	}
	if cs, err := db.ConnectSession(ctx, "csn_usr_A"); err != nil || cs.UserID != "" || cs.ConnectedSourceIDs != nil {
		t.Errorf("connect session: %+v %v", cs, err)
	}
	// Another user is untouched.
	if _, err := db.Session(ctx, "husr_B"); err != nil {
		t.Errorf("B's session: %v", err)
	}
	if cs, _ := db.ConnectSession(ctx, "csn_usr_B"); cs.UserID != "usr_B" {
		t.Errorf("B's connect session: %+v", cs)
	}
	if _, err := db.Connection(ctx, "cxn_usr_B"); err != nil {
		t.Errorf("B's connection: %v", err)
	}
	// The indexes forget A's connection: the application lists B's alone, A has none.
	if cs, err := db.ConnectionsOfApp(ctx, "app_1"); err != nil || len(cs) != 1 || cs[0].ID != "cxn_usr_B" {
		t.Errorf("app_1's connections after erasing A: %v, %v", cs, err)
	}
	if cs, err := db.ConnectionsOf(ctx, "usr_A"); err != nil || len(cs) != 0 {
		t.Errorf("A's connections after erasing A: %v, %v", cs, err)
	}
	if cs, err := db.ConnectionsOfAppUser(ctx, "app_1", "usr_A"); err != nil || len(cs) != 0 {
		t.Errorf("app_1's connections to A after erasing A: %v, %v", cs, err)
	}
}
