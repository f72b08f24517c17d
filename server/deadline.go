package server

import (
	"bufio"
	"context"
	"errors"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"svc.dev/svc/server/internal/rpc"
)

// DefaultRequestTimeout is how long a request may take to start its response.
const DefaultRequestTimeout = 30 * time.Second

// errRequestTimeout cancels the context of a request that did not answer in time.
var errRequestTimeout = errors.New("request deadline exceeded")

// deadlineRetryAfter is the Retry-After (seconds) of a request that ran out of time.
const deadlineRetryAfter = 5

// withDeadline gives every request a deadline to start its response: past it, the client gets
// a 503 problem with Retry-After and the handler's context is cancelled, whatever the handler
// is waiting on; what the handler writes afterwards is dropped. A response that started in time
// (a download, a streamed export) is not cut: the deadline bounds the wait for an answer, not
// the length of a body.
func (s *Server) withDeadline(timeout time.Duration, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithCancelCause(r.Context())
		defer cancel(nil)
		dw := &deadlineWriter{w: w, h: w.Header().Clone()}
		done := make(chan struct{})
		panicked := make(chan any, 1)
		go func() {
			defer close(done)
			defer func() {
				if v := recover(); v != nil {
					panicked <- v
				}
			}()
			next.ServeHTTP(dw, r.WithContext(ctx))
		}()
		timer := time.NewTimer(timeout)
		defer timer.Stop()
		select {
		case <-done:
		case <-timer.C:
			if dw.expire() {
				cancel(errRequestTimeout)
				s.log.WarnContext(r.Context(), "request deadline exceeded", "request_id", w.Header().Get("Request-Id"),
					"method", r.Method, "path", r.URL.Path, "timeout", timeout)
				w.Header().Set("Retry-After", strconv.Itoa(deadlineRetryAfter))
				rpc.Write(w, w.Header().Get("Request-Id"), rpc.NewProblem(http.StatusServiceUnavailable, rpc.CodeUnavailable,
					"The request did not complete in time; retry after "+strconv.Itoa(deadlineRetryAfter)+" s."))
				return // the handler goroutine ends on its own; its writes are dropped
			}
			<-done // the response started in time: let it finish
		}
		select {
		case v := <-panicked:
			panic(v) // re-raised on the server's goroutine (http.ErrAbortHandler aborts the response)
		default:
		}
	})
}

// deadlineWriter passes writes through until the deadline expires before the response started;
// from then on the handler's writes are dropped. The handler sets headers in a map of its own,
// copied to the response when it starts, so that a late handler never touches the headers of
// the 503 the server wrote.
type deadlineWriter struct {
	w       http.ResponseWriter
	h       http.Header
	mu      sync.Mutex
	started bool
	expired bool
}

// expire ends the handler's access if its response has not started; it reports whether it did.
func (d *deadlineWriter) expire() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.started {
		return false
	}
	d.expired = true
	return true
}

// Header is the handler's own header map until the response starts, then the response's
// (trailers are set there after the body, and once started the server's goroutine never
// touches the response again).
func (d *deadlineWriter) Header() http.Header {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.started {
		return d.w.Header()
	}
	return d.h
}

// start copies the handler's headers to the response once, as it starts; d.mu is held.
func (d *deadlineWriter) start() {
	if d.started {
		return
	}
	d.started = true
	real := d.w.Header()
	clear(real)
	for k, v := range d.h {
		real[k] = v
	}
}

func (d *deadlineWriter) WriteHeader(code int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.expired {
		return
	}
	if code >= 200 {
		d.start()
	} else {
		for k, v := range d.h { // informational: the headers so far
			d.w.Header()[k] = v
		}
	}
	d.w.WriteHeader(code)
}

func (d *deadlineWriter) Write(p []byte) (int, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.expired {
		return 0, http.ErrHandlerTimeout
	}
	d.start()
	return d.w.Write(p)
}

// Flush lets streamed responses reach the client as they are written.
func (d *deadlineWriter) Flush() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.expired {
		return
	}
	d.start()
	if f, ok := d.w.(http.Flusher); ok {
		f.Flush()
	}
}

// Hijack is refused once the deadline expired.
func (d *deadlineWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.expired {
		return nil, nil, http.ErrHandlerTimeout
	}
	h, ok := d.w.(http.Hijacker)
	if !ok {
		return nil, nil, errors.New("hijack not supported")
	}
	d.start()
	return h.Hijack()
}
