package bolt_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/id"
	"svc.dev/svc/storage"
	"svc.dev/svc/storage/bolt"
	"svc.dev/svc/storage/storagetest"
)

type foreignWrite struct{}

func (foreignWrite) StoreWrite() {}

// The seam stores a change and the writes made with it together, refuses a write another
// store made (storing nothing), and keeps tenants apart.
func TestSeamWritesWithAChange(t *testing.T) {
	db, _ := open(t)
	seam := bolt.NewSeam(db)
	ctx := context.Background()
	p := &svcv1.Plan{PlanId: id.New("pln"), Objects: []*svcv1.PlanObject{{AssetId: "ast_1"}, {AssetId: "ast_2"}}}
	ev := &svcv1.Event{Id: id.New("evt"), Type: "svc.plan.created"}
	w, err := seam.Events().Write(ev, "test:usr_a")
	if err != nil {
		t.Fatal(err)
	}
	if err := seam.Plans().Put(ctx, "test:usr_a", &svcv1.Plan{PlanId: id.New("pln")}, foreignWrite{}); err == nil {
		t.Fatal("a foreign write was accepted")
	}
	if err := seam.Plans().Put(ctx, "test:usr_a", p, w); err != nil {
		t.Fatal(err)
	}
	got, err := seam.Plans().Get(ctx, "test:usr_a", p.PlanId)
	if err != nil || len(got.GetObjects()) != 2 {
		t.Fatalf("plan: %v, %v", got, err)
	}
	h, err := seam.Plans().Header(ctx, "test:usr_a", p.PlanId)
	if err != nil || len(h.GetObjects()) != 0 {
		t.Fatalf("header: %d objects, %v", len(h.GetObjects()), err)
	}
	events := bolt.NewCollection(db, "events", func() *svcv1.Event { return &svcv1.Event{} })
	if _, err := events.Get(ctx, "test:usr_a", ev.Id); err != nil {
		t.Fatalf("the event written with the plan: %v", err)
	}
	if _, err := seam.Plans().Get(ctx, "live:usr_a", p.PlanId); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("another tenant reads the plan: %v", err)
	}
	if err := seam.Journal().Append(ctx, "test:usr_a", "exe_1", [][]byte{[]byte("a"), []byte("b")}); err != nil {
		t.Fatal(err)
	}
	if js, err := seam.Journal().Read(ctx, "test:usr_a", "exe_1"); err != nil || len(js) != 2 || string(js[1]) != "b" {
		t.Fatalf("journal: %q, %v", js, err)
	}
	if err := seam.Receipts().Put(ctx, "test:usr_a", "rcp_1", []byte("{}")); err != nil {
		t.Fatal(err)
	}
	if _, err := seam.Receipts().Get(ctx, "live:usr_a", "rcp_1"); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("another tenant reads the receipt: %v", err)
	}
}

// The bbolt store passes the seam's conformance suite.
func TestSeamConformance(t *testing.T) {
	storagetest.Run(t, func(t *testing.T) storage.Store {
		s, err := bolt.OpenSeam(filepath.Join(t.TempDir(), "svc.db"), nil)
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}

// The bbolt store passes the hosted store's conformance suite.
func TestHostedConformance(t *testing.T) {
	storagetest.RunHosted(t, func(t *testing.T) storage.Hosted {
		s, err := bolt.OpenSeam(filepath.Join(t.TempDir(), "svc.db"), nil)
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}

// The bbolt store's leases (the one process's) pass the leases' suite.
func TestLeasesConformance(t *testing.T) {
	storagetest.RunLeases(t, func(t *testing.T) storage.Store {
		s, err := bolt.OpenSeam(filepath.Join(t.TempDir(), "svc.db"), nil)
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}
