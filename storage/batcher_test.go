package storage_test

import (
	"context"
	"path/filepath"
	"testing"

	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/storage"
	"svc.dev/svc/storage/bolt"
)

// A Batcher writes what was added by Flush, and what is pending by Close.
func TestBatcherWritesEverythingAdded(t *testing.T) {
	s, err := bolt.OpenSeam(filepath.Join(t.TempDir(), "svc.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	rec := s.Resources().Audit()
	b := storage.NewBatcher(rec, func(err error) { t.Error(err) })
	for i := range 500 {
		id := "aud_" + string(rune('A'+i%26)) + string(rune('A'+i/26))
		b.Add("app:app_1", id, &svcv1.AuditEntry{Id: id, Action: "x"})
	}
	b.Flush()
	if n, err := rec.Count(context.Background(), "app:app_1", nil); err != nil || n != 500 {
		t.Fatalf("after Flush: %d %v", n, err)
	}
	b.Add("app:app_1", "aud_last", &svcv1.AuditEntry{Id: "aud_last"})
	b.Close()
	if _, err := rec.Get(context.Background(), "app:app_1", "aud_last"); err != nil {
		t.Fatalf("after Close: %v", err)
	}
}
