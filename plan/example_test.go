package plan_test

import (
	"context"
	"fmt"
	"time"

	"google.golang.org/protobuf/proto"

	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/plan"
)

// listing is a one-page in-memory listing: what a provider's List gives plan.Build.
type listing []plan.Object

func (l listing) Next(context.Context) (plan.Page, error) {
	return plan.Page{Objects: l, Last: true, Marker: plan.Marker{Kind: "snapshot_hash", Value: "s1"}}, nil
}

// Build a plan over one source, then check its hash the way anyone holding the plan can: the
// hash covers the material fields, and changing one of them changes it.
func Example() {
	now := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	old := now.AddDate(-2, 0, 0)
	src := plan.Source{ID: "src_01JD0000000000000000000000", Provider: svcv1.Provider_PROVIDER_VENDOR_D_LOCAL,
		Status: svcv1.SourceStatus_SOURCE_STATUS_CONNECTED, CanTrash: true, CanWrite: true,
		Objects: listing{
			{ID: "reports/2024.pdf", Kind: "file", Name: "2024.pdf", SizeBytes: 3 << 20, CreatedAt: old, ModifiedAt: old},
			{ID: "notes/today.txt", Kind: "file", Name: "today.txt", SizeBytes: 512, CreatedAt: now, ModifiedAt: now},
		}}
	p, err := plan.Build(context.Background(), plan.Request{
		TenantID: "live:usr_01JD0000000000000000000000", UserID: "usr_01JD0000000000000000000000",
		Actor:  &svcv1.Actor{Type: svcv1.ActorType_ACTOR_TYPE_USER, PrincipalId: "usr_01JD0000000000000000000000"},
		Intent: svcv1.PlanIntent_PLAN_INTENT_SVC, Sources: []plan.Source{src},
		Policy:               &svcv1.SourcePolicy{MinAgeDays: proto.Int64(30)},
		PreservationRequired: true, Now: now,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("state:", p.GetState())
	for _, o := range p.GetObjects() {
		fmt.Println("object:", o.GetProviderObjectId(), o.GetActions())
	}
	for _, x := range p.GetExcluded() {
		fmt.Println("excluded:", x.GetReason())
	}
	fmt.Println("bytes to preserve:", p.GetProjection().GetBytesToPreserve())

	again, _ := plan.Hash(p)
	fmt.Println("hash recomputes:", again == p.GetHash())
	p.GetObjects()[0].Actions = []svcv1.PlanAction{svcv1.PlanAction_PLAN_ACTION_NOOP}
	changed, _ := plan.Hash(p)
	fmt.Println("hash after a change:", changed == p.GetHash())
	// Output:
	// state: PLAN_STATE_VALIDATED
	// object: notes/today.txt [PLAN_ACTION_PRESERVE]
	// object: reports/2024.pdf [PLAN_ACTION_PRESERVE PLAN_ACTION_TRASH]
	// bytes to preserve: 3146240
	// hash recomputes: true
	// hash after a change: false
}
