package server

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"svc.dev/svc/server/internal/rpc"
)

func TestRequestDeadlineAnswers503AndCancelsTheHandler(t *testing.T) {
	s := &Server{log: slog.New(slog.DiscardHandler)}
	cause := make(chan error, 1)
	late := make(chan error, 1)
	stuck := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Handler", "set before the deadline")
		<-r.Context().Done()
		cause <- context.Cause(r.Context())
		w.Header().Set("X-Late", "1") // its own map: no race with the 503's headers
		_, err := w.Write([]byte("too late"))
		late <- err
	})
	ts := httptest.NewServer(s.withDeadline(100*time.Millisecond, stuck))
	defer ts.Close()
	start := time.Now()
	res, err := http.Get(ts.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("answered after %v", took)
	}
	if res.StatusCode != http.StatusServiceUnavailable || res.Header.Get("Retry-After") == "" || res.Header.Get("Content-Type") != "application/problem+json" {
		t.Fatalf("got %s, Retry-After %q, Content-Type %q", res.Status, res.Header.Get("Retry-After"), res.Header.Get("Content-Type"))
	}
	var p map[string]any
	if err := json.NewDecoder(res.Body).Decode(&p); err != nil || p["code"] != rpc.CodeUnavailable || p["status"] != float64(503) || p["title"] != "Service unavailable" {
		t.Fatalf("problem %v (%v)", p, err)
	}
	if res.Header.Get("X-Handler") != "" || res.Header.Get("X-Late") != "" {
		t.Error("the handler's headers leaked into the 503")
	}
	if err := <-cause; err != errRequestTimeout {
		t.Errorf("handler context cause = %v", err)
	}
	if err := <-late; err != http.ErrHandlerTimeout {
		t.Errorf("late write = %v, want ErrHandlerTimeout", err)
	}
}

func TestRequestDeadlineDoesNotCutAStartedResponse(t *testing.T) {
	s := &Server{log: slog.New(slog.DiscardHandler)}
	streaming := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		for range 5 {
			w.Write([]byte("chunk\n"))
			w.(http.Flusher).Flush()
			time.Sleep(60 * time.Millisecond) // 300 ms in all, past the 100 ms deadline
		}
		if r.Context().Err() != nil {
			t.Error("a started response's context was cancelled")
		}
	})
	ts := httptest.NewServer(s.withDeadline(100*time.Millisecond, streaming))
	defer ts.Close()
	res, err := http.Get(ts.URL)
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(res.Body)
	res.Body.Close()
	if err != nil || res.StatusCode != 200 || string(body) != "chunk\nchunk\nchunk\nchunk\nchunk\n" || res.Header.Get("Content-Type") != "text/plain" {
		t.Fatalf("got %s %q (%v)", res.Status, body, err)
	}
}
