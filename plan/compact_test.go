package plan

import (
	"fmt"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	svcv1 "svc.dev/svc/gen/svc/v1"
)

// TestCompactKeepsEveryField fills every field of PlanObject (found by reflection, so a field
// added later is covered) and checks that compaction keeps the values and the order.
func TestCompactKeepsEveryField(t *testing.T) {
	n := 3*compactChunk + 17
	objs := make([]*svcv1.PlanObject, n)
	want := make([]*svcv1.PlanObject, n)
	for i := range objs {
		o := &svcv1.PlanObject{
			AssetId:             fmt.Sprintf("ast_%026d", i),
			SourceId:            fmt.Sprintf("src_%d", i%3),
			Provider:            svcv1.Provider(1 + i%2),
			ProviderObjectId:    fmt.Sprintf("obj/%d/é", i),
			ExpectedSizeBytes:   int64(i * 7),
			StorageClass:        svcv1.StorageClass(1 + i%5),
			Actions:             []svcv1.PlanAction{svcv1.PlanAction(1 + i%3), svcv1.PlanAction(2)}[:1+i%2],
			PreservationElected: i%2 == 1,
			StorageClassReason:  fmt.Sprint("reason ", i%3),
		}
		if i%3 != 0 {
			o.ExpectedVersion = proto.String(fmt.Sprintf("v%d", i))
		}
		if i%4 != 0 {
			o.ExpectedSha256 = proto.String(fmt.Sprintf("%064x", i))
		}
		objs[i], want[i] = o, proto.CloneOf(o)
	}
	fields := objs[1].ProtoReflect().Descriptor().Fields()
	set := 0
	objs[1].ProtoReflect().Range(func(protoreflect.FieldDescriptor, protoreflect.Value) bool { set++; return true })
	if set != fields.Len() {
		t.Fatalf("the test object sets %d of PlanObject's %d fields: set the new ones", set, fields.Len())
	}
	compact(objs)
	for i := range objs {
		if objs[i] == want[i] {
			t.Fatal("not re-allocated")
		}
		if !proto.Equal(want[i], objs[i]) {
			t.Fatalf("object %d changed:\nwant %v\ngot  %v", i, want[i], objs[i])
		}
	}
	// Appending to one object's actions must not overwrite its neighbour's.
	objs[0].Actions = append(objs[0].Actions, svcv1.PlanAction(3))
	if !proto.Equal(want[1], objs[1]) {
		t.Fatalf("neighbour changed: %v", objs[1])
	}
}
