package server

import (
	"fmt"
	"net/http"
	"time"

	"svc.dev/svc/id"
	"svc.dev/svc/server/internal/rpc"
)

// routes assembles the HTTP surface: Connect procedures, REST routes, documents, and
// problems for everything else.
func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	rest := s.restRouter()
	for _, m := range s.methods {
		mux.Handle(m.procedure, s.connectHandler(m))
	}
	mux.HandleFunc("GET /v1/openapi.json", s.serveOpenAPI)
	mux.HandleFunc("GET /.well-known/svc-receipts.json", s.serveReceiptKeys)
	mux.HandleFunc("GET /healthz", s.serveHealthz)
	mux.HandleFunc("GET /readyz", s.serveReadyz)
	mux.HandleFunc("GET /v1/exports/{id}/archive", s.serveExport)
	s.platformAPI.Routes(mux)
	s.flow.Mount(mux)
	mux.Handle("/", rest)
	return s.middleware(s.withDeadline(s.cfg.RequestTimeout, mux))
}

// middleware gives every request an id, bounds its body, and turns a panic into a 500 problem.
func (s *Server) middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rid := id.New("req")
		w.Header().Set("Request-Id", rid)
		w.Header().Set("X-Content-Type-Options", "nosniff") // no response is ever sniffed into a page
		ctx := rpc.WithRequest(r.Context(), rid, r)
		r = r.WithContext(ctx)
		if r.Body != nil && r.Body != http.NoBody {
			r.Body = http.MaxBytesReader(w, r.Body, s.cfg.MaxBodyBytes)
			// The whole body must arrive within the timeout (the response is not bounded).
			_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(s.cfg.BodyReadTimeout))
		}
		w = &stallWriter{ResponseWriter: w, rc: http.NewResponseController(w)}
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v)
				}
				s.log.ErrorContext(ctx, "panic", "request_id", rid, "path", r.URL.Path, "panic", fmt.Sprint(v))
				rpc.Write(w, rid, rpc.NewProblem(http.StatusInternalServerError, rpc.CodeInternal, "The server failed to process the request."))
			}
		}()
		next.ServeHTTP(w, r)
	})
}

// writeStall is how long a response may wait on a client that reads none of it: each write
// must go out within it, so a stalled reader loses its connection while a slow one (a large
// download) is never cut off. A variable for the tests.
var writeStall = time.Minute

// stallWriter gives every write of a response writeStall to go out.
type stallWriter struct {
	http.ResponseWriter
	rc *http.ResponseController
}

func (w *stallWriter) Write(p []byte) (int, error) {
	_ = w.rc.SetWriteDeadline(time.Now().Add(writeStall))
	return w.ResponseWriter.Write(p)
}

// Flush implements http.Flusher (streaming responses flush as they go).
func (w *stallWriter) Flush() {
	_ = w.rc.SetWriteDeadline(time.Now().Add(writeStall))
	_ = w.rc.Flush()
}

// Unwrap lets http.ResponseController reach the connection's writer.
func (w *stallWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
