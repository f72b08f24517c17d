package server

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"svc.dev/svc/platform"
)

func TestParseUsageLog(t *testing.T) {
	complete := "org:o\t2026-11\tapi_operations\t1\napp:a\t2026-11\tapi_operations\t1\norg:o\t2026-11\tapi_operations\t2\nbad line\n"
	deltas, used := platform.ParseUsageLog([]byte(complete + "org:o\t2026-11\tplans\t1")) // the last line is not complete
	if used != len(complete) || len(deltas) != 2 || deltas[0].Quantity != 3 || deltas[1].Scope != "app:a" {
		t.Fatalf("used %d, deltas %+v", used, deltas)
	}
}

// The usage log: counts logged by a process that died are added once at the next start, and a
// large log that was all added starts again, without losing or repeating a count.
func TestUsageLogAcrossRestartsAndRotation(t *testing.T) {
	dir := t.TempDir()
	now := func() time.Time { return time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC) }
	open := func() *Server {
		s, err := New(Config{DataDir: dir, Now: now, ScrubInterval: -1})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	count := func(s *Server) float64 {
		u, err := DBOf(s).Usage(context.Background(), "org:org_x", "2026-11")
		if err != nil {
			t.Fatal(err)
		}
		return u[platform.MeterAPIOperations]
	}
	old := usageLogRotate
	usageLogRotate = 300 // a few lines
	defer func() { usageLogRotate = old }()

	s := open()
	for range 10 {
		s.meter.Add("org_x", "app_x", platform.MeterAPIOperations, 1)
	}
	s.meter.Flush() // adds, then starts the log again (it is over 300 bytes)
	if fi, _ := os.Stat(filepath.Join(dir, usageLogFile)); fi.Size() != 0 || count(s) != 10 {
		t.Fatalf("after a flush: log %d bytes, count %v", fi.Size(), count(s))
	}
	for range 3 {
		s.meter.Add("org_x", "app_x", platform.MeterAPIOperations, 1)
	}
	// The process dies: the store is closed first, so nothing more reaches it (the meter's
	// last flush fails, as it would not have happened).
	s.core.Shutdown()
	s.stopHooks()
	s.background.Wait()
	s.vault.Close()
	s.audit.Close()
	s.store.Close()
	s.meter.Close()

	s = open()
	defer s.Close()
	if got := count(s); got != 13 {
		t.Fatalf("after the restart: %v, want 13", got)
	}
	s.meter.Flush()
	if got := count(s); got != 13 {
		t.Fatalf("after another flush: %v, want 13", got)
	}
}
