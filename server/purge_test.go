package server

import (
	"os"
	"path/filepath"
	"svc.dev/svc/platform/export"
	"testing"
	"time"
)

// The sweep of the exports directory removes what a stopped process left (partial archives,
// expired ones) but never the archive an export is still writing (issue 20: exports failed at
// 99% when they ran past a minute boundary).
func TestPurgeExportsKeepsExportsInProgress(t *testing.T) {
	dir := t.TempDir()
	s, err := New(Config{DataDir: dir, ScrubInterval: -1, VerifyEvery: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	exports := filepath.Join(dir, exportsDir)
	if err := os.MkdirAll(exports, 0o700); err != nil {
		t.Fatal(err)
	}
	writing := ".partial-job_01JZ0000000000000000000000-123"
	leftover := ".partial-job_01JZ0000000000000000000001-456"
	old := "job_01JZ0000000000000000000002.tar.gz"
	fresh := "job_01JZ0000000000000000000003.tar.gz"
	for _, n := range []string{writing, leftover, old, fresh} {
		if err := os.WriteFile(filepath.Join(exports, n), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	past := time.Now().Add(-export.Retention - time.Hour)
	os.Chtimes(filepath.Join(exports, old), past, past)
	defer s.exports.Writing(writing)()
	for range 3 { // several sweeps while the export runs
		s.exports.Purge()
	}
	for n, want := range map[string]bool{writing: true, leftover: false, old: false, fresh: true} {
		_, err := os.Stat(filepath.Join(exports, n))
		if got := err == nil; got != want {
			t.Errorf("%s: kept %v, want %v", n, got, want)
		}
	}
}
