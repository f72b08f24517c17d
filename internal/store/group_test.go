package store

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"

	bolt "go.etcd.io/bbolt"
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
			errs[i] = db.batch(func(tx *bolt.Tx) error {
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
	err := db.bolt.View(func(tx *bolt.Tx) error {
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
