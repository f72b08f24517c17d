package wire_test

import (
	"bytes"
	"errors"
	"fmt"
	"testing"

	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/wire"
)

// countingWriter records each Write's size.
type countingWriter struct {
	bytes.Buffer
	writes []int
	fail   error
}

func (w *countingWriter) Write(p []byte) (int, error) {
	if w.fail != nil {
		return 0, w.fail
	}
	w.writes = append(w.writes, len(p))
	return w.Buffer.Write(p)
}

func TestWriteIsMarshalInPieces(t *testing.T) {
	p := &svcv1.Plan{PlanId: "pln_01M88MEZTN9JYGE0NCPGFZ5VTP", Hash: "abc"}
	for i := range 3000 {
		p.Objects = append(p.Objects, &svcv1.PlanObject{AssetId: fmt.Sprintf("ast_%026d", i), ProviderObjectId: fmt.Sprintf("INBOX/%d.eml \"quoted\" ü", i),
			Actions: []svcv1.PlanAction{svcv1.PlanAction_PLAN_ACTION_PRESERVE, svcv1.PlanAction_PLAN_ACTION_TRASH}})
	}
	want, err := wire.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	var w countingWriter
	written, err := wire.Write(&w, p)
	if err != nil || !written {
		t.Fatalf("Write: %v, written %v", err, written)
	}
	if !bytes.Equal(w.Bytes(), want) {
		t.Fatal("Write wrote other bytes than Marshal")
	}
	if len(w.writes) < 2 {
		t.Fatalf("%d bytes in %d writes: a large list must be written out as it is encoded", len(want), len(w.writes))
	}
	for _, n := range w.writes {
		if n > 80<<10 {
			t.Fatalf("a write of %d bytes: the buffer must stay near 64 KiB", n)
		}
	}
	// A small message is one write, after it is whole.
	var small countingWriter
	if _, err := wire.Write(&small, &svcv1.Plan{PlanId: "pln_1"}); err != nil || len(small.writes) != 1 {
		t.Fatalf("small message: %v, %d writes", err, len(small.writes))
	}
	// The writer's error comes back.
	boom := errors.New("gone")
	if _, err := wire.Write(&countingWriter{fail: boom}, p); !errors.Is(err, boom) {
		t.Fatalf("writer error: %v", err)
	}
}
