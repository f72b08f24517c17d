package main

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	svcv1 "svc.dev/svc/gen/svc/v1"
)

var update = flag.Bool("update", false, "rewrite golden files")

func TestRenderPlanGolden(t *testing.T) {
	at := timestamppb.New(time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC))
	obj := func(id string, size int64, class svcv1.StorageClass, acts ...svcv1.PlanAction) *svcv1.PlanObject {
		reason := map[svcv1.StorageClass]string{svcv1.StorageClass_STORAGE_CLASS_COLD: "unmodified for over a year",
			svcv1.StorageClass_STORAGE_CLASS_PROMOTIONAL: "marketing: List-Unsubscribe without a list to post to, one-click unsubscribe, sent through mailchimp",
			svcv1.StorageClass_STORAGE_CLASS_PRESERVE:    "transactional: the subject is a receipt, order, statement, booking or account notice"}[class]
		return &svcv1.PlanObject{AssetId: id, SourceId: "src_01JD0000000000000000000000", ProviderObjectId: id, ExpectedSizeBytes: size, StorageClass: class, Actions: acts,
			StorageClassReason: reason}
	}
	P, T := svcv1.PlanAction_PLAN_ACTION_PRESERVE, svcv1.PlanAction_PLAN_ACTION_TRASH
	p := &svcv1.Plan{
		PlanId: "pln_01JD0000000000000000000000", Intent: svcv1.PlanIntent_PLAN_INTENT_SVC, State: svcv1.PlanState_PLAN_STATE_VALIDATED,
		ExpiresAt: at, Hash: "ab12", Simulated: false,
		Objects: []*svcv1.PlanObject{
			obj("a", 3<<30, svcv1.StorageClass_STORAGE_CLASS_COLD, P, T),
			obj("b", 1<<20, svcv1.StorageClass_STORAGE_CLASS_PROMOTIONAL, P, T),
			obj("c", 2048, svcv1.StorageClass_STORAGE_CLASS_PRESERVE, P),
		},
		Excluded: []*svcv1.Exclusion{{AssetId: "d", Reason: svcv1.ExclusionReason_EXCLUSION_REASON_SHARED, Detail: "shared items are excluded"}},
		Projection: &svcv1.Projection{ObjectCount: 3, BytesToPreserve: 3<<30 + 1<<20 + 2048, BytesToRemove: 3<<30 + 1<<20, ProjectedReclaimBytes: 3<<30 + 1<<20,
			ProjectedQuota: []*svcv1.ProjectedQuota{{SourceId: "src_01JD0000000000000000000000", UsedBytesAfter: 5 << 30, LimitBytes: proto.Int64(15 << 30), PercentAfter: proto.Float64(33.33)}}},
		SourceMarkers: []*svcv1.SourceMarker{{SourceId: "src_01JD0000000000000000000000", Provider: svcv1.Provider_PROVIDER_VENDOR_A_MAIL, Kind: svcv1.SourceMarkerKind_SOURCE_MARKER_KIND_HISTORY_ID, Value: "981", ObservedAt: at}},
		Meter: &svcv1.PlanMeter{RateCardVersion: "developer-2026-09", EstimatedCents: 60, Lines: []*svcv1.MeterLine{
			{Meter: "plans", Quantity: 1, Unit: "plan", IncludedInAllowance: true},
			{Meter: "executions", Quantity: 1, Unit: "execution", EstimatedCents: 50},
		}, WithinStandingEnvelope: proto.Bool(true)},
		Policy: &svcv1.PlanPolicy{Decision: svcv1.PolicyDecision_POLICY_DECISION_STEP_UP_REQUIRED, RequiredApprovals: []svcv1.Approval{svcv1.Approval_APPROVAL_HUMAN_USER},
			Reasons: []string{"removes 2 objects"}},
	}
	var out bytes.Buffer
	if err := renderPlan(&out, p, labeller{"src_01JD0000000000000000000000": "Mailbox"}); err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "plan_summary.golden")
	if *update {
		os.WriteFile(golden, out.Bytes(), 0o644)
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(out.Bytes(), want) {
		t.Fatalf("summary changed (run with -update if intended):\n%s", out.String())
	}
}
