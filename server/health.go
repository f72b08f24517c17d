package server

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"time"

	"svc.dev/svc/server/internal/rpc"
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

// serveReadyz is readiness: a real write and read of the store within readyTimeout, done at
// most once per probeEvery whoever asks (the route is anonymous: a flood of probes costs one
// store write a second), and shared by the requests that overlap it (none is refused because
// another probe is in flight). A store that does not answer in time is 503 with Retry-After.
func (s *Server) serveReadyz(w http.ResponseWriter, r *http.Request) {
	if !s.rateHeaders(w, r) {
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	if err := s.ready.check(s.store.Probe); err != nil {
		s.log.WarnContext(r.Context(), "not ready", "err", err)
		w.Header().Set("Retry-After", "5")
		rpc.Write(w, rpc.RequestID(r.Context()), rpc.NewProblem(http.StatusServiceUnavailable, rpc.CodeUnavailable, "The store did not answer in time."))
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write([]byte(`{"status":"ready"}` + "\n"))
}

// probeEvery is how long a store probe's answer stands for every readiness request.
const probeEvery = time.Second

// readiness runs the store probes of GET /readyz: one at a time, its answer kept for
// probeEvery and shared by every request that waits for it.
type readiness struct {
	mu       sync.Mutex
	at       time.Time     // when the last probe ended
	err      error         // its answer
	inflight chan struct{} // closed when the running probe ends; nil when none runs
}

func (rd *readiness) check(probe func(context.Context) error) error {
	rd.mu.Lock()
	if !rd.at.IsZero() && time.Since(rd.at) < probeEvery && rd.inflight == nil {
		err := rd.err
		rd.mu.Unlock()
		return err
	}
	if rd.inflight == nil {
		done := make(chan struct{})
		rd.inflight = done
		go func() {
			err := probe(context.Background())
			rd.mu.Lock()
			rd.at, rd.err, rd.inflight = time.Now(), err, nil
			rd.mu.Unlock()
			close(done)
		}()
	}
	done := rd.inflight
	rd.mu.Unlock()
	t := time.NewTimer(readyTimeout)
	defer t.Stop()
	select {
	case <-done:
		rd.mu.Lock()
		defer rd.mu.Unlock()
		return rd.err
	case <-t.C:
		return errProbeStuck
	}
}

var errProbeStuck = errors.New("store probe did not finish in time")
