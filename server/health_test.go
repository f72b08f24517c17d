package server_test

import (
	"testing"

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
	// Readiness is a real store write: a closed store is not ready.
	server.DBOf(e.srv).Close()
	checkProblem(t, e.do("GET", "/readyz", ""), 503, "unavailable")
}
