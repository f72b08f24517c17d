package store_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/store"
)

func TestEraseTenant(t *testing.T) {
	ctx := context.Background()
	db, err := store.Open(filepath.Join(t.TempDir(), "svc.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	jobs := store.NewCollection(db, "jobs", func() *svcv1.Job { return &svcv1.Job{} })
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
