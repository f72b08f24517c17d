package storagetest

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/id"
	"svc.dev/svc/storage"
)

// RunHosted runs the conformance suite of a hosted store (storage.Hosted): what the server
// reads beyond the Store, its filtered, cursor-paged lists above all. open returns a new,
// empty store for each subtest.
func RunHosted(t *testing.T, open func(t *testing.T) storage.Hosted) {
	for _, tc := range []struct {
		name string
		fn   func(*testing.T, storage.Hosted)
	}{
		{"Records", testRecords},
		{"ListExecutions", testListExecutions},
		{"Owners", testOwners},
		{"EraseTenant", testEraseTenant},
		{"Usage", testUsage},
		{"Blobs", testBlobs},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := open(t)
			defer s.Close()
			tc.fn(t, s)
		})
	}
}

var epoch = time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)

// jobs stores n jobs in tenant, ids in creation order; every third one succeeded.
func jobs(t *testing.T, s storage.Hosted, tenant string, n int) []string {
	t.Helper()
	var ids []string
	for i := range n {
		j := &svcv1.Job{Id: id.NewAt("job", epoch.Add(time.Duration(i)*time.Millisecond)), Kind: svcv1.JobKind_JOB_KIND_EXPORT,
			Status: svcv1.JobStatus_JOB_STATUS_QUEUED}
		if i%3 == 0 {
			j.Status = svcv1.JobStatus_JOB_STATUS_SUCCEEDED
		}
		if err := s.Resources().Jobs().Put(context.Background(), tenant, j.Id, j); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, j.Id)
	}
	return ids
}

func pageIDs(p storage.Page[*svcv1.Job]) []string {
	var out []string
	for _, j := range p.Items {
		out = append(out, j.GetId())
	}
	return out
}

func testRecords(t *testing.T, s storage.Hosted) {
	ctx := context.Background()
	rec := s.Resources().Jobs()
	a := jobs(t, s, tenantA, 7)
	b := jobs(t, s, tenantB, 2)
	// Newest first, a page at a time, the cursor being the last id of a page that has more.
	var got []string
	after := ""
	for range 4 {
		p, err := rec.List(ctx, tenantA, after, 3, nil)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, pageIDs(p)...)
		if p.Last == "" {
			break
		}
		if p.Last != p.Items[len(p.Items)-1].GetId() {
			t.Fatalf("cursor %s is not the page's last id", p.Last)
		}
		after = p.Last
	}
	want := slices.Clone(a)
	slices.Reverse(want)
	if !slices.Equal(got, want) {
		t.Fatalf("pages: %v, want %v", got, want)
	}
	// A filter applies before the limit; pages of it page on.
	done := func(j *svcv1.Job) bool { return j.GetStatus() == svcv1.JobStatus_JOB_STATUS_SUCCEEDED }
	p, err := rec.List(ctx, tenantA, "", 2, done)
	if err != nil || !slices.Equal(pageIDs(p), []string{a[6], a[3]}) || p.Last != a[3] {
		t.Fatalf("filtered page: %v %q %v", pageIDs(p), p.Last, err)
	}
	if p, err = rec.List(ctx, tenantA, p.Last, 2, done); err != nil || !slices.Equal(pageIDs(p), []string{a[0]}) || p.Last != "" {
		t.Fatalf("filtered second page: %v %q %v", pageIDs(p), p.Last, err)
	}
	if n, err := rec.Count(ctx, tenantA, done); err != nil || n != 3 {
		t.Fatalf("count: %d %v", n, err)
	}
	// Tenants are apart.
	if p, _ := rec.List(ctx, tenantB, "", 10, nil); len(p.Items) != 2 {
		t.Fatalf("tenant B lists %d", len(p.Items))
	}
	if _, err := rec.Get(ctx, tenantB, a[0]); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("tenant B reads A's job: %v", err)
	}
	// Oldest first, whole.
	var all []string
	for j, err := range rec.All(ctx, tenantA, nil) {
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, j.GetId())
	}
	if !slices.Equal(all, a) {
		t.Fatalf("all: %v", all)
	}
	n := 0
	for _, err := range rec.AllUnder(ctx, tenantA, a[2][:len(a[2])-1]) {
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	if n == 0 {
		t.Fatal("AllUnder found nothing under a present prefix")
	}
	seen := 0
	if err := rec.ScanAll(ctx, func(tenant, _ string, _ *svcv1.Job) bool {
		if tenant == tenantA || tenant == tenantB {
			seen++
		}
		return true
	}); err != nil || seen != len(a)+len(b) {
		t.Fatalf("scan all: %d %v", seen, err)
	}
	// Update, delete and their absences.
	err = rec.Update(ctx, tenantA, a[1], func(j *svcv1.Job) error { j.Progress = 50; return nil })
	if j, _ := rec.Get(ctx, tenantA, a[1]); err != nil || j.GetProgress() != 50 {
		t.Fatalf("update: %v %v", j, err)
	}
	boom := errors.New("boom")
	if err := rec.Update(ctx, tenantA, a[1], func(j *svcv1.Job) error { j.Progress = 99; return boom }); !errors.Is(err, boom) {
		t.Fatalf("a failed update: %v", err)
	}
	if j, _ := rec.Get(ctx, tenantA, a[1]); j.GetProgress() != 50 {
		t.Fatalf("a failed update changed the job: %d", j.GetProgress())
	}
	if err := rec.Update(ctx, tenantB, a[1], func(*svcv1.Job) error { return nil }); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("update across tenants: %v", err)
	}
	if err := rec.Delete(ctx, tenantA, a[1]); err != nil {
		t.Fatal(err)
	}
	if err := rec.Delete(ctx, tenantA, a[1]); err != nil {
		t.Fatalf("deleting an absent job: %v", err)
	}
	if _, err := rec.Get(ctx, tenantA, a[1]); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("deleted job: %v", err)
	}
	// PutMany writes all at once.
	many := []storage.Item[*svcv1.Job]{
		{Tenant: tenantB, ID: "job_01JZ0000000000000000000001", Value: &svcv1.Job{Id: "job_01JZ0000000000000000000001"}},
		{Tenant: tenantB, ID: "job_01JZ0000000000000000000002", Value: &svcv1.Job{Id: "job_01JZ0000000000000000000002"}},
	}
	if err := rec.PutMany(ctx, many); err != nil {
		t.Fatal(err)
	}
	if n, _ := rec.Count(ctx, tenantB, nil); n != 4 {
		t.Fatalf("after PutMany, tenant B holds %d", n)
	}
}

func testListExecutions(t *testing.T, s storage.Hosted) {
	ctx := context.Background()
	for i, kind := range []string{"svc", "rescue", "svc"} {
		at := epoch.Add(time.Duration(i) * time.Second)
		p := &svcv1.Plan{PlanId: id.NewAt("pln", at), Intent: svcv1.PlanIntent_PLAN_INTENT_SVC}
		if kind == "rescue" {
			p.Intent = svcv1.PlanIntent_PLAN_INTENT_RESCUE
		}
		if err := s.Plans().Put(ctx, tenantA, p); err != nil {
			t.Fatal(err)
		}
		x := &svcv1.Execution{Id: id.NewAt("exe", at), PlanId: p.PlanId}
		if err := s.Resources().Executions().Put(ctx, tenantA, x.Id, x); err != nil {
			t.Fatal(err)
		}
	}
	page, err := s.Resources().ListExecutions(ctx, tenantA, "", 10, func(x *svcv1.Execution, plan func() (*svcv1.Plan, error)) bool {
		p, err := plan()
		return err == nil && p.GetIntent() == svcv1.PlanIntent_PLAN_INTENT_SVC
	})
	if err != nil || len(page.Items) != 2 {
		t.Fatalf("executions of svc plans: %d %v", len(page.Items), err)
	}
	if page.Items[0].GetId() < page.Items[1].GetId() {
		t.Fatal("executions are not newest first")
	}
}

func testOwners(t *testing.T, s storage.Hosted) {
	ctx := context.Background()
	src := &svcv1.Source{Id: id.New("src"), DisplayName: "Mail"}
	if err := s.Resources().Sources().Put(ctx, tenantB, src.Id, src); err != nil {
		t.Fatal(err)
	}
	if owner, err := s.OwnerOf(ctx, src.Id); err != nil || owner != tenantB {
		t.Fatalf("owner of %s: %q %v", src.Id, owner, err)
	}
	if _, err := s.OwnerOf(ctx, id.New("src")); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("owner of an unknown id: %v", err)
	}
}

func testEraseTenant(t *testing.T, s storage.Hosted) {
	ctx := context.Background()
	a := jobs(t, s, tenantA, 3)
	b := jobs(t, s, tenantB, 1)
	src := &svcv1.Source{Id: id.New("src")}
	if err := s.Resources().Sources().Put(ctx, tenantA, src.Id, src); err != nil {
		t.Fatal(err)
	}
	if err := s.IntelState().Put(ctx, tenantA, "state", []byte("x")); err != nil {
		t.Fatal(err)
	}
	n, err := s.EraseTenant(ctx, tenantA, []storage.Ref{{Kind: storage.KindJob, ID: a[0]}})
	if err != nil || n < 4 {
		t.Fatalf("erase: %d %v", n, err)
	}
	if _, err := s.Resources().Jobs().Get(ctx, tenantA, a[0]); err != nil {
		t.Fatalf("the kept job: %v", err)
	}
	for _, gone := range a[1:] {
		if _, err := s.Resources().Jobs().Get(ctx, tenantA, gone); !errors.Is(err, storage.ErrNotFound) {
			t.Fatalf("erased job %s: %v", gone, err)
		}
	}
	if _, err := s.IntelState().Get(ctx, tenantA, "state"); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("erased blob: %v", err)
	}
	if _, err := s.OwnerOf(ctx, src.Id); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("an erased resource still has an owner: %v", err)
	}
	if owner, err := s.OwnerOf(ctx, a[0]); err != nil || owner != tenantA {
		t.Fatalf("the kept job's owner: %q %v", owner, err)
	}
	if _, err := s.Resources().Jobs().Get(ctx, tenantB, b[0]); err != nil {
		t.Fatalf("another tenant's job: %v", err)
	}
}

func testUsage(t *testing.T, s storage.Hosted) {
	ctx := context.Background()
	u := s.Usage()
	d := []storage.UsageDelta{{Scope: "org:org_1", Month: "2026-11", Meter: "api_operations", Quantity: 2}}
	if err := u.Add(ctx, d); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, err := u.AddOnce(ctx, "exe_1", d); err != nil {
			t.Fatal(err)
		}
	}
	c, err := u.Counters(ctx, "org:org_1", "2026-11")
	if err != nil || c["api_operations"] != 4 {
		t.Fatalf("counters: %v %v", c, err)
	}
	if orgs, err := u.Orgs(ctx, "2026-11"); err != nil || !slices.Contains(orgs, "org_1") {
		t.Fatalf("orgs with usage: %v %v", orgs, err)
	}
	if err := u.AddFromLog(ctx, d, 42); err != nil {
		t.Fatal(err)
	}
	if off, err := u.LogOffset(ctx); err != nil || off != 42 {
		t.Fatalf("log offset: %d %v", off, err)
	}
	if _, ok, err := u.CeilingOf(ctx, "org_1"); err != nil || ok {
		t.Fatalf("a ceiling before one is set: %v %v", ok, err)
	}
	if err := u.SetCeiling(ctx, "org_1", storage.Ceiling{Cents: 500}); err != nil {
		t.Fatal(err)
	}
	if got, ok, err := u.CeilingOf(ctx, "org_1"); err != nil || !ok || got.Cents != 500 {
		t.Fatalf("ceiling: %v %v %v", got, ok, err)
	}
}

func testBlobs(t *testing.T, s storage.Hosted) {
	ctx := context.Background()
	for _, b := range []storage.Blobs{s.IntelState(), s.CreatorState()} {
		if err := b.Put(ctx, tenantA, "k", []byte("v1")); err != nil {
			t.Fatal(err)
		}
		if v, err := b.Get(ctx, tenantA, "k"); err != nil || string(v) != "v1" {
			t.Fatalf("get: %q %v", v, err)
		}
		if _, err := b.Get(ctx, tenantB, "k"); !errors.Is(err, storage.ErrNotFound) {
			t.Fatalf("another tenant's blob: %v", err)
		}
	}
}
