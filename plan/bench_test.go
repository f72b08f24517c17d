package plan_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"strconv"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/internal/corpus"
	"svc.dev/svc/plan"
	"svc.dev/svc/plan/discover"
	"svc.dev/svc/providers"
	"svc.dev/svc/providers/local"
	"svc.dev/svc/providers/simulated"
)

// benchObjects is the size of the benchmark source: 1,000,000 by default, PLAN_BENCH_OBJECTS
// to change it.
func benchObjects() int {
	if n, err := strconv.Atoi(os.Getenv("PLAN_BENCH_OBJECTS")); err == nil && n > 0 {
		return n
	}
	return 1_000_000
}

func simulatedSource(b *testing.B) providers.Provider {
	p, err := simulated.New(context.Background(), providers.Config{"seed": "7", "objects": strconv.Itoa(benchObjects())})
	if err != nil {
		b.Fatal(err)
	}
	return p
}

func benchRequest(p providers.Provider) plan.Request {
	return plan.Request{TenantID: "live:usr_01JD0000000000000000000000", UserID: "usr_01JD0000000000000000000000",
		Actor:  &svcv1.Actor{Type: svcv1.ActorType_ACTOR_TYPE_USER, PrincipalId: "usr_01JD0000000000000000000000"},
		Intent: svcv1.PlanIntent_PLAN_INTENT_SVC, PreservationRequired: true, Now: time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC),
		Policy: &svcv1.SourcePolicy{MinAgeDays: i64(30)},
		Sources: []plan.Source{{ID: "src_01JD0000000000000000000000", Provider: svcv1.Provider_PROVIDER_SIMULATED,
			Status: svcv1.SourceStatus_SOURCE_STATUS_CONNECTED, CanTrash: true, Objects: discover.Objects(p, "mail")}},
		Billing: &plan.Billing{CeilingCents: 10000, CanBill: true}}
}

// BenchmarkList1M merely lists the source in process: the baseline of BenchmarkBuild1M.
func BenchmarkList1M(b *testing.B) {
	p := simulatedSource(b)
	for b.Loop() {
		l := discover.Objects(p, "mail")
		n := 0
		for {
			pg, err := l.Next(context.Background())
			if err != nil {
				b.Fatal(err)
			}
			n += len(pg.Objects)
			if pg.Last {
				break
			}
		}
		if n != benchObjects() {
			b.Fatalf("listed %d", n)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(benchObjects()), "ns/object")
}

// BenchmarkBuild1M lists, classifies, projects, estimates, decides and hashes.
func BenchmarkBuild1M(b *testing.B) {
	p := simulatedSource(b)
	stop := samplePeakHeap()
	for b.Loop() {
		pl, err := plan.Build(context.Background(), benchRequest(p))
		if err != nil {
			b.Fatal(err)
		}
		runtime.KeepAlive(pl)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(benchObjects()), "ns/object")
	b.ReportMetric(float64(stop())/(1<<20), "peak-heap-MiB")
}

func builtPlan(b *testing.B) (*svcv1.Plan, []byte) {
	pl, err := plan.Build(context.Background(), benchRequest(simulatedSource(b)))
	if err != nil {
		b.Fatal(err)
	}
	var canon bytes.Buffer
	if err := plan.WriteMaterial(&canon, pl); err != nil {
		b.Fatal(err)
	}
	return pl, canon.Bytes()
}

// BenchmarkHash1M hashes the built plan (canonical JSON straight into SHA-256)...
func BenchmarkHash1M(b *testing.B) {
	pl, canon := builtPlan(b)
	b.SetBytes(int64(len(canon)))
	for b.Loop() {
		if _, err := plan.Hash(pl); err != nil {
			b.Fatal(err)
		}
	}
}

// ...and BenchmarkRawSHA256OfCanonical1M hashes the same canonical bytes already in memory.
func BenchmarkRawSHA256OfCanonical1M(b *testing.B) {
	_, canon := builtPlan(b)
	b.SetBytes(int64(len(canon)))
	for b.Loop() {
		sha256.Sum256(canon)
	}
}

// samplePeakHeap samples the live heap until the returned function is called, which returns
// the largest value seen.
func samplePeakHeap() func() uint64 {
	done := make(chan uint64)
	quit := make(chan struct{})
	go func() {
		s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
		var peak uint64
		t := time.NewTicker(10 * time.Millisecond)
		defer t.Stop()
		for {
			metrics.Read(s)
			peak = max(peak, s[0].Value.Uint64())
			select {
			case <-quit:
				done <- peak
				return
			case <-t.C:
			}
		}
	}()
	return func() uint64 { close(quit); return <-done }
}

// benchMailbox is the size of BenchmarkPlanMailbox's Maildir: 6,000 messages by default,
// PLAN_BENCH_MAILBOX to change it.
func benchMailbox() int {
	if n, err := strconv.Atoi(os.Getenv("PLAN_BENCH_MAILBOX")); err == nil && n > 0 {
		return n
	}
	return 6000
}

// BenchmarkPlanMailbox lists a Maildir mailbox (the labelled corpus: inbox, sent and junk, read
// by the mail reader as vendor_d_local lists it) and plans it with the correspondents graph and
// the junk rules, both in each iteration, and reports the two times and their ratio
// (plan/list, which includes the plan's own listing; the target is <= 1.5) and the peak heap.
//
//	go test ./plan -run '^$' -bench PlanMailbox -benchtime 5x
func BenchmarkPlanMailbox(b *testing.B) {
	n := benchMailbox()
	dir := b.TempDir()
	epoch := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	if _, err := corpus.WriteMaildir(filepath.Join(dir, "mail"), corpus.Generate(11, n, epoch)); err != nil {
		b.Fatal(err)
	}
	p, err := local.New(context.Background(), providers.Config{"root": filepath.Join(dir, "mail"), "trash_dir": filepath.Join(dir, "trash")})
	if err != nil {
		b.Fatal(err)
	}
	req := func() plan.Request {
		return plan.Request{TenantID: "test:usr_01JD0000000000000000000000", UserID: "usr_01JD0000000000000000000000",
			Actor:  &svcv1.Actor{Type: svcv1.ActorType_ACTOR_TYPE_USER, PrincipalId: "usr_01JD0000000000000000000000"},
			Intent: svcv1.PlanIntent_PLAN_INTENT_SVC, PreservationRequired: true, Now: epoch,
			Policy: &svcv1.SourcePolicy{RemovePromotional: proto.Bool(true)},
			Sources: []plan.Source{{ID: "src_01JD0000000000000000000000", Provider: svcv1.Provider_PROVIDER_VENDOR_D_LOCAL,
				Status: svcv1.SourceStatus_SOURCE_STATUS_CONNECTED, CanTrash: true, Objects: discover.Objects(p, "")}}}
	}
	var list, build time.Duration
	stop := samplePeakHeap()
	for b.Loop() {
		start := time.Now()
		l := discover.Objects(p, "")
		for {
			pg, err := l.Next(context.Background())
			if err != nil {
				b.Fatal(err)
			}
			if pg.Last {
				break
			}
		}
		list += time.Since(start)
		start = time.Now()
		pl, err := plan.Build(context.Background(), req())
		if err != nil {
			b.Fatal(err)
		}
		build += time.Since(start)
		if len(pl.Objects) != n {
			b.Fatalf("planned %d of %d", len(pl.Objects), n)
		}
	}
	b.ReportMetric(float64(list.Milliseconds())/float64(b.N), "list-ms")
	b.ReportMetric(float64(build.Milliseconds())/float64(b.N), "plan-ms")
	b.ReportMetric(build.Seconds()/list.Seconds(), "plan/list")
	b.ReportMetric(float64(stop())/(1<<20), "peak-heap-MiB")
}
