package svc_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"svc.dev/svc"
	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/storage"
	"svc.dev/svc/storage/storagetest"
)

// countingStore counts the journal entries read through it, by whole reads and by scans.
type countingStore struct {
	*storagetest.Memory
	scanned, whole atomic.Int64 // entries handed out by ScanAfter; Read and Scan calls
}

func (s *countingStore) Journal() storage.Journal { return countingJournal{s.Memory.Journal(), s} }

type countingJournal struct {
	storage.Journal
	s *countingStore
}

func (j countingJournal) Read(ctx context.Context, tenant, id string) ([][]byte, error) {
	j.s.whole.Add(1)
	return j.Journal.Read(ctx, tenant, id)
}

func (j countingJournal) ScanAfter(ctx context.Context, tenant, id string, after uint64, fn func(uint64, []byte) error) error {
	return j.Journal.ScanAfter(ctx, tenant, id, after, func(p uint64, b []byte) error {
		j.s.scanned.Add(1)
		return fn(p, b)
	})
}

// TestWatchYieldsEachStepOnce: a watch over an execution with many steps yields every
// transition once, in the journal's order, and reads each journal entry once (never the
// whole journal again).
func TestWatchYieldsEachStepOnce(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	st := &countingStore{Memory: storagetest.NewMemory()}
	sv, err := svc.OpenMemory(ctx, &svc.Options{Store: st})
	if err != nil {
		t.Fatal(err)
	}
	defer sv.Close()
	root := t.TempDir()
	const files = 300
	for i := range files {
		if err := os.WriteFile(filepath.Join(root, fmt.Sprintf("f%03d.txt", i)), []byte(fmt.Sprint("file ", i)), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	_, x := rescue(ctx, t, sv, root, false)
	var watched []string
	for tr, err := range sv.Watch(ctx, x.Id) {
		if err != nil {
			t.Fatal(err)
		}
		watched = append(watched, fmt.Sprint(tr.AssetID, tr.From, tr.To))
	}
	if x, err = sv.Execution(ctx, x.Id); err != nil || !svc.Ended(x) {
		t.Fatalf("the watch ended before the execution: %v %v", x.GetStatus(), err)
	}
	scanned, whole := st.scanned.Load(), st.whole.Load()
	steps, err := sv.Steps(ctx, x.Id)
	if err != nil {
		t.Fatal(err)
	}
	if len(steps) < 2*files {
		t.Fatalf("%d steps for %d files", len(steps), files)
	}
	if len(watched) != len(steps) {
		t.Fatalf("watched %d transitions, the journal holds %d", len(watched), len(steps))
	}
	for i, tr := range steps {
		if want := fmt.Sprint(tr.AssetID, tr.From, tr.To); watched[i] != want {
			t.Fatalf("transition %d watched as %s, recorded as %s", i, watched[i], want)
		}
	}
	t.Logf("%d files: %d transitions watched, %d journal entries scanned, %d whole reads", files, len(watched), scanned, whole)
	if whole != 0 || scanned != int64(len(steps)) {
		t.Fatalf("the watch read the whole journal %d times and scanned %d entries, want 0 and %d", whole, scanned, len(steps))
	}
}

// wholePlanRefusing refuses to read a plan whole while refuse is set.
type wholePlanRefusing struct {
	*storagetest.Memory
	refuse atomic.Bool
}

func (s *wholePlanRefusing) Plans() storage.Plans { return refusingPlans{s.Memory.Plans(), s} }

type refusingPlans struct {
	storage.Plans
	s *wholePlanRefusing
}

func (p refusingPlans) Get(ctx context.Context, tenant, id string) (*svcv1.Plan, error) {
	if p.s.refuse.Load() {
		return nil, fmt.Errorf("plan %s read whole", id)
	}
	return p.Plans.Get(ctx, tenant, id)
}

func (p refusingPlans) Fill(ctx context.Context, tenant string, h *svcv1.Plan) error {
	if p.s.refuse.Load() {
		return fmt.Errorf("plan %s read whole", h.GetPlanId())
	}
	return p.Plans.Fill(ctx, tenant, h)
}

// TestUndoStreamsThePlan: undoing a receipt reads the executed plan's objects chunk by chunk,
// never the whole plan at once (a 100,000-object plan would be held whole).
func TestUndoStreamsThePlan(t *testing.T) {
	st := &wholePlanRefusing{Memory: storagetest.NewMemory()}
	undoByReceipt(t, &svc.Options{Store: st}, st.refuse.Store)
}
