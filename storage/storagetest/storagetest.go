// Package storagetest is the conformance suite of the embedding package's storage seam
// (svc.dev/svc/storage): every Store implementation (the bbolt one in svc.dev/svc/storage/bolt, a
// PostgreSQL one) runs Run against fresh, empty stores. The vault's records have their own
// suite, vaulttest.RunMeta.
package storagetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"google.golang.org/protobuf/proto"

	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/id"
	"svc.dev/svc/storage"
	"svc.dev/svc/vault"
)

// Run runs the suite; open returns a new, empty store, which Run closes.
func Run(t *testing.T, open func(t *testing.T) storage.Store) {
	for _, tc := range []struct {
		name string
		fn   func(*testing.T, storage.Store)
	}{
		{"Plans", testPlans},
		{"PlanWrites", testPlanWrites},
		{"Executions", testExecutions},
		{"Journal", testJournal},
		{"Sources", testSources},
		{"Destinations", testDestinations},
		{"Receipts", testReceipts},
		{"Manifests", testManifests},
		{"ForeignWrite", testForeignWrite},
		{"JournalAfter", testJournalAfter},
		{"VaultChanges", testVaultChanges},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := open(t)
			defer s.Close()
			tc.fn(t, s)
		})
	}
}

const (
	tenantA = "test:usr_a"
	tenantB = "live:usr_a" // the same owner in the other mode: another tenant
)

var ctx = context.Background()

func notFound(t *testing.T, what string, err error) {
	t.Helper()
	if !errors.Is(err, storage.ErrNotFound) {
		t.Errorf("%s: %v, want an error wrapping storage.ErrNotFound", what, err)
	}
}

func plan(n int) *svcv1.Plan {
	p := &svcv1.Plan{PlanId: id.New("pln"), State: svcv1.PlanState_PLAN_STATE_VALIDATED, Hash: "h"}
	for i := range n {
		p.Objects = append(p.Objects, &svcv1.PlanObject{AssetId: fmt.Sprintf("ast_%06d", i), ProviderObjectId: fmt.Sprint(i)})
	}
	return p
}

// testPlans: a plan reads back whole, as a header without objects, and by pages, across sizes
// that cross any chunking; another tenant finds nothing.
func testPlans(t *testing.T, s storage.Store) {
	for _, n := range []int{0, 1, 1023, 1024, 1025, 2500} {
		p := plan(n)
		if err := s.Plans().Put(ctx, tenantA, p); err != nil {
			t.Fatalf("put %d objects: %v", n, err)
		}
		if len(p.GetObjects()) != n {
			t.Fatalf("Put changed the plan it was given: %d objects, want %d", len(p.GetObjects()), n)
		}
		got, err := s.Plans().Get(ctx, tenantA, p.PlanId)
		if err != nil || !proto.Equal(got, p) {
			t.Fatalf("get %d objects: %v (equal %v)", n, err, proto.Equal(got, p))
		}
		h, err := s.Plans().Header(ctx, tenantA, p.PlanId)
		if err != nil || len(h.GetObjects()) != 0 || h.GetHash() != "h" {
			t.Fatalf("header: %d objects, %v", len(h.GetObjects()), err)
		}
		if err := s.Plans().Fill(ctx, tenantA, h); err != nil || !proto.Equal(h, p) {
			t.Fatalf("fill: %v", err)
		}
		h, _ = s.Plans().Header(ctx, tenantA, p.PlanId)
		var paged []*svcv1.PlanObject
		for start := 0; ; {
			objs, more, err := s.Plans().Page(ctx, tenantA, h, start, 700)
			if err != nil {
				t.Fatal(err)
			}
			paged = append(paged, objs...)
			start += len(objs)
			if !more {
				break
			}
			if len(objs) == 0 {
				t.Fatal("a page with more to come was empty")
			}
		}
		if len(paged) != n {
			t.Fatalf("pages hold %d objects, want %d", len(paged), n)
		}
		for i, o := range paged {
			if !proto.Equal(o, p.Objects[i]) {
				t.Fatalf("page object %d differs", i)
			}
		}
		count := 0
		for objs, err := range s.Plans().Objects(ctx, tenantA, p.PlanId) {
			if err != nil {
				t.Fatal(err)
			}
			count += len(objs)
		}
		if count != n {
			t.Fatalf("Objects yielded %d, want %d", count, n)
		}
		_, err = s.Plans().Get(ctx, tenantB, p.PlanId)
		notFound(t, "another tenant's plan", err)
	}
	_, err := s.Plans().Header(ctx, tenantA, id.New("pln"))
	notFound(t, "a missing plan", err)
	seen := 0
	if err := s.Plans().Scan(ctx, tenantA, func(*svcv1.Plan) bool { seen++; return true }); err != nil || seen != 6 {
		t.Fatalf("scan: %d plans, %v", seen, err)
	}
}

// testPlanWrites: an update changes the header, keeps the objects, and stores the writes
// given with it; a failing update stores nothing.
func testPlanWrites(t *testing.T, s storage.Store) {
	p := plan(3)
	if err := s.Plans().Put(ctx, tenantA, p); err != nil {
		t.Fatal(err)
	}
	x := &svcv1.Execution{Id: id.New("exe"), PlanId: p.PlanId}
	err := s.Plans().Update(ctx, tenantA, p.PlanId, func(q *svcv1.Plan) error {
		if len(q.GetObjects()) != 3 {
			return fmt.Errorf("the update function saw %d objects, want 3", len(q.GetObjects()))
		}
		q.State = svcv1.PlanState_PLAN_STATE_COMMITTING
		x.Status = svcv1.ExecutionStatus_EXECUTION_STATUS_QUEUED // filled in the transaction
		return nil
	}, s.Executions().PutWrite(tenantA, x))
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.Plans().Get(ctx, tenantA, p.PlanId)
	if err != nil || got.GetState() != svcv1.PlanState_PLAN_STATE_COMMITTING || len(got.GetObjects()) != 3 {
		t.Fatalf("after the update: %v, %v, %d objects", got.GetState(), err, len(got.GetObjects()))
	}
	gx, err := s.Executions().Get(ctx, tenantA, x.Id)
	if err != nil || gx.GetStatus() != svcv1.ExecutionStatus_EXECUTION_STATUS_QUEUED {
		t.Fatalf("the execution written with the update: %v, %v", gx, err)
	}
	x2 := &svcv1.Execution{Id: id.New("exe")}
	failed := errors.New("refused")
	err = s.Plans().Update(ctx, tenantA, p.PlanId, func(q *svcv1.Plan) error {
		q.State = svcv1.PlanState_PLAN_STATE_CANCELLED
		return failed
	}, s.Executions().PutWrite(tenantA, x2))
	if !errors.Is(err, failed) {
		t.Fatalf("a failing update: %v", err)
	}
	if got, _ := s.Plans().Header(ctx, tenantA, p.PlanId); got.GetState() != svcv1.PlanState_PLAN_STATE_COMMITTING {
		t.Fatalf("a failed update changed the plan: %v", got.GetState())
	}
	_, err = s.Executions().Get(ctx, tenantA, x2.Id)
	notFound(t, "the write of a failed update", err)
	ev := &svcv1.Event{Id: id.New("evt"), Type: "svc.plan.created"}
	w, err := s.Events().Write(ev, tenantA)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Plans().Put(ctx, tenantA, plan(1), w); err != nil {
		t.Fatalf("a plan with its event: %v", err)
	}
	if err := s.Apply(ctx, w); err != nil {
		t.Fatalf("an event written on its own: %v", err)
	}
	err = s.Plans().Update(ctx, tenantB, p.PlanId, func(*svcv1.Plan) error { return nil })
	notFound(t, "updating another tenant's plan", err)

	// UpdateHeader changes the state, keeps the objects, stores its writes with it (a vault
	// change announcement among them), and refuses another tenant's plan.
	x3 := &svcv1.Execution{Id: id.New("exe")}
	err = s.Plans().UpdateHeader(ctx, tenantA, p.PlanId, func(q *svcv1.Plan) error {
		q.State = svcv1.PlanState_PLAN_STATE_EXECUTED
		return nil
	}, s.Executions().PutWrite(tenantA, x3), s.VaultChanged(tenantA, "vob_x"))
	if err != nil {
		t.Fatalf("UpdateHeader: %v", err)
	}
	if got, err := s.Plans().Get(ctx, tenantA, p.PlanId); err != nil || got.GetState() != svcv1.PlanState_PLAN_STATE_EXECUTED || len(got.GetObjects()) != 3 {
		t.Fatalf("after UpdateHeader: %v, %v, %d objects", got.GetState(), err, len(got.GetObjects()))
	}
	if _, err := s.Executions().Get(ctx, tenantA, x3.Id); err != nil {
		t.Fatalf("the write of UpdateHeader: %v", err)
	}
	err = s.Plans().UpdateHeader(ctx, tenantB, p.PlanId, func(*svcv1.Plan) error { return nil })
	notFound(t, "updating another tenant's plan header", err)
}

func testExecutions(t *testing.T, s storage.Store) {
	x := &svcv1.Execution{Id: id.New("exe"), Status: svcv1.ExecutionStatus_EXECUTION_STATUS_RUNNING}
	if err := s.Apply(ctx, s.Executions().PutWrite(tenantA, x)); err != nil {
		t.Fatal(err)
	}
	if err := s.Executions().Update(ctx, tenantA, x.Id, func(e *svcv1.Execution) error {
		e.Completed = 7
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Executions().Get(ctx, tenantA, x.Id); err != nil || got.GetCompleted() != 7 {
		t.Fatalf("after the update: %v, %v", got, err)
	}
	_, err := s.Executions().Get(ctx, tenantB, x.Id)
	notFound(t, "another tenant's execution", err)
	y := &svcv1.Execution{Id: id.New("exe")}
	if err := s.Apply(ctx, s.Executions().PutWrite(tenantB, y)); err != nil {
		t.Fatal(err)
	}
	all := map[string]string{}
	if err := s.Executions().ScanAll(ctx, func(tenant string, e *svcv1.Execution) bool { all[e.GetId()] = tenant; return true }); err != nil {
		t.Fatal(err)
	}
	if all[x.Id] != tenantA || all[y.Id] != tenantB {
		t.Fatalf("scan all: %v", all)
	}
	n := 0
	if err := s.Executions().Scan(ctx, tenantA, func(*svcv1.Execution) bool { n++; return true }); err != nil || n != 1 {
		t.Fatalf("scan of one tenant: %d, %v", n, err)
	}
}

// testJournal: entries read back in order, per execution and tenant, including appends made
// concurrently by several executions.
func testJournal(t *testing.T, s storage.Store) {
	var wg sync.WaitGroup
	for e := range 4 {
		wg.Go(func() {
			for i := range 50 {
				if err := s.Journal().Append(ctx, tenantA, fmt.Sprintf("exe_%d", e), [][]byte{[]byte(fmt.Sprintf("%d-%d", e, i))}); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	for e := range 4 {
		got, err := s.Journal().Read(ctx, tenantA, fmt.Sprintf("exe_%d", e))
		if err != nil || len(got) != 50 {
			t.Fatalf("journal %d: %d entries, %v", e, len(got), err)
		}
		for i, b := range got {
			if string(b) != fmt.Sprintf("%d-%d", e, i) {
				t.Fatalf("journal %d entry %d is %q", e, i, b)
			}
		}
	}
	if got, err := s.Journal().Read(ctx, tenantB, "exe_0"); err != nil || len(got) != 0 {
		t.Fatalf("another tenant's journal: %d entries, %v", len(got), err)
	}
	// Scan yields what Read returns, in order, and stops at the function's error.
	var scanned []string
	if err := s.Journal().Scan(ctx, tenantA, "exe_2", func(b []byte) error { scanned = append(scanned, string(b)); return nil }); err != nil || len(scanned) != 50 {
		t.Fatalf("scan: %d entries, %v", len(scanned), err)
	}
	for i, v := range scanned {
		if v != fmt.Sprintf("2-%d", i) {
			t.Fatalf("scan entry %d is %q", i, v)
		}
	}
	stop, n := errors.New("stop"), 0
	if err := s.Journal().Scan(ctx, tenantA, "exe_2", func([]byte) error { n++; return stop }); !errors.Is(err, stop) || n != 1 {
		t.Fatalf("scan stopped by its function: %v after %d entries", err, n)
	}
	n = 0
	if err := s.Journal().Scan(ctx, tenantB, "exe_2", func([]byte) error { n++; return nil }); err != nil || n != 0 {
		t.Fatalf("another tenant's journal scanned: %d entries, %v", n, err)
	}
}

func testSources(t *testing.T, s storage.Store) {
	src := &svcv1.Source{Id: id.New("src"), DisplayName: "a"}
	if err := s.Sources().Put(ctx, tenantA, src); err != nil {
		t.Fatal(err)
	}
	if err := s.Sources().Update(ctx, tenantA, src.Id, func(x *svcv1.Source) error { x.DisplayName = "b"; return nil }); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Sources().Get(ctx, tenantA, src.Id); err != nil || got.GetDisplayName() != "b" {
		t.Fatalf("source: %v, %v", got, err)
	}
	_, err := s.Sources().Get(ctx, tenantB, src.Id)
	notFound(t, "another tenant's source", err)
	if err := s.Sources().PutConfig(ctx, tenantA, src.Id, []byte("sealed")); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Sources().Config(ctx, tenantA, src.Id); err != nil || string(got) != "sealed" {
		t.Fatalf("config: %q, %v", got, err)
	}
	_, err = s.Sources().Config(ctx, tenantB, src.Id)
	notFound(t, "another tenant's source configuration", err)
	n := 0
	if err := s.Sources().Scan(ctx, tenantA, func(*svcv1.Source) bool { n++; return true }); err != nil || n != 1 {
		t.Fatalf("scan: %d, %v", n, err)
	}
}

func testDestinations(t *testing.T, s storage.Store) {
	d := &svcv1.Destination{DestinationId: id.New("dst"), Label: "Export"}
	if err := s.Destinations().Put(ctx, tenantA, d); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Destinations().Get(ctx, tenantA, d.DestinationId); err != nil || got.GetLabel() != "Export" {
		t.Fatalf("destination: %v, %v", got, err)
	}
	_, err := s.Destinations().Get(ctx, tenantB, d.DestinationId)
	notFound(t, "another tenant's destination", err)
	_, err = s.Destinations().Origin(ctx, tenantA, d.DestinationId)
	notFound(t, "the origin of a destination made from no source", err)
	if err := s.Destinations().PutOrigin(ctx, tenantA, d.DestinationId, "src_1"); err != nil {
		t.Fatal(err)
	}
	if o, err := s.Destinations().Origin(ctx, tenantA, d.DestinationId); err != nil || o != "src_1" {
		t.Fatalf("origin: %q, %v", o, err)
	}
	_, err = s.Destinations().Origin(ctx, tenantB, d.DestinationId)
	notFound(t, "another tenant's destination origin", err)
}

func testReceipts(t *testing.T, s storage.Store) {
	raw := []byte(`{"receiptId":"rcp_1","hash":"x"}`)
	if err := s.Receipts().Put(ctx, tenantA, "rcp_1", raw); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Receipts().Get(ctx, tenantA, "rcp_1"); err != nil || string(got) != string(raw) {
		t.Fatalf("receipt bytes: %q, %v", got, err)
	}
	_, err := s.Receipts().Get(ctx, tenantB, "rcp_1")
	notFound(t, "another tenant's receipt", err)
}

func testManifests(t *testing.T, s storage.Store) {
	create := func() (*svcv1.Manifest, error) { return &svcv1.Manifest{ManifestId: "mfs_1", AssetId: "ast_1"}, nil }
	for range 2 {
		if err := s.Manifests().Upsert(ctx, tenantA, "ast_1", create, func(m *svcv1.Manifest) error {
			m.Lineage = append(m.Lineage, &svcv1.ManifestLineage{})
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	m, err := s.Manifests().Get(ctx, tenantA, "ast_1")
	if err != nil || m.GetManifestId() != "mfs_1" || len(m.GetLineage()) != 2 {
		t.Fatalf("after two upserts: %v, %v", m, err)
	}
	if err := s.Manifests().Put(ctx, tenantA, "ast_0", &svcv1.Manifest{AssetId: "ast_0"}); err != nil {
		t.Fatal(err)
	}
	var order []string
	if err := s.Manifests().Scan(ctx, tenantA, func(m *svcv1.Manifest) bool { order = append(order, m.GetAssetId()); return true }); err != nil {
		t.Fatal(err)
	}
	if len(order) != 2 || order[0] != "ast_0" || order[1] != "ast_1" {
		t.Fatalf("scan order %v, want asset id order", order)
	}
	order = nil
	for m, err := range s.Manifests().All(ctx, tenantA) {
		if err != nil {
			t.Fatal(err)
		}
		order = append(order, m.GetAssetId())
		// The consumer may use the store while it reads: All holds no transaction open.
		if _, err := s.Manifests().Get(ctx, tenantA, m.GetAssetId()); err != nil {
			t.Fatal(err)
		}
	}
	if len(order) != 2 || order[0] != "ast_0" || order[1] != "ast_1" {
		t.Fatalf("All: %v, want asset id order", order)
	}
	_, err = s.Manifests().Get(ctx, tenantB, "ast_1")
	notFound(t, "another tenant's manifest", err)
}

type foreignWrite struct{}

func (foreignWrite) StoreWrite() {}

// testForeignWrite: a Write another store made is refused, and nothing is stored.
func testForeignWrite(t *testing.T, s storage.Store) {
	p := plan(1)
	if err := s.Plans().Put(ctx, tenantA, p, foreignWrite{}); err == nil {
		t.Fatal("a foreign write was accepted")
	}
	_, err := s.Plans().Get(ctx, tenantA, p.PlanId)
	notFound(t, "a plan put with a foreign write", err)
	if err := s.Apply(ctx, foreignWrite{}); err == nil {
		t.Fatal("Apply accepted a foreign write")
	}
}

// testJournalAfter: ScanAfter yields the entries after a position, each once, in order, with
// increasing positions, including entries appended after an earlier scan; it stops at the
// function's error; another execution's or tenant's entries never show.
func testJournalAfter(t *testing.T, s storage.Store) {
	j := s.Journal()
	var pos uint64
	var got []string
	follow := func() {
		t.Helper()
		err := j.ScanAfter(ctx, tenantA, "exe_f", pos, func(p uint64, b []byte) error {
			if p <= pos {
				t.Fatalf("position %d after %d", p, pos)
			}
			pos = p
			got = append(got, string(b))
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	follow()
	if len(got) != 0 || pos != 0 {
		t.Fatalf("an empty journal yielded %v", got)
	}
	for round := range 5 {
		var batch [][]byte
		for i := range round + 1 {
			batch = append(batch, []byte(fmt.Sprintf("%d-%d", round, i)))
		}
		if err := j.Append(ctx, tenantA, "exe_f", batch); err != nil {
			t.Fatal(err)
		}
		// Entries of other executions and tenants, appended in between.
		if err := j.Append(ctx, tenantA, "exe_f2", [][]byte{[]byte("other")}); err != nil {
			t.Fatal(err)
		}
		if err := j.Append(ctx, tenantB, "exe_f", [][]byte{[]byte("other tenant")}); err != nil {
			t.Fatal(err)
		}
		follow()
	}
	all, err := j.Read(ctx, tenantA, "exe_f")
	if err != nil || len(all) != 15 || len(got) != 15 {
		t.Fatalf("followed %d entries, read %d (%v), want 15", len(got), len(all), err)
	}
	for i := range all {
		if got[i] != string(all[i]) {
			t.Fatalf("entry %d followed as %q, read as %q", i, got[i], all[i])
		}
	}
	follow()
	if len(got) != 15 {
		t.Fatalf("a scan from the last position yielded again: %v", got[15:])
	}
	// From 0 is from the first; a function's error stops the scan.
	stop, n := errors.New("stop"), 0
	if err := j.ScanAfter(ctx, tenantA, "exe_f", 0, func(uint64, []byte) error { n++; return stop }); !errors.Is(err, stop) || n != 1 {
		t.Fatalf("scan stopped by its function: %v after %d entries", err, n)
	}
}

// testVaultChanges: the vault's records feed the change feed in their own transaction when an
// object becomes or stops being searchable (a first commit of an object that names a manifest
// is left to the manifest's VaultChanged write); VaultChanged is stored with its change or not
// at all; Read is in order, after a sequence number, up to a limit; Ack deletes entries, and
// their numbers are not reused.
func testVaultChanges(t *testing.T, s storage.Store) {
	feed, meta := s.VaultChanges(), s.VaultMeta()
	put := func(tenant string, o vault.Object) {
		t.Helper()
		if err := meta.Update(ctx, tenant, func(tx vault.MetaTx) error { return tx.PutObject(o) }); err != nil {
			t.Fatal(err)
		}
	}
	entries := func(after uint64) []storage.VaultChange {
		t.Helper()
		got, _, err := feed.Read(ctx, after, 100)
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	if last, err := feed.Last(ctx); err != nil || last != 0 || len(entries(0)) != 0 {
		t.Fatalf("a new feed: last %d (%v), entries %v", last, err, entries(0))
	}
	plain := vault.Object{ID: "vlt_01JD00000000000000000000A1"}
	named := vault.Object{ID: "vlt_01JD00000000000000000000B2", ManifestID: "mfs_01JD0000000000000000000001"}
	for _, st := range []vault.State{vault.StateUploading, vault.StateVerifying, vault.StateCommitted} {
		plain.State, named.State = st, st
		put(tenantA, plain)
		put(tenantB, named)
	}
	got := entries(0)
	if len(got) != 1 || got[0].Tenant != tenantA || got[0].ObjectID != plain.ID || got[0].Seq == 0 {
		t.Fatalf("after the commits: %+v, want only %s of %s", got, plain.ID, tenantA)
	}
	put(tenantA, plain) // the same state again: nothing new
	if len(entries(0)) != 1 {
		t.Fatalf("a write that changes no state fed the feed: %+v", entries(0))
	}
	// The manifest's transaction announces the named object, with the change or not at all.
	fail := errors.New("refused")
	err := s.Manifests().Upsert(ctx, tenantB, "ast_1", func() (*svcv1.Manifest, error) { return &svcv1.Manifest{AssetId: "ast_1"}, nil },
		func(*svcv1.Manifest) error { return fail }, s.VaultChanged(tenantB, named.ID))
	if !errors.Is(err, fail) || len(entries(0)) != 1 {
		t.Fatalf("a failed change fed the feed: %v, %+v", err, entries(0))
	}
	if err := s.Manifests().Upsert(ctx, tenantB, "ast_1", func() (*svcv1.Manifest, error) { return &svcv1.Manifest{AssetId: "ast_1"}, nil },
		func(*svcv1.Manifest) error { return nil }, s.VaultChanged(tenantB, named.ID)); err != nil {
		t.Fatal(err)
	}
	plain.State, named.State = vault.StateCold, vault.StateDeleted
	put(tenantA, plain)
	put(tenantB, named)
	got = entries(0)
	want := []string{tenantA + " " + plain.ID, tenantB + " " + named.ID, tenantA + " " + plain.ID, tenantB + " " + named.ID}
	if len(got) != len(want) {
		t.Fatalf("feed: %+v, want %v", got, want)
	}
	for i, c := range got {
		if c.Tenant+" "+c.ObjectID != want[i] || (i > 0 && c.Seq <= got[i-1].Seq) {
			t.Fatalf("entry %d: %+v, want %s after %d", i, c, want[i], got[max(i-1, 0)].Seq)
		}
	}
	last, err := feed.Last(ctx)
	if err != nil || last < got[3].Seq {
		t.Fatalf("last %d (%v), below the last entry %d", last, err, got[3].Seq)
	}
	if page, l, err := feed.Read(ctx, got[0].Seq, 2); err != nil || len(page) != 2 || page[0] != got[1] || page[1] != got[2] || l != last {
		t.Fatalf("read after %d, 2: %+v last %d (%v)", got[0].Seq, page, l, err)
	}
	if err := feed.Ack(ctx, got[1].Seq); err != nil {
		t.Fatal(err)
	}
	if rest := entries(0); len(rest) != 2 || rest[0] != got[2] {
		t.Fatalf("after acknowledging two: %+v", rest)
	}
	if err := feed.Ack(ctx, last); err != nil {
		t.Fatal(err)
	}
	if rest, l, err := feed.Read(ctx, 0, 100); err != nil || len(rest) != 0 || l != last {
		t.Fatalf("after acknowledging all: %+v, last %d (%v), want last %d", rest, l, err, last)
	}
	plain.State = vault.StateDeleted
	put(tenantA, plain)
	if got := entries(0); len(got) != 1 || got[0].Seq <= last {
		t.Fatalf("a number reused after Ack: %+v (last was %d)", got, last)
	}
}
