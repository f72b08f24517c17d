package execute_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"svc.dev/svc/execute"
)

// fatal reports a failed setup step of an example.
type fatal struct{}

func (fatal) Fatal(v ...any) { log.Fatal(v...) }

// Run an authorized plan: the engine vaults and verifies every asset before it trashes the
// source copy, journals each step (so a crash resumes where it stopped), and asks the
// Finisher for the receipt once. The engine reaches storage, providers, the vault and receipts
// only through the four interfaces it declares; here they are the in-memory fakes of this
// package's tests (fakes_test.go), a source of three objects and an authorized plan over it.
func Example() {
	r := newRig(fatal{}, 3)
	engine := execute.New(r.store, fakeSources{src: r.src}, r.vault, r.finish,
		execute.Options{Concurrency: 2, Backoff: time.Millisecond})

	x, err := engine.Start(context.Background(), "t", r.plan.GetPlanId(), "usr_1")
	if err != nil {
		fmt.Println(err)
		return
	}
	engine.Wait() // or watch the execution's steps as they are journaled

	x = r.store.executions[x.GetId()]
	fmt.Println("status:", x.GetStatus())
	fmt.Println("completed:", x.GetCompleted(), "of", x.GetAttempted())
	fmt.Println("trashed at the source:", len(r.src.trash), "each after its vault copy was verified:", r.vault.has(r.shas["obj-000"]))
	fmt.Println("receipts made:", r.finish.calls)
	fmt.Println("plan:", r.store.plans[r.plan.GetPlanId()].GetState())

	// A plan runs once.
	_, err = engine.Start(context.Background(), "t", r.plan.GetPlanId(), "usr_1")
	fmt.Println("second start refused:", err != nil)
	// Output:
	// status: EXECUTION_STATUS_COMPLETED
	// completed: 3 of 3
	// trashed at the source: 3 each after its vault copy was verified: true
	// receipts made: 1
	// plan: PLAN_STATE_EXECUTED
	// second start refused: true
}
