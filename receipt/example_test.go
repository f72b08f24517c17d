package receipt_test

import (
	"errors"
	"fmt"
	"os"
	"time"

	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/receipt"
)

// The execution engine issues a receipt at the end of an execution; anyone holding the served
// bytes and the published key set can verify it.
func Example() {
	dir, _ := os.MkdirTemp("", "svc-data")
	defer os.RemoveAll(dir)
	keys, err := receipt.OpenKeyring(dir) // first start: generates a key in dir
	if err != nil {
		panic(err)
	}

	plan := &svcv1.Plan{
		PlanId: "pln_01JD8Y5Q6R7S8T9V0W1X2Y3Z4C", TenantId: "tnt_1", Intent: svcv1.PlanIntent_PLAN_INTENT_SVC,
		Actor:         &svcv1.Actor{Type: svcv1.ActorType_ACTOR_TYPE_USER, PrincipalId: "usr_1"},
		Policy:        &svcv1.PlanPolicy{PolicyVersion: "policy-1"},
		Authorization: &svcv1.PlanAuthorization{ActionDecisionId: "dec_1", PlanHashAtAuthorization: "5c1c"},
	}
	in := receipt.FromPlan(plan)
	in.ExecutionID = "exe_01JD8Y5Q6R7S8T9V0W1X2Y3Z4B"
	in.StartedAt = time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	in.FinishedAt = in.StartedAt.Add(time.Minute)
	in.Objects = []receipt.Object{{
		AssetID: "ast_01JD8Y5Q6R7S8T9V0W1X2Y3Z4M", ProviderObjectID: "msg-1",
		Actions: []svcv1.PlanAction{svcv1.PlanAction_PLAN_ACTION_PRESERVE, svcv1.PlanAction_PLAN_ACTION_TRASH},
		Status:  receipt.Completed, Preserved: true, Removed: true, Bytes: 4096, Restorable: true,
		VaultObjectID: "vlt_01JD8Y5Q6R7S8T9V0W1X2Y3Z4Q", VaultSHA256: sha1,
	}}
	r, served, err := receipt.Issue(&in, keys) // served: the bytes to store and serve verbatim
	if err != nil {
		panic(err)
	}
	fmt.Println(r.Attempted, r.Completed, r.BytesPreserved, r.BytesRemoved, r.Restoration.Capable)

	// Offline, with the document served at /.well-known/svc-receipts.json:
	v, err := receipt.Verify(served, keys.KeySet())
	fmt.Println(err == nil, v.KeyID == keys.Current())

	// A changed receipt does not verify, and the error says why.
	tampered := []byte(string(served[:len(served)-1]) + `,"note":"x"}`)
	_, err = receipt.Verify(tampered, keys.KeySet())
	fmt.Println(errors.Is(err, receipt.ErrHashMismatch))
	// Output:
	// 1 1 4096 4096 true
	// true true
	// true
}
