package postgres_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"svc.dev/svc/internal/pgtest"
	"svc.dev/svc/platform"
	"svc.dev/svc/storage"
	"svc.dev/svc/storage/postgres"
)

// A shared secret changes only over the version its writer read.
func TestSecretsVersioned(t *testing.T) {
	ctx := context.Background()
	s := open(t)
	if _, _, err := s.Secret(ctx, "receipt-keys"); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("missing secret: %v", err)
	}
	v, err := s.PutSecret(ctx, "receipt-keys", []byte("one"), 0)
	if err != nil || v != 1 {
		t.Fatalf("create: %d, %v", v, err)
	}
	if _, err := s.PutSecret(ctx, "receipt-keys", []byte("again"), 0); !errors.Is(err, storage.ErrVersionChanged) {
		t.Fatalf("second create: %v", err)
	}
	if v, err = s.PutSecret(ctx, "receipt-keys", []byte("two"), 1); err != nil || v != 2 {
		t.Fatalf("update: %d, %v", v, err)
	}
	if _, err := s.PutSecret(ctx, "receipt-keys", []byte("stale"), 1); !errors.Is(err, storage.ErrVersionChanged) {
		t.Fatalf("stale update: %v", err)
	}
	got, v, err := s.Secret(ctx, "receipt-keys")
	if err != nil || string(got) != "two" || v != 2 {
		t.Fatalf("read: %q %d %v", got, v, err)
	}
}

// Two replicas (two stores on one database, each with its meter) meter concurrently and flush
// concurrently: every increment is counted once, and an increment logged by one is counted by
// the other's flush when the first stops without flushing.
func TestUsageMeteredOnceAcrossReplicas(t *testing.T) {
	ctx := context.Background()
	dsn := pgtest.Database(t)
	var stores []*postgres.Store
	var meters []*platform.Meter
	for range 2 {
		s, err := postgres.Open(ctx, dsn)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		m, err := platform.OpenMeter(filepath.Join(t.TempDir(), "usage.log"), s.Usage(), platform.NewDevelopers(s, nil), platform.MeterOptions{})
		if err != nil {
			t.Fatal(err)
		}
		stores, meters = append(stores, s), append(meters, m)
	}
	const perReplica = 300
	var wg sync.WaitGroup
	for i, m := range meters {
		for w := range 3 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range perReplica / 3 {
					m.Add("org_1", "app_1", platform.MeterAPIOperations, 1)
				}
				if w == 0 && i == 0 {
					m.Flush()
				}
			}()
		}
		wg.Add(1)
		go func() { defer wg.Done(); m.Flush() }()
	}
	wg.Wait()
	meters[1].Close()
	// Replica 0 flushes what replica 1 logged (and its own).
	meters[0].Flush()
	month := platform.Month(time.Now())
	for _, scope := range []string{"org:org_1", "app:app_1"} {
		c, err := stores[0].Usage().Counters(ctx, scope, month)
		if err != nil || c[platform.MeterAPIOperations] != 2*perReplica {
			t.Fatalf("%s: %v (%v), want %d", scope, c[platform.MeterAPIOperations], err, 2*perReplica)
		}
	}
	meters[0].Close()
}

// A usage log file that a process on the database wrote before the log moved into it is
// added once, from the stored offset, and removed.
func TestUsageLogFileDrainedIntoDatabase(t *testing.T) {
	ctx := context.Background()
	s := open(t)
	month := platform.Month(time.Now())
	path := filepath.Join(t.TempDir(), "usage.log")
	lines := "org:org_1\t" + month + "\tapi_operations\t1\n"
	// Two lines were already added (offset at the end of the second); three are not.
	if err := os.WriteFile(path, []byte(lines+lines+lines+lines+lines), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := s.Usage().AddFromLog(ctx, []platform.UsageDelta{{Scope: "org:org_1", Month: month, Meter: "api_operations", Quantity: 2}}, int64(2*len(lines))); err != nil {
		t.Fatal(err)
	}
	m, err := platform.OpenMeter(path, s.Usage(), platform.NewDevelopers(s, nil), platform.MeterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	m.Close()
	c, err := s.Usage().Counters(ctx, "org:org_1", month)
	if err != nil || c["api_operations"] != 5 {
		t.Fatalf("counted %v (%v), want 5", c["api_operations"], err)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("the file is still there: %v", err)
	}
}

// BenchmarkMeterAdd is the cost of metering one API operation on PostgreSQL (an insert into
// usage_log before the call is answered), 8 callers at once.
func BenchmarkMeterAdd(b *testing.B) {
	s := open(b)
	m, err := platform.OpenMeter(filepath.Join(b.TempDir(), "usage.log"), s.Usage(), platform.NewDevelopers(s, nil), platform.MeterOptions{})
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close()
	b.SetParallelism(8)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			m.Add("org_1", "app_1", platform.MeterAPIOperations, 1)
		}
	})
}
