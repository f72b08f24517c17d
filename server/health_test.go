package server_test

import (
	"sync"
	"testing"
	"time"

	"svc.dev/svc/server"
)

func TestHealthAndReadiness(t *testing.T) {
	e := newEnv(t)
	for path, want := range map[string]string{"/healthz": `{"status":"ok"}`, "/readyz": `{"status":"ready"}`} {
		r := e.do("GET", path, "")
		if r.status != 200 || string(r.body) != want+"\n" || r.header.Get("Cache-Control") != "no-store" {
			t.Errorf("%s: %d %q", path, r.status, r.body)
		}
		checkRateHeaders(t, r)
	}
	// Readiness is a real store write (at most one a second, shared): a closed store is not
	// ready once the last probe's answer has run out.
	server.DBOf(e.srv).Close()
	time.Sleep(1100 * time.Millisecond)
	checkProblem(t, e.do("GET", "/readyz", ""), 503, "unavailable")
}

// Overlapping readiness probes share one store probe: none is refused because another is in
// flight (issue 21, 9).
func TestOverlappingReadinessProbes(t *testing.T) {
	e := newEnv(t)
	var wg sync.WaitGroup
	statuses := make([]int, 40)
	for i := range statuses {
		wg.Go(func() { statuses[i] = e.do("GET", "/readyz", "").status })
	}
	wg.Wait()
	for i, st := range statuses {
		if st != 200 {
			t.Fatalf("probe %d: %d", i, st)
		}
	}
}
