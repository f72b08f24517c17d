package postgres_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/id"
	"svc.dev/svc/storage"
	"svc.dev/svc/storage/postgres"
)

const (
	tenantA = "test:usr_a"
	tenantB = "live:usr_a"
)

var epoch = time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)

// putJobs stores n jobs in tenant, ids in creation order; every third one succeeded.
func putJobs(t *testing.T, s *postgres.Store, tenant string, n int) []string {
	t.Helper()
	var ids []string
	items := make([]storage.Item[*svcv1.Job], 0, n)
	for i := range n {
		j := &svcv1.Job{Id: id.NewAt("job", epoch.Add(time.Duration(i)*time.Millisecond)), Kind: svcv1.JobKind_JOB_KIND_EXPORT,
			Status: svcv1.JobStatus_JOB_STATUS_QUEUED}
		if i%3 == 0 {
			j.Status = svcv1.JobStatus_JOB_STATUS_SUCCEEDED
		}
		items = append(items, storage.Item[*svcv1.Job]{Tenant: tenant, ID: j.Id, Value: j})
		ids = append(ids, j.Id)
	}
	if err := s.Resources().Jobs().PutMany(context.Background(), items); err != nil {
		t.Fatal(err)
	}
	return ids
}

func ids(items []*svcv1.Job) []string {
	var out []string
	for _, j := range items {
		out = append(out, j.GetId())
	}
	return out
}

// Lists come newest first, a page at a time, the cursor being the last id of a page that has
// more; a Go filter applies before the limit, across as many SQL chunks as it takes.
func TestRecordsList(t *testing.T) {
	s := open(t)
	defer s.Close()
	ctx := context.Background()
	rec := s.Resources().Jobs()
	a := putJobs(t, s, tenantA, 700)
	putJobs(t, s, tenantB, 5)
	newest := slices.Clone(a)
	slices.Reverse(newest)

	var got []string
	after := ""
	for range 100 {
		p, err := rec.List(ctx, tenantA, after, 64, nil)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, ids(p.Items)...)
		if p.Last == "" {
			break
		}
		if p.Last != p.Items[len(p.Items)-1].GetId() {
			t.Fatalf("cursor %s is not the page's last id", p.Last)
		}
		after = p.Last
	}
	if !slices.Equal(got, newest) {
		t.Fatalf("pages hold %d jobs in some other order, want %d newest first", len(got), len(newest))
	}

	// Keep one job in 70: a page of 4 reads past several chunks of rows to fill itself.
	rare := func(j *svcv1.Job) bool { return slices.Index(a, j.GetId())%70 == 0 }
	var want []string
	for i, x := range newest {
		if (len(a)-1-i)%70 == 0 {
			want = append(want, x)
		}
	}
	got, after = nil, ""
	pages := 0
	for {
		p, err := rec.List(ctx, tenantA, after, 4, rare)
		if err != nil {
			t.Fatal(err)
		}
		pages++
		got = append(got, ids(p.Items)...)
		if p.Last == "" {
			break
		}
		after = p.Last
	}
	if !slices.Equal(got, want) || pages != 3 {
		t.Fatalf("filtered pages: %d pages, %v, want 3 pages of %v", pages, got, want)
	}
	done := func(j *svcv1.Job) bool { return j.GetStatus() == svcv1.JobStatus_JOB_STATUS_SUCCEEDED }
	if n, err := rec.Count(ctx, tenantA, done); err != nil || n != 234 {
		t.Fatalf("count of the succeeded: %d %v, want 234", n, err)
	}
	if n, err := rec.Count(ctx, tenantA, nil); err != nil || n != 700 {
		t.Fatalf("count: %d %v", n, err)
	}

	// All: oldest first, whole, with the store usable between items; AllUnder by id prefix.
	var all []string
	for j, err := range rec.All(ctx, tenantA, nil) {
		if err != nil {
			t.Fatal(err)
		}
		if _, err := rec.Get(ctx, tenantA, j.GetId()); err != nil {
			t.Fatal(err)
		}
		all = append(all, j.GetId())
	}
	if !slices.Equal(all, a) {
		t.Fatalf("All yielded %d, want %d oldest first", len(all), len(a))
	}
	n := 0
	for j, err := range rec.AllUnder(ctx, tenantA, a[2][:len(a[2])-1]) {
		if err != nil {
			t.Fatal(err)
		}
		if j.GetId()[:len(a[2])-1] != a[2][:len(a[2])-1] {
			t.Fatalf("AllUnder yielded %s outside its prefix", j.GetId())
		}
		n++
	}
	if n == 0 {
		t.Fatal("AllUnder found nothing under a present prefix")
	}
	seen := 0
	if err := rec.ScanAll(ctx, func(string, string, *svcv1.Job) bool { seen++; return true }); err != nil || seen != 705 {
		t.Fatalf("scan all: %d %v", seen, err)
	}

	// Update, delete, and tenants apart.
	if err := rec.Update(ctx, tenantA, a[1], func(j *svcv1.Job) error { j.Progress = 50; return nil }); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	if err := rec.Update(ctx, tenantA, a[1], func(j *svcv1.Job) error { j.Progress = 99; return boom }); !errors.Is(err, boom) {
		t.Fatalf("a failed update: %v", err)
	}
	if j, err := rec.Get(ctx, tenantA, a[1]); err != nil || j.GetProgress() != 50 {
		t.Fatalf("after updates: %v %v", j, err)
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
}

// A record put with a Write stores both or neither.
func TestRecordsPutWithWrite(t *testing.T) {
	s := open(t)
	defer s.Close()
	ctx := context.Background()
	ev := &svcv1.Event{Id: id.New("evt"), Type: "svc.job.created"}
	w, err := s.Events().Write(ev, tenantA)
	if err != nil {
		t.Fatal(err)
	}
	j := &svcv1.Job{Id: id.New("job")}
	if err := s.Resources().Jobs().Put(ctx, tenantA, j.Id, j, w, s.Usage().Write([]storage.UsageDelta{{Scope: "org:o", Month: "2026-11", Meter: "m", Quantity: 1}})); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Resources().EventLog().Get(ctx, tenantA, ev.Id); err != nil {
		t.Fatalf("the event written with the job: %v", err)
	}
	if c, err := s.Usage().Counters(ctx, "org:o", "2026-11"); err != nil || c["m"] != 1 {
		t.Fatalf("the usage written with the job: %v %v", c, err)
	}
	boom := errors.New("boom")
	ev2 := &svcv1.Event{Id: id.New("evt")}
	w2, _ := s.Events().Write(ev2, tenantA)
	if err := s.Resources().Jobs().Update(ctx, tenantA, j.Id, func(*svcv1.Job) error { return boom }, w2); !errors.Is(err, boom) {
		t.Fatal(err)
	}
	if _, err := s.Resources().EventLog().Get(ctx, tenantA, ev2.Id); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("the event of a failed update: %v", err)
	}
}

// A filter of ListExecutions reads each execution's plan.
func TestListExecutions(t *testing.T) {
	s := open(t)
	defer s.Close()
	ctx := context.Background()
	for i, intent := range []svcv1.PlanIntent{svcv1.PlanIntent_PLAN_INTENT_SVC, svcv1.PlanIntent_PLAN_INTENT_RESCUE, svcv1.PlanIntent_PLAN_INTENT_SVC} {
		at := epoch.Add(time.Duration(i) * time.Second)
		p := &svcv1.Plan{PlanId: id.NewAt("pln", at), Intent: intent}
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
	if err != nil || len(page.Items) != 2 || page.Items[0].GetId() < page.Items[1].GetId() {
		t.Fatalf("executions of svc plans, newest first: %v %v", page.Items, err)
	}
}

// OwnerOf finds the tenant of an id of each kind addressed by id; EraseTenant deletes a
// tenant's records but those kept, and nothing of another tenant's.
func TestOwnersAndErase(t *testing.T) {
	s := open(t)
	defer s.Close()
	ctx := context.Background()
	a := putJobs(t, s, tenantA, 3)
	b := putJobs(t, s, tenantB, 1)
	src := &svcv1.Source{Id: id.New("src")}
	if err := s.Resources().Sources().Put(ctx, tenantA, src.Id, src); err != nil {
		t.Fatal(err)
	}
	p := &svcv1.Plan{PlanId: id.New("pln"), Objects: []*svcv1.PlanObject{{AssetId: "ast_1"}}}
	if err := s.Plans().Put(ctx, tenantA, p); err != nil {
		t.Fatal(err)
	}
	if err := s.Receipts().Put(ctx, tenantA, "rcp_1", []byte("{}")); err != nil {
		t.Fatal(err)
	}
	if err := s.IntelState().Put(ctx, tenantA, "state", []byte("x")); err != nil {
		t.Fatal(err)
	}
	for id, want := range map[string]string{src.Id: tenantA, p.PlanId: tenantA, "rcp_1": tenantA, b[0]: tenantB} {
		if got, err := s.OwnerOf(ctx, id); err != nil || got != want {
			t.Fatalf("owner of %s: %q %v, want %q", id, got, err, want)
		}
	}
	if _, err := s.OwnerOf(ctx, "src_unknown"); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("owner of an unknown id: %v", err)
	}
	n, err := s.EraseTenant(ctx, tenantA, []storage.Ref{{Kind: storage.KindJob, ID: a[0]}, {Kind: storage.KindReceipt, ID: "rcp_1"}})
	// 2 jobs, a source, a plan and its object, the intel state.
	if err != nil || n != 6 {
		t.Fatalf("erase: %d %v, want 6", n, err)
	}
	if _, err := s.Resources().Jobs().Get(ctx, tenantA, a[0]); err != nil {
		t.Fatalf("the kept job: %v", err)
	}
	if _, err := s.Receipts().Get(ctx, tenantA, "rcp_1"); err != nil {
		t.Fatalf("the kept receipt: %v", err)
	}
	if _, err := s.Resources().Jobs().Get(ctx, tenantA, a[1]); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("an erased job: %v", err)
	}
	if _, err := s.IntelState().Get(ctx, tenantA, "state"); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("erased state: %v", err)
	}
	if _, err := s.OwnerOf(ctx, src.Id); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("an erased source still has an owner: %v", err)
	}
	if _, err := s.Resources().Jobs().Get(ctx, tenantB, b[0]); err != nil {
		t.Fatalf("another tenant's job: %v", err)
	}
	if err := s.Probe(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestUsage(t *testing.T) {
	s := open(t)
	defer s.Close()
	ctx := context.Background()
	u := s.Usage()
	d := []storage.UsageDelta{{Scope: "org:org_1", Month: "2026-11", Meter: "api_operations", Quantity: 2}}
	if err := u.Add(ctx, d); err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		applied, err := u.AddOnce(ctx, "exe_1", d)
		if err != nil || applied != (i == 0) {
			t.Fatalf("add once, try %d: %v %v", i, applied, err)
		}
	}
	if c, err := u.Counters(ctx, "org:org_1", "2026-11"); err != nil || c["api_operations"] != 4 {
		t.Fatalf("counters: %v %v", c, err)
	}
	if orgs, err := u.Orgs(ctx, "2026-11"); err != nil || !slices.Equal(orgs, []string{"org_1"}) {
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
	if err := u.SetCeiling(ctx, "org_1", storage.Ceiling{Cents: 500, UpdatedAt: "2026-11-02T00:00:00Z"}); err != nil {
		t.Fatal(err)
	}
	if got, ok, err := u.CeilingOf(ctx, "org_1"); err != nil || !ok || got.Cents != 500 {
		t.Fatalf("ceiling: %v %v %v", got, ok, err)
	}
}
