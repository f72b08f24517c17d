package store

import (
	"context"
	"testing"

	"google.golang.org/protobuf/proto"

	svcv1 "svc.dev/svc/gen/svc/v1"
)

// GetFields returns exactly the fields asked for, as Get would, and nothing else.
func TestGetFields(t *testing.T) {
	db := openDB(t)
	plans := NewCollection(db, "plans", func() *svcv1.Plan { return &svcv1.Plan{} })
	p := &svcv1.Plan{PlanId: "pln_1", Hash: "h",
		SourceMarkers: []*svcv1.SourceMarker{{SourceId: "src_1"}, {SourceId: "src_2"}},
		Objects:       []*svcv1.PlanObject{{AssetId: "ast_1"}, {AssetId: "ast_2"}}}
	ctx := context.Background()
	if err := plans.Put(ctx, "t", "pln_1", p); err != nil {
		t.Fatal(err)
	}
	got, err := plans.GetFields(ctx, "t", "pln_1", 11) // source_markers
	if err != nil {
		t.Fatal(err)
	}
	want := &svcv1.Plan{SourceMarkers: p.SourceMarkers}
	if !proto.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	if _, err := plans.GetFields(ctx, "u", "pln_1", 11); err != ErrNotFound {
		t.Fatalf("another tenant's plan: %v", err)
	}
}
