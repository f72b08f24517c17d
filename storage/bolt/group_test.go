package bolt

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"

	bbolt "go.etcd.io/bbolt"

	svcv1 "svc.dev/svc/gen/svc/v1"
)

func openDB(t *testing.T) *DB {
	t.Helper()
	db, err := Open(filepath.Join(t.TempDir(), "svc.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// Concurrent appends to many streams are group-committed: every value lands once, each
// stream in the order it was appended, all of them durable when their call returns.
func TestAppendLogsGroupCommit(t *testing.T) {
	db := openDB(t)
	ctx := context.Background()
	const streams, calls, per = 16, 40, 3
	var wg sync.WaitGroup
	for s := range streams {
		wg.Go(func() {
			for c := range calls {
				vals := make([][]byte, per)
				for i := range vals {
					vals[i] = fmt.Appendf(nil, "%d", c*per+i)
				}
				if err := db.AppendLogs(ctx, "journal", fmt.Sprint("s", s), vals); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	for s := range streams {
		got, err := db.ReadLog(ctx, "journal", fmt.Sprint("s", s))
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != calls*per {
			t.Fatalf("stream %d: %d values, want %d", s, len(got), calls*per)
		}
		for i, v := range got {
			if string(v) != fmt.Sprint(i) {
				t.Fatalf("stream %d: value %d is %q", s, i, v)
			}
		}
	}
}

// A function that fails in a group does not take the others down: they are committed, and it
// gets its own error with nothing of it written.
func TestBatchFailureIsolated(t *testing.T) {
	db := openDB(t)
	boom := errors.New("boom")
	var wg sync.WaitGroup
	errs := make([]error, 20)
	for i := range errs {
		wg.Go(func() {
			errs[i] = db.batch(func(tx *bbolt.Tx) error {
				b, err := tx.CreateBucketIfNotExists([]byte("t"))
				if err != nil {
					return err
				}
				if err := b.Put(fmt.Append(nil, i), []byte("v")); err != nil {
					return err
				}
				if i%5 == 0 {
					return boom
				}
				return nil
			})
		})
	}
	wg.Wait()
	err := db.bolt.View(func(tx *bbolt.Tx) error {
		b := tx.Bucket([]byte("t"))
		for i, e := range errs {
			stored := b != nil && b.Get(fmt.Append(nil, i)) != nil
			switch {
			case i%5 == 0 && !errors.Is(e, boom):
				t.Errorf("call %d: error %v, want boom", i, e)
			case i%5 == 0 && stored:
				t.Errorf("call %d failed but its write is stored", i)
			case i%5 != 0 && (e != nil || !stored):
				t.Errorf("call %d: error %v, stored %v", i, e, stored)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// UpsertBatched makes the new value before its transaction; when another writer changes the
// resource in between, the transaction applies fn again to what is stored then, so that no
// concurrent change is lost. Many concurrent upserts of one resource all count.
func TestUpsertBatchedChangedMeanwhile(t *testing.T) {
	db := openDB(t)
	ctx := context.Background()
	exes := NewCollection(db, "executions", func() *svcv1.Execution { return &svcv1.Execution{} })
	create := func() (*svcv1.Execution, error) { return &svcv1.Execution{Id: "job_1"}, nil }
	// fn appends to the job's errors; the first run (before the transaction) lets another
	// writer change the job first.
	runs := 0
	err := exes.UpsertBatched(ctx, "t", "job_1", create, func(j *svcv1.Execution) error {
		runs++
		if runs == 1 {
			if err := exes.Put(ctx, "t", "job_1", &svcv1.Execution{Id: "job_1", Errors: []string{"other writer"}}); err != nil {
				return err
			}
		}
		j.Errors = append(j.Errors, "upsert")
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	got, err := exes.Get(ctx, "t", "job_1")
	if err != nil {
		t.Fatal(err)
	}
	if runs != 2 || fmt.Sprint(got.GetErrors()) != "[other writer upsert]" {
		t.Fatalf("runs %d, stored %v: the other writer's change must be kept", runs, got.GetErrors())
	}

	var wg sync.WaitGroup
	for range 50 {
		wg.Go(func() {
			if err := exes.UpsertBatched(ctx, "t", "job_2", func() (*svcv1.Execution, error) { return &svcv1.Execution{Id: "job_2"}, nil },
				func(j *svcv1.Execution) error { j.Errors = append(j.Errors, "x"); return nil }); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if got, err := exes.Get(ctx, "t", "job_2"); err != nil || len(got.GetErrors()) != 50 {
		t.Fatalf("50 concurrent upserts stored %d: %v", len(got.GetErrors()), err)
	}
	// A failing fn stores nothing.
	boom := errors.New("boom")
	if err := exes.UpsertBatched(ctx, "t", "job_3", create, func(*svcv1.Execution) error { return boom }); !errors.Is(err, boom) {
		t.Fatalf("err = %v", err)
	}
	if _, err := exes.Get(ctx, "t", "job_3"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("job_3 stored after a failed fn: %v", err)
	}
}
