package bolt_test

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/id"
	"svc.dev/svc/platform"
	"svc.dev/svc/storage/bolt"
)

func open(t *testing.T) (*bolt.DB, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "svc.db")
	db, err := bolt.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db, path
}

func TestCollectionPagingAndTenancy(t *testing.T) {
	db, _ := open(t)
	ctx := context.Background()
	jobs := bolt.NewCollection(db, "jobs", func() *svcv1.Job { return &svcv1.Job{} })
	// Interleave three tenants whose keys sort next to each other.
	tenants := []string{"live:usr_A", "live:usr_B", "test:usr_A"}
	want := map[string][]string{}
	for i := range 30 {
		tn := tenants[i%3]
		j := &svcv1.Job{Id: id.New("job"), Progress: int32(i)}
		if err := jobs.Put(ctx, tn, j.Id, j); err != nil {
			t.Fatal(err)
		}
		want[tn] = append([]string{j.Id}, want[tn]...) // newest first
	}
	for _, tn := range tenants {
		for _, limit := range []int{1, 3, 10, 11} {
			var got []string
			after := ""
			for {
				page, err := jobs.List(ctx, tn, after, limit, nil)
				if err != nil {
					t.Fatal(err)
				}
				for _, j := range page.Items {
					got = append(got, j.Id)
				}
				if page.Last == "" {
					break
				}
				after = page.Last
			}
			if !slices.Equal(got, want[tn]) {
				t.Fatalf("%s limit %d: %v, want %v", tn, limit, got, want[tn])
			}
		}
		if n, _ := jobs.Count(ctx, tn, nil); n != 10 {
			t.Fatalf("%s has %d jobs", tn, n)
		}
	}
	// Another tenant's id is not found.
	if _, err := jobs.Get(ctx, "live:usr_B", want["live:usr_A"][0]); !errors.Is(err, bolt.ErrNotFound) {
		t.Fatalf("cross-tenant get: %v", err)
	}
	if j, err := jobs.Get(ctx, "live:usr_A", want["live:usr_A"][0]); err != nil || j.Id != want["live:usr_A"][0] {
		t.Fatalf("get: %v %v", j, err)
	}
	// An empty tenant and a missing bucket list nothing.
	if page, err := jobs.List(ctx, "live:usr_C", "", 10, nil); err != nil || len(page.Items) != 0 || page.Last != "" {
		t.Fatalf("empty tenant: %+v %v", page, err)
	}
	other := bolt.NewCollection(db, "nothing", func() *svcv1.Job { return &svcv1.Job{} })
	if page, err := other.List(ctx, "live:usr_A", "", 10, nil); err != nil || len(page.Items) != 0 {
		t.Fatalf("missing bucket: %+v %v", page, err)
	}
	// Filtering keeps paging exact.
	page, _ := jobs.List(ctx, "live:usr_A", "", 2, func(j *svcv1.Job) bool { return j.Progress%2 == 0 })
	if len(page.Items) != 2 || page.Last == "" {
		t.Fatalf("filtered page: %+v", page)
	}
}

func TestUsersAndOrgsPersist(t *testing.T) {
	db, path := open(t)
	ctx := context.Background()
	u := &platform.User{ID: id.New("usr"), Email: "Ann@Example.com", Locale: "en", Status: "active", Plan: "free", CreatedAt: time.Now()}
	if err := db.CreateUser(ctx, u); err != nil {
		t.Fatal(err)
	}
	if err := db.CreateUser(ctx, &platform.User{ID: id.New("usr"), Email: "ann@example.com "}); !errors.Is(err, platform.ErrEmailTaken) {
		t.Fatalf("duplicate email: %v", err)
	}
	if err := db.CreateOrg(ctx, &platform.Org{ID: id.New("org"), Name: "Acme", OwnerID: u.ID}); err != nil {
		t.Fatal(err)
	}
	if err := db.CreateOrg(ctx, &platform.Org{ID: id.New("org"), Name: "Ghost", OwnerID: "usr_missing"}); !errors.Is(err, platform.ErrNotFound) {
		t.Fatalf("org for a missing user: %v", err)
	}
	db.Close()
	db2, err := bolt.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer db2.Close()
	got, err := db2.UserByEmail(ctx, "ANN@example.com")
	if err != nil || got.ID != u.ID || len(got.OrgIDs) != 1 {
		t.Fatalf("after reopen: %+v %v", got, err)
	}
}

// An unfinished claim older than unfinishedBefore (its process died) is taken; a finished one
// is kept for its whole window.
func TestClaimIdempotencyTakesAnAbandonedKey(t *testing.T) {
	db, _ := open(t)
	ctx := context.Background()
	now := time.Now()
	claim := func(key string, unfinishedBefore time.Time) *platform.IdempotencyRecord {
		t.Helper()
		prev, err := db.ClaimIdempotency(ctx, key, &platform.IdempotencyRecord{Endpoint: "/a", RequestHash: "h", CreatedAt: now}, now.Add(-time.Hour), unfinishedBefore)
		if err != nil {
			t.Fatal(err)
		}
		return prev
	}
	claim("k", now.Add(-time.Hour))
	if claim("k", now.Add(-time.Minute)) == nil {
		t.Fatal("a key in flight was claimed again")
	}
	if claim("k", now.Add(time.Second)) != nil {
		t.Fatal("an abandoned key was not claimed again")
	}
	if err := db.FinishIdempotency(ctx, "k", &platform.IdempotencyRecord{Endpoint: "/a", RequestHash: "h", CreatedAt: now, Done: true}); err != nil {
		t.Fatal(err)
	}
	if prev := claim("k", now.Add(time.Second)); prev == nil || !prev.Done {
		t.Fatalf("a finished key was claimed again: %+v", prev)
	}
}

func TestClaimIdempotencyIsAtomic(t *testing.T) {
	db, _ := open(t)
	var won atomic.Int32
	var wg sync.WaitGroup
	for range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			prev, err := db.ClaimIdempotency(context.Background(), "usr_1\x00k",
				&platform.IdempotencyRecord{Endpoint: "/a", RequestHash: "h", CreatedAt: time.Now()}, time.Now().Add(-time.Hour), time.Now().Add(-time.Hour))
			if err != nil {
				t.Error(err)
			}
			if prev == nil {
				won.Add(1)
			}
		}()
	}
	wg.Wait()
	if won.Load() != 1 {
		t.Fatalf("%d claims won, want exactly 1", won.Load())
	}
}

// All walks one tenant's resources oldest first across its short transactions, filtered,
// without repeats, and stops when asked.
func TestCollectionAllWalksInPages(t *testing.T) {
	db, _ := open(t)
	ctx := context.Background()
	jobs := bolt.NewCollection(db, "jobs", func() *svcv1.Job { return &svcv1.Job{} })
	var want []string
	for i := range 700 { // more than two pages, and a neighbouring tenant on either side
		for _, tn := range []string{"live:usr_A", "live:usr_B", "live:usr_C"} {
			j := &svcv1.Job{Id: id.New("job"), Progress: int32(i)}
			if err := jobs.Put(ctx, tn, j.Id, j); err != nil {
				t.Fatal(err)
			}
			if tn == "live:usr_B" && i%3 != 0 {
				want = append(want, j.Id)
			}
		}
	}
	var got []string
	for j, err := range jobs.All(ctx, "live:usr_B", func(j *svcv1.Job) bool { return j.Progress%3 != 0 }) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, j.Id)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("All yielded %d jobs, want %d in id order", len(got), len(want))
	}
	n := 0
	for range jobs.All(ctx, "live:usr_B", nil) {
		if n++; n == 300 {
			break
		}
	}
	if n != 300 {
		t.Fatalf("stopped at %d", n)
	}
}
