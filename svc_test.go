package svc_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"svc.dev/svc"
	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/manifest"
	"svc.dev/svc/providers"
	"svc.dev/svc/storage/storagetest"
	"svc.dev/svc/vault"
)

// folder makes a folder of n small files and returns its path and contents by name.
func folder(t *testing.T, n int) (string, map[string][]byte) {
	t.Helper()
	root := t.TempDir()
	files := map[string][]byte{}
	for i := range n {
		name := string(rune('a'+i)) + ".txt"
		data := bytes.Repeat([]byte{byte('0' + i)}, 100*(i+1))
		if err := os.WriteFile(filepath.Join(root, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
		files[name] = data
	}
	return root, files
}

// snapshot is a folder's files and contents.
func snapshot(t *testing.T, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		out[p] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestVaultAFolder runs the whole loop in process: connect, plan (rescue: preserve only),
// authorize by hash, execute, watch, wait, verify the receipt, read the vault copies back,
// export the manifests, and restore one object next to its original.
func TestVaultAFolder(t *testing.T) { vaultAFolder(t, nil) }

// TestVaultAFolderOnAnotherStore runs the same loop on the seam's in-memory store: nothing in
// the package depends on bbolt.
func TestVaultAFolderOnAnotherStore(t *testing.T) {
	vaultAFolder(t, &svc.Options{Store: storagetest.NewMemory()})
}

func vaultAFolder(t *testing.T, opts *svc.Options) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	sv, err := svc.OpenMemory(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer sv.Close()
	root, files := folder(t, 3)
	before := snapshot(t, root)

	src, err := sv.ConnectSource(ctx, svc.SourceSpec{Provider: providers.VendorDLocal, Config: providers.Config{"root": root}, Kind: "folder", DisplayName: "Files"})
	if err != nil {
		t.Fatal(err)
	}
	p, err := sv.BuildPlan(ctx, svc.PlanRequest{SourceIDs: []string{src.Id}, Intent: svcv1.PlanIntent_PLAN_INTENT_RESCUE})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.GetObjects()) != len(files) {
		t.Fatalf("plan has %d objects, want %d", len(p.GetObjects()), len(files))
	}
	for _, o := range p.GetObjects() {
		if !slices.Equal(o.GetActions(), []svcv1.PlanAction{svcv1.PlanAction_PLAN_ACTION_PRESERVE}) {
			t.Fatalf("object %s: actions %v, want preserve only", o.GetProviderObjectId(), o.GetActions())
		}
	}
	if _, err := sv.Execute(ctx, p.PlanId, nil); !errors.Is(err, svc.ErrInvalidState) {
		t.Fatalf("executing an unauthorized plan: %v, want invalid_state", err)
	}
	if _, err := sv.AuthorizePlan(ctx, p.PlanId, "0000", nil); !errors.Is(err, svc.ErrPlanStale) {
		t.Fatalf("authorizing with another hash: %v, want plan_stale", err)
	}
	if p, err = sv.AuthorizePlan(ctx, p.PlanId, p.Hash, nil); err != nil || p.GetState() != svcv1.PlanState_PLAN_STATE_AUTHORIZED {
		t.Fatalf("authorize: %v (%v)", err, p.GetState())
	}
	x, err := sv.Execute(ctx, p.PlanId, nil)
	if err != nil {
		t.Fatal(err)
	}
	committed := 0
	for tr, err := range sv.Watch(ctx, x.Id) {
		if err != nil {
			t.Fatal(err)
		}
		if tr.To == svcv1.StepState_STEP_STATE_VAULT_COMMITTED {
			committed++
		}
		if tr.To == svcv1.StepState_STEP_STATE_SOURCE_TRASHED_OR_REMOVED {
			t.Fatalf("asset %s was removed from its source", tr.AssetID)
		}
	}
	if committed != len(files) {
		t.Fatalf("watched %d vault commits, want %d", committed, len(files))
	}
	if x, err = sv.Wait(ctx, x.Id); err != nil || x.GetStatus() != svcv1.ExecutionStatus_EXECUTION_STATUS_COMPLETED {
		t.Fatalf("wait: %v, status %v", err, x.GetStatus())
	}
	v, err := sv.VerifyReceipt(ctx, x.GetReceiptId())
	if err != nil || v.ExecutionID != x.Id || v.PlanID != p.PlanId {
		t.Fatalf("verify receipt: %+v, %v", v, err)
	}
	r, raw, err := sv.Receipt(ctx, x.GetReceiptId())
	if err != nil {
		t.Fatal(err)
	}
	// A receipt whose bytes changed does not verify.
	tampered := bytes.Replace(raw, []byte(`"completed"`), []byte(`"failed"`), 1)
	if _, err := svcReceiptVerify(sv, tampered); err == nil {
		t.Fatal("a tampered receipt verified")
	}
	for _, ro := range r.GetObjects() {
		if ro.GetVaultObjectId() == "" || ro.GetVaultSha256() == "" {
			t.Fatalf("receipt object %s not preserved", ro.GetAssetId())
		}
		rc, _, err := sv.OpenVaultObject(ctx, ro.GetVaultObjectId())
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(rc)
		rc.Close()
		if err != nil || !bytes.Equal(got, files[ro.GetProviderObjectId()]) {
			t.Fatalf("vault copy of %s: %d bytes, %v", ro.GetProviderObjectId(), len(got), err)
		}
		if _, err := sv.Manifest(ctx, ro.GetAssetId()); err != nil {
			t.Fatalf("manifest of %s: %v", ro.GetAssetId(), err)
		}
	}
	if after := snapshot(t, root); !mapsEqual(before, after) {
		t.Fatalf("the source folder changed:\nbefore %v\nafter  %v", before, after)
	}
	var bundle bytes.Buffer
	if _, err := sv.ExportManifests(ctx, &bundle, nil); err != nil {
		t.Fatal(err)
	}
	if err := manifest.VerifyBundle(bundle.Bytes()); err != nil {
		t.Fatalf("exported bundle: %v", err)
	}

	// Everything committed before now is due for the cold tier; moved, it still reads back.
	due, err := sv.ColdDue(ctx, -time.Hour)
	if err != nil || len(due) != len(files) {
		t.Fatalf("cold due: %v, %v", due, err)
	}
	if n, err := sv.MoveCold(ctx, due, nil); err != nil || n != len(files) {
		t.Fatalf("move cold: %d, %v", n, err)
	}
	for _, id := range due {
		o, err := sv.VaultObject(ctx, id)
		if err != nil || o.ColdSince.IsZero() {
			t.Fatalf("%s after the move: %+v, %v", id, o, err)
		}
	}
	if again, err := sv.ColdDue(ctx, -time.Hour); err != nil || len(again) != 0 {
		t.Fatalf("still due after the move: %v, %v", again, err)
	}

	// Restore one object beside its original, through a plan like any other.
	vid := r.GetObjects()[0].GetVaultObjectId()
	rp, err := sv.RestoreVaultObject(ctx, vid, &svc.RestoreOptions{Path: "restored/" + r.GetObjects()[0].GetProviderObjectId()})
	if err != nil {
		t.Fatal(err)
	}
	if rp, err = sv.AuthorizePlan(ctx, rp.PlanId, rp.Hash, nil); err != nil {
		t.Fatal(err)
	}
	rx, err := sv.Execute(ctx, rp.PlanId, nil)
	if err != nil {
		t.Fatal(err)
	}
	if rx, err = sv.Wait(ctx, rx.Id); err != nil || rx.GetStatus() != svcv1.ExecutionStatus_EXECUTION_STATUS_COMPLETED {
		t.Fatalf("restore: %v, status %v, errors %v", err, rx.GetStatus(), rx.GetErrors())
	}
	got, err := os.ReadFile(filepath.Join(root, "restored", r.GetObjects()[0].GetProviderObjectId()))
	if err != nil || !bytes.Equal(got, files[r.GetObjects()[0].GetProviderObjectId()]) {
		t.Fatalf("restored file: %d bytes, %v", len(got), err)
	}
}

// TestTenantsAreIsolated: a scope never sees another tenant's records.
func TestTenantsAreIsolated(t *testing.T) {
	ctx := context.Background()
	sv, err := svc.OpenMemory(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer sv.Close()
	root, _ := folder(t, 1)
	ana := sv.Tenant(svc.Tenant{Owner: "usr_ana", Mode: svc.ModeTest})
	src, err := ana.ConnectSource(ctx, svc.SourceSpec{Provider: providers.VendorDLocal, Config: providers.Config{"root": root}, Kind: "folder"})
	if err != nil {
		t.Fatal(err)
	}
	if !src.GetSimulated() {
		t.Error("a test-mode tenant's source is not marked simulated")
	}
	p, err := ana.BuildPlan(ctx, svc.PlanRequest{Intent: svcv1.PlanIntent_PLAN_INTENT_RESCUE})
	if err != nil {
		t.Fatal(err)
	}
	for name, other := range map[string]*svc.Scope{"default": sv.Scope, "ana live": sv.Tenant(svc.Tenant{Owner: "usr_ana", Mode: svc.ModeLive})} {
		if _, err := other.Source(ctx, src.Id); !errors.Is(err, svc.ErrNotFound) {
			t.Errorf("%s reads ana's source: %v", name, err)
		}
		if _, err := other.Plan(ctx, p.PlanId); !errors.Is(err, svc.ErrNotFound) {
			t.Errorf("%s reads ana's plan: %v", name, err)
		}
		if _, err := other.AuthorizePlan(ctx, p.PlanId, p.Hash, nil); !errors.Is(err, svc.ErrNotFound) {
			t.Errorf("%s authorizes ana's plan: %v", name, err)
		}
		if _, err := other.BuildPlan(ctx, svc.PlanRequest{SourceIDs: []string{src.Id}, Intent: svcv1.PlanIntent_PLAN_INTENT_RESCUE}); !errors.Is(err, svc.ErrNotFound) {
			t.Errorf("%s plans over ana's source: %v", name, err)
		}
	}
}

// TestReopen: a data directory keeps its records and keys: a receipt made before Close
// verifies after Open.
func TestReopen(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dir := t.TempDir()
	root, _ := folder(t, 2)
	sv, err := svc.Open(ctx, dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, x := rescue(ctx, t, sv, root, true)
	if err := sv.Close(); err != nil {
		t.Fatal(err)
	}
	sv, err = svc.Open(ctx, dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer sv.Close()
	if _, err := sv.VerifyReceipt(ctx, x.GetReceiptId()); err != nil {
		t.Fatalf("after reopening: %v", err)
	}
	if fi, err := os.Stat(filepath.Join(dir, "master.key")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("master.key: %v, %v", fi, err)
	}
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// TestUndoByReceipt: an execution that trashed files at the source is undone from its
// receipt, through a restore plan, and the files come back as they were.
func TestUndoByReceipt(t *testing.T) { undoByReceipt(t, nil, nil) }

// undoByReceipt runs the undo test on opts; undoing, when not nil, is told when the undo plan
// is being built and when it was.
func undoByReceipt(t *testing.T, opts *svc.Options, undoing func(bool)) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	sv, err := svc.OpenMemory(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer sv.Close()
	root, files := folder(t, 2)
	old := time.Now().AddDate(-2, 0, 0)
	for name := range files {
		os.Chtimes(filepath.Join(root, name), old, old)
	}
	src, err := sv.ConnectSource(ctx, svc.SourceSpec{Provider: providers.VendorDLocal, Config: providers.Config{"root": root}, Kind: "folder"})
	if err != nil {
		t.Fatal(err)
	}
	run := func(p *svcv1.Plan, err error) *svcv1.Execution {
		t.Helper()
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
		if err != nil || x.GetStatus() != svcv1.ExecutionStatus_EXECUTION_STATUS_COMPLETED {
			t.Fatalf("execution: %v (%v, errors %v)", err, x.GetStatus(), x.GetErrors())
		}
		return x
	}
	minAge := int64(30)
	x := run(sv.BuildPlan(ctx, svc.PlanRequest{SourceIDs: []string{src.Id}, Intent: svcv1.PlanIntent_PLAN_INTENT_SVC,
		Policy: &svcv1.SourcePolicy{MinAgeDays: &minAge}}))
	for name := range files {
		if _, err := os.Stat(filepath.Join(root, name)); err == nil {
			t.Fatalf("%s is still at the source after the clean-up", name)
		}
	}
	if undoing != nil {
		undoing(true)
	}
	undo, err := sv.UndoReceipt(ctx, x.GetReceiptId(), nil)
	if undoing != nil {
		undoing(false)
	}
	if err == nil && len(undo.GetObjects()) != len(files) {
		t.Fatalf("the undo plan restores %d objects, want %d", len(undo.GetObjects()), len(files))
	}
	run(undo, err)
	for name, body := range files {
		if got, err := os.ReadFile(filepath.Join(root, name)); err != nil || !bytes.Equal(got, body) {
			t.Fatalf("%s after the undo: %v", name, err)
		}
	}
}

// TestExportToADestination: a folder is exported into another through a destination; the
// copies are written, read back and checked, and the source is left as it was.
func TestExportToADestination(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	sv, err := svc.OpenMemory(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer sv.Close()
	root, files := folder(t, 3)
	out := t.TempDir()
	src, err := sv.ConnectSource(ctx, svc.SourceSpec{Provider: providers.VendorDLocal, Config: providers.Config{"root": root}, Kind: "folder"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sv.AddDestination(ctx, svc.DestinationSpec{Provider: providers.VendorDLocal, Config: providers.Config{"root": out}}); err == nil {
		t.Fatal("a destination without a label was added")
	}
	dst, err := sv.AddDestination(ctx, svc.DestinationSpec{Provider: providers.VendorDLocal, Config: providers.Config{"root": out}, Label: "Backup",
		PathTemplate: "{path}"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sv.BuildPlan(ctx, svc.PlanRequest{SourceIDs: []string{src.Id}, Intent: svcv1.PlanIntent_PLAN_INTENT_EXPORT}); !errors.Is(err, svc.ErrInvalidArgument) {
		t.Fatalf("an export without a destination: %v", err)
	}
	p, err := sv.BuildPlan(ctx, svc.PlanRequest{SourceIDs: []string{src.Id}, Intent: svcv1.PlanIntent_PLAN_INTENT_EXPORT, Destination: dst})
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
	if err != nil || x.GetStatus() != svcv1.ExecutionStatus_EXECUTION_STATUS_COMPLETED {
		t.Fatalf("export: %v (%v, errors %v)", err, x.GetStatus(), x.GetErrors())
	}
	for name, body := range files {
		if got, err := os.ReadFile(filepath.Join(out, name)); err != nil || !bytes.Equal(got, body) {
			t.Errorf("%s at the destination: %v", name, err)
		}
		if got, err := os.ReadFile(filepath.Join(root, name)); err != nil || !bytes.Equal(got, body) {
			t.Errorf("%s at the source: %v", name, err)
		}
	}
}

// TestScrubFindsCorruptContent: a vault copy changed on disk is found by the scrub and marked
// corrupt; intact content scrubs clean.
func TestScrubFindsCorruptContent(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dir := t.TempDir()
	sv, err := svc.Open(ctx, dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer sv.Close()
	root, _ := folder(t, 4)
	rescue(ctx, t, sv, root, true)
	clean, err := sv.ScrubVault(ctx, nil)
	if err != nil || clean.Objects != 4 || len(clean.Corrupt) != 0 {
		t.Fatalf("scrub of intact content: %+v, %v", clean, err)
	}
	changed := 0
	filepath.WalkDir(filepath.Join(dir, "vault"), func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || filepath.Base(filepath.Dir(path)) == "tmp" {
			return nil
		}
		if b, err := os.ReadFile(path); err == nil && len(b) > 0 {
			b[len(b)/2] ^= 0xff
			changed++
			return os.WriteFile(path, b, 0o600)
		}
		return nil
	})
	if changed == 0 {
		t.Fatal("no vault file to change")
	}
	r, err := sv.ScrubVault(ctx, &vault.ScrubOptions{NoRepair: true})
	if err != nil || len(r.Corrupt) == 0 {
		t.Fatalf("scrub of changed content: %+v, %v", r, err)
	}
	if o, err := sv.VaultObject(ctx, r.Corrupt[0]); err != nil || o.State != vault.StateCorrupt {
		t.Fatalf("%s after the scrub: %v, %v", r.Corrupt[0], o.State, err)
	}
}
