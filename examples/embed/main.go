// Command embed vaults a folder with svc embedded in the program: it plans over the folder
// (preserve only: nothing at the source is trashed or moved), authorizes the plan by its hash,
// executes it into a data directory's vault and prints the receipt's verification. Any
// failure exits non-zero.
//
//	go run ./examples/embed [-data DIR] FOLDER
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"

	"svc.dev/svc"
	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/providers"
)

func main() {
	data := flag.String("data", "", "data directory (default: a new temporary one)")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: embed [-data DIR] FOLDER")
		os.Exit(2)
	}
	if err := run(context.Background(), *data, flag.Arg(0)); err != nil {
		fmt.Fprintln(os.Stderr, "embed:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, data, folder string) error {
	if data == "" {
		var err error
		if data, err = os.MkdirTemp("", "svc-embed-"); err != nil {
			return err
		}
	}
	fmt.Println("data directory:", data)
	sv, err := svc.Open(ctx, data, nil)
	if err != nil {
		return err
	}
	defer sv.Close()
	src, err := sv.ConnectSource(ctx, svc.SourceSpec{Provider: providers.VendorDLocal, Config: providers.Config{"root": folder}, Kind: "folder", DisplayName: folder})
	if err != nil {
		return err
	}
	p, err := sv.BuildPlan(ctx, svc.PlanRequest{SourceIDs: []string{src.Id}, Intent: svcv1.PlanIntent_PLAN_INTENT_RESCUE})
	if err != nil {
		return err
	}
	fmt.Printf("plan %s: %d objects to preserve, hash %s\n", p.PlanId, len(p.GetObjects()), p.Hash)
	if p, err = sv.AuthorizePlan(ctx, p.PlanId, p.Hash, nil); err != nil {
		return err
	}
	x, err := sv.Execute(ctx, p.PlanId, nil)
	if err == nil {
		x, err = sv.Wait(ctx, x.Id)
	}
	if err != nil {
		return err
	}
	fmt.Printf("execution %s: %s, %d preserved, %d failed\n", x.Id, x.GetStatus(), x.GetCompleted(), x.GetFailed())
	v, err := sv.VerifyReceipt(ctx, x.GetReceiptId())
	if err != nil {
		return fmt.Errorf("receipt %s: %w", x.GetReceiptId(), err)
	}
	fmt.Printf("receipt %s verified: hash %s signed by %s\n", v.ReceiptID, v.Hash, v.KeyID)
	if x.GetStatus() != svcv1.ExecutionStatus_EXECUTION_STATUS_COMPLETED {
		return errors.New("the execution did not complete")
	}
	return nil
}
