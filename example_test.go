package svc_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"time"

	"svc.dev/svc"
	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/manifest"
	"svc.dev/svc/providers"
)

// exampleFolder is a folder with two files to vault.
func exampleFolder() string {
	dir, err := os.MkdirTemp("", "svc-example-")
	if err != nil {
		log.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("call the bank\n"), 0o600)
	os.WriteFile(filepath.Join(dir, "todo.txt"), []byte("renew the passport\n"), 0o600)
	return dir
}

// The whole loop in a program: connect a folder, plan (rescue: preserve everything, remove
// nothing), authorize the plan by the hash that was reviewed, execute it, and verify the
// signed receipt.
func Example() {
	ctx := context.Background()
	folder := exampleFolder()
	defer os.RemoveAll(folder)

	sv, err := svc.OpenMemory(ctx, nil) // svc.Open(ctx, dir, nil) keeps it in a data directory
	if err != nil {
		log.Fatal(err)
	}
	defer sv.Close()
	src, err := sv.ConnectSource(ctx, svc.SourceSpec{Provider: providers.VendorDLocal, Config: providers.Config{"root": folder}, Kind: "folder"})
	if err != nil {
		log.Fatal(err)
	}
	p, err := sv.BuildPlan(ctx, svc.PlanRequest{SourceIDs: []string{src.Id}, Intent: svcv1.PlanIntent_PLAN_INTENT_RESCUE})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("planned:", len(p.GetObjects()), "objects")
	if p, err = sv.AuthorizePlan(ctx, p.PlanId, p.Hash, nil); err != nil {
		log.Fatal(err)
	}
	x, err := sv.Execute(ctx, p.PlanId, nil)
	if err != nil {
		log.Fatal(err)
	}
	if x, err = sv.Wait(ctx, x.Id); err != nil {
		log.Fatal(err)
	}
	fmt.Println("execution:", x.GetStatus() == svcv1.ExecutionStatus_EXECUTION_STATUS_COMPLETED)
	v, err := sv.VerifyReceipt(ctx, x.GetReceiptId())
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("receipt verified for the execution:", v.ExecutionID == x.Id)
	// Output:
	// planned: 2 objects
	// execution: true
	// receipt verified for the execution: true
}

// Watching an execution's steps as they are recorded: each asset goes through fetching,
// vault writing and verification before anything else may happen to it.
func ExampleScope_Watch() {
	ctx := context.Background()
	folder := exampleFolder()
	defer os.RemoveAll(folder)
	sv, err := svc.OpenMemory(ctx, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer sv.Close()
	src, _ := sv.ConnectSource(ctx, svc.SourceSpec{Provider: providers.VendorDLocal, Config: providers.Config{"root": folder}, Kind: "folder"})
	p, _ := sv.BuildPlan(ctx, svc.PlanRequest{SourceIDs: []string{src.Id}, Intent: svcv1.PlanIntent_PLAN_INTENT_RESCUE})
	p, _ = sv.AuthorizePlan(ctx, p.PlanId, p.Hash, nil)
	x, err := sv.Execute(ctx, p.PlanId, nil)
	if err != nil {
		log.Fatal(err)
	}
	committed := 0
	for step, err := range sv.Watch(ctx, x.Id) {
		if err != nil {
			log.Fatal(err)
		}
		if step.To == svcv1.StepState_STEP_STATE_VAULT_COMMITTED {
			committed++
		}
	}
	fmt.Println("vault commits:", committed)
	// Output:
	// vault commits: 2
}

// A plan is authorized only by the hash of what was reviewed: any other hash is refused as
// stale, and the plan stays as it was.
func ExampleScope_AuthorizePlan() {
	ctx := context.Background()
	folder := exampleFolder()
	defer os.RemoveAll(folder)
	sv, err := svc.OpenMemory(ctx, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer sv.Close()
	src, _ := sv.ConnectSource(ctx, svc.SourceSpec{Provider: providers.VendorDLocal, Config: providers.Config{"root": folder}, Kind: "folder"})
	p, _ := sv.BuildPlan(ctx, svc.PlanRequest{SourceIDs: []string{src.Id}, Intent: svcv1.PlanIntent_PLAN_INTENT_RESCUE})
	_, err = sv.AuthorizePlan(ctx, p.PlanId, "a hash nobody reviewed", nil)
	fmt.Println("stale:", errors.Is(err, svc.ErrPlanStale))
	p, _ = sv.Plan(ctx, p.PlanId)
	fmt.Println("state:", p.GetState())
	// Output:
	// stale: true
	// state: PLAN_STATE_VALIDATED
}

// Another tenant's records are not found through a scope: the hosted server gives each
// request the scope of its tenant.
func ExampleInstance_Tenant() {
	ctx := context.Background()
	folder := exampleFolder()
	defer os.RemoveAll(folder)
	sv, err := svc.OpenMemory(ctx, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer sv.Close()
	ana := sv.Tenant(svc.Tenant{Owner: "usr_ana", Mode: svc.ModeLive})
	src, _ := ana.ConnectSource(ctx, svc.SourceSpec{Provider: providers.VendorDLocal, Config: providers.Config{"root": folder}, Kind: "folder"})
	_, err = sv.Source(ctx, src.Id) // the Instance's own tenant
	fmt.Println("not found:", errors.Is(err, svc.ErrNotFound))
	// Output:
	// not found: true
}

// An execution that trashed files is undone from its receipt: the restore plan brings every
// file back from its verified vault copy, and is authorized and executed like any other.
func ExampleScope_UndoReceipt() {
	ctx := context.Background()
	folder := exampleFolder()
	defer os.RemoveAll(folder)
	old := time.Now().AddDate(-1, 0, 0)
	for _, f := range []string{"notes.txt", "todo.txt"} {
		os.Chtimes(filepath.Join(folder, f), old, old)
	}
	sv, err := svc.OpenMemory(ctx, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer sv.Close()
	run := func(p *svcv1.Plan, err error) *svcv1.Execution {
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
		if err != nil {
			log.Fatal(err)
		}
		return x
	}
	src, _ := sv.ConnectSource(ctx, svc.SourceSpec{Provider: providers.VendorDLocal, Config: providers.Config{"root": folder}, Kind: "folder"})
	days := int64(30)
	x := run(sv.BuildPlan(ctx, svc.PlanRequest{SourceIDs: []string{src.Id}, Intent: svcv1.PlanIntent_PLAN_INTENT_SVC,
		Policy: &svcv1.SourcePolicy{MinAgeDays: &days}})) // clean up what is older than 30 days
	_, err = os.Stat(filepath.Join(folder, "notes.txt"))
	fmt.Println("after the clean-up, notes.txt is there:", err == nil)
	run(sv.UndoReceipt(ctx, x.GetReceiptId(), nil))
	b, _ := os.ReadFile(filepath.Join(folder, "notes.txt"))
	fmt.Printf("after the undo: %q\n", b)
	// Output:
	// after the clean-up, notes.txt is there: false
	// after the undo: "call the bank\n"
}

// The manifests of everything preserved, as one bundle anyone can check offline.
func ExampleScope_ExportManifests() {
	ctx := context.Background()
	folder := exampleFolder()
	defer os.RemoveAll(folder)
	sv, err := svc.OpenMemory(ctx, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer sv.Close()
	src, _ := sv.ConnectSource(ctx, svc.SourceSpec{Provider: providers.VendorDLocal, Config: providers.Config{"root": folder}, Kind: "folder"})
	p, _ := sv.BuildPlan(ctx, svc.PlanRequest{SourceIDs: []string{src.Id}, Intent: svcv1.PlanIntent_PLAN_INTENT_RESCUE})
	p, _ = sv.AuthorizePlan(ctx, p.PlanId, p.Hash, nil)
	x, _ := sv.Execute(ctx, p.PlanId, nil)
	if _, err := sv.Wait(ctx, x.Id); err != nil {
		log.Fatal(err)
	}
	var bundle bytes.Buffer
	if _, err := sv.ExportManifests(ctx, &bundle, nil); err != nil {
		log.Fatal(err)
	}
	fmt.Println("bundle verifies:", manifest.VerifyBundle(bundle.Bytes()) == nil)
	// Output:
	// bundle verifies: true
}

// Search what the vault holds, by words in the content or by field: a search right after an
// execution finds what it vaulted (it waits for the index to follow the vault).
func ExampleScope_SearchVault() {
	ctx := context.Background()
	folder := exampleFolder()
	defer os.RemoveAll(folder)
	sv, err := svc.OpenMemory(ctx, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer sv.Close()
	src, err := sv.ConnectSource(ctx, svc.SourceSpec{Provider: providers.VendorDLocal, Config: providers.Config{"root": folder}, Kind: "folder"})
	if err != nil {
		log.Fatal(err)
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
		_, err = sv.Wait(ctx, x.Id)
	}
	if err != nil {
		log.Fatal(err)
	}
	for _, q := range []string{"passport", "name:notes.txt", "bank -passport"} {
		res, err := sv.SearchVault(ctx, svc.SearchQuery{Q: q})
		if err != nil {
			log.Fatal(err)
		}
		for _, h := range res.Hits {
			fmt.Printf("%s: %s %v\n", q, h.Object.Name, h.Matched)
		}
	}
	// Output:
	// passport: todo.txt [body]
	// name:notes.txt: notes.txt [name]
	// bank -passport: notes.txt [body]
}
