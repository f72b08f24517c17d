package gdrive_test

import (
	"context"
	"errors"
	"io"
	"slices"
	"testing"
	"time"

	"svc.dev/svc/internal/vendorfake"
	fake "svc.dev/svc/internal/vendorfake/drive"
	"svc.dev/svc/providers"
	"svc.dev/svc/providers/providertest"
)

// TestFaults: 429 with Retry-After, 403 userRateLimitExceeded, 5xx and a
// dropped connection are ridden out; a file that keeps failing fails alone;
// a slow answer past the caller's deadline ends the call.
func TestFaults(t *testing.T) {
	ctx := context.Background()
	s := fake.New(t, fake.Options{Files: 30})
	p := open(t, s)
	s.Inject(nil,
		vendorfake.Fault{Status: 429, RetryAfter: "1"},
		vendorfake.Fault{Status: 403, Reason: "userRateLimitExceeded"},
		vendorfake.Fault{Status: 502},
		vendorfake.Fault{Drop: true},
	)
	start := time.Now()
	objs, _ := providertest.ListAll(ctx, t, p, "root", 10)
	if len(objs) != 32 { // 30 files and the two Docs editors files, exported
		t.Fatalf("listed %d of 32", len(objs))
	}
	if time.Since(start) < time.Second {
		t.Errorf("the Retry-After of 1 s was not honoured")
	}
	var statuses []int
	for _, r := range s.Log() {
		statuses = append(statuses, r.Status)
	}
	for _, st := range []int{429, 403, 502, 0} {
		if !slices.Contains(statuses, st) {
			t.Errorf("fault %d never served: %v", st, statuses)
		}
	}

	// One file keeps failing: its fetch fails, retryably, the others do not.
	s.FailFile(objs[0].ID, 503)
	cctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	if _, err := p.Fetch(cctx, providers.FetchRequest{SourceRef: "root", ObjectID: objs[0].ID}); !providers.IsRetryable(err) {
		t.Errorf("fetch of a failing file: %v, want a retryable error", err)
	}
	c, err := p.Fetch(ctx, providers.FetchRequest{SourceRef: "root", ObjectID: objs[1].ID, ExpectedVersion: objs[1].Version})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(io.Discard, c.Body); err != nil {
		t.Error(err)
	}
	c.Body.Close()

	// A slow answer: the call ends at the caller's deadline.
	s.Slow(2 * time.Second)
	sctx, cancel2 := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel2()
	start = time.Now()
	_, err = p.List(sctx, providers.ListRequest{SourceRef: "root"})
	if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > time.Second {
		t.Errorf("slow answer: %v after %v, want the deadline", err, time.Since(start))
	}
	s.Slow(0)
}
