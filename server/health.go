package server

import (
	"context"
	"errors"
	"net/http"
	"time"
)

// readyTimeout bounds the store probe of GET /readyz.
const readyTimeout = 2 * time.Second

// serveHealthz is liveness: the process answers HTTP. It touches nothing else, so that an
// orchestrator restarts only a process that cannot answer at all.
func (s *Server) serveHealthz(w http.ResponseWriter, r *http.Request) {
	if !s.rateHeaders(w, r) {
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.Write([]byte(`{"status":"ok"}` + "\n"))
}

// serveReadyz is readiness: a real write and read of the store within readyTimeout. A store
// that does not answer in time (or a probe still stuck from before) is 503 with Retry-After.
func (s *Server) serveReadyz(w http.ResponseWriter, r *http.Request) {
	if !s.rateHeaders(w, r) {
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	ready := func(err error) {
		if err != nil {
			s.log.WarnContext(r.Context(), "not ready", "err", err)
			w.Header().Set("Retry-After", "5")
			writeProblem(w, requestIDFrom(r.Context()), newProblem(http.StatusServiceUnavailable, codeUnavailable, "The store did not answer in time."))
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"status":"ready"}` + "\n"))
	}
	if !s.probing.CompareAndSwap(false, true) {
		ready(errProbeStuck)
		return
	}
	done := make(chan error, 1)
	go func() {
		defer s.probing.Store(false)
		done <- s.store.Probe(context.WithoutCancel(r.Context()))
	}()
	t := time.NewTimer(readyTimeout)
	defer t.Stop()
	select {
	case err := <-done:
		ready(err)
	case <-t.C:
		ready(errProbeStuck)
	}
}

var errProbeStuck = errors.New("store probe did not finish in time")
