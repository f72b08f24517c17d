package migrate

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"svc.dev/svc"
	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/internal/pgtest"
	"svc.dev/svc/providers"
	"svc.dev/svc/storage/postgres"
	"svc.dev/svc/vault/backend/local"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// dataDir makes a data directory as a single-node server leaves it: a folder rescued into the
// vault by an execution that ended with a receipt, and some live usage counted.
func dataDir(t *testing.T) string {
	t.Helper()
	ctx := context.Background()
	dir, root := t.TempDir(), t.TempDir()
	for i := range 4 {
		os.WriteFile(filepath.Join(root, fmt.Sprintf("f%d.txt", i)), []byte(fmt.Sprint("content ", i)), 0o600)
	}
	sv, err := svc.Open(ctx, dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer sv.Close()
	src, err := sv.ConnectSource(ctx, svc.SourceSpec{Provider: providers.VendorDLocal, Config: providers.Config{"root": root}, Kind: "folder"})
	if err != nil {
		t.Fatal(err)
	}
	p, err := sv.BuildPlan(ctx, svc.PlanRequest{SourceIDs: []string{src.Id}, Intent: svcv1.PlanIntent_PLAN_INTENT_RESCUE})
	if err == nil {
		p, err = sv.AuthorizePlan(ctx, p.PlanId, p.Hash, nil)
	}
	var x *svcv1.Execution
	if err == nil {
		x, err = sv.Execute(ctx, p.PlanId, nil)
	}
	if err == nil {
		x, err = sv.Wait(ctx, x.Id)
	}
	if err != nil || x.GetReceiptId() == "" {
		t.Fatalf("rescue: %v (receipt %q)", err, x.GetReceiptId())
	}
	return dir
}

// Run copies every kind, reports equal counts and hashes on both sides, refuses the target
// it filled without Force, and a record changed in the target afterwards is caught.
func TestRunCopiesAndChecks(t *testing.T) {
	ctx := context.Background()
	dir := dataDir(t)
	pg, err := postgres.Open(ctx, pgtest.Database(t))
	if err != nil {
		t.Fatal(err)
	}
	defer pg.Close()
	hot, err := local.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Run(ctx, Options{From: dir, To: pg, VaultHot: hot})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]Count{}
	for _, c := range rep.Counts {
		got[c.Kind] = c
		if c.Source != c.Target {
			t.Errorf("%s: %d -> %d", c.Kind, c.Source, c.Target)
		}
	}
	for _, k := range []string{"plans", "executions", "sources", "receipts", "journals", "vault objects", "vault blobs", "vault data keys", "manifests"} {
		if got[k].Source == 0 {
			t.Errorf("no %s copied", k)
		}
	}
	if rep.VaultFiles["hot"] == 0 || len(rep.ReceiptKeys) != 1 {
		t.Errorf("vault files %v, receipt keys %v", rep.VaultFiles, rep.ReceiptKeys)
	}
	if _, err := Run(ctx, Options{From: dir, To: pg}); !errors.Is(err, ErrTargetNotEmpty) {
		t.Fatalf("into the filled target: %v", err)
	}
	// A receipt altered in the target no longer matches.
	var tenant, id string
	for _, k := range kinds() {
		if k.name == "receipts" {
			k.each(ctx, pg, func(r record) error { tenant, id = splitKey(r.key); return errStop })
			if err := pg.Receipts().Put(ctx, tenant, id, []byte(`{"altered":true}`)); err != nil {
				t.Fatal(err)
			}
			src, err := svc.OpenStoppedStore(dir)
			if err != nil {
				t.Fatal(err)
			}
			_, err = verifyKind(ctx, k, src, pg)
			src.Close()
			if !errors.Is(err, ErrMismatch) {
				t.Fatalf("an altered receipt: %v", err)
			}
		}
	}
	// --force copies it again, and the check passes.
	if _, err := Run(ctx, Options{From: dir, To: pg, Force: true}); err != nil {
		t.Fatalf("force: %v", err)
	}
}
