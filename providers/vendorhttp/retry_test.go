package vendorhttp_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/time/rate"

	"svc.dev/svc/providers/vendorhttp"
)

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"", 0, false},
		{"0", 0, true},
		{"7", 7 * time.Second, true},
		{" 120 ", 2 * time.Minute, true},
		{"-1", 0, false},
		{"soon", 0, false},
		{"Thu, 26 Nov 2026 12:00:30 GMT", 30 * time.Second, true},
		{"Thursday, 26-Nov-26 12:01:00 GMT", time.Minute, true}, // RFC 850
		{"Thu Nov 26 12:00:05 2026", 5 * time.Second, true},     // asctime
		{"Thu, 26 Nov 2026 11:00:00 GMT", 0, true},              // past
	} {
		got, ok := vendorhttp.ParseRetryAfter(tc.in, now)
		if got != tc.want || ok != tc.ok {
			t.Errorf("ParseRetryAfter(%q) = %v, %v; want %v, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

// script answers the requests of a test server in turn from a list of
// statuses (the last one repeats), counting them and the bodies they carried.
type script struct {
	statuses []int
	header   http.Header
	body     string
	n        atomic.Int32
	mu       sync.Mutex
	bodies   []string
}

func (s *script) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	i := int(s.n.Add(1)) - 1
	b, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	s.bodies = append(s.bodies, string(b))
	s.mu.Unlock()
	code := s.statuses[min(i, len(s.statuses)-1)]
	if code == 0 { // drop the connection
		hj, _ := w.(http.Hijacker)
		c, _, _ := hj.Hijack()
		_ = c.Close()
		return
	}
	if code != http.StatusOK {
		for k, v := range s.header {
			w.Header()[k] = v
		}
	}
	w.WriteHeader(code)
	_, _ = io.WriteString(w, s.body)
}

func fast(o vendorhttp.Options) *http.Client {
	if o.BaseDelay == 0 {
		o.BaseDelay = time.Millisecond
	}
	if o.MaxDelay == 0 {
		o.MaxDelay = 5 * time.Millisecond
	}
	return vendorhttp.NewClient(o)
}

func TestRetries(t *testing.T) {
	for _, tc := range []struct {
		name     string
		method   string
		statuses []int
		header   http.Header
		attempts int
		want     int   // final status (0: an error)
		sent     int32 // requests the server saw
	}{
		{"5xx then ok", "GET", []int{503, 500, 502, 200}, nil, 0, 200, 4},
		{"429 then ok", "GET", []int{429, 200}, http.Header{"Retry-After": {"0"}}, 0, 200, 2},
		{"429 on a POST is retried", "POST", []int{429, 200}, nil, 0, 200, 2},
		{"5xx on a POST is not", "POST", []int{503, 200}, nil, 0, 503, 1},
		{"attempts bound", "GET", []int{503}, nil, 3, 503, 3},
		{"4xx is final", "GET", []int{404, 200}, nil, 0, 404, 1},
		{"501 is final", "GET", []int{501, 200}, nil, 0, 501, 1},
		{"dropped connection", "GET", []int{0, 0, 200}, nil, 0, 200, 3},
		{"dropped connection on a POST", "POST", []int{0, 200}, nil, 0, 0, 1},
		{"Retry-After too long", "GET", []int{429, 200}, http.Header{"Retry-After": {"3600"}}, 0, 429, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &script{statuses: tc.statuses, header: tc.header}
			srv := httptest.NewServer(s)
			defer srv.Close()
			c := fast(vendorhttp.Options{Attempts: tc.attempts, MaxRetryAfter: time.Minute})
			req, _ := http.NewRequest(tc.method, srv.URL, strings.NewReader("payload"))
			resp, err := c.Do(req)
			switch {
			case tc.want == 0 && err == nil:
				resp.Body.Close()
				t.Fatalf("got %d, want an error", resp.StatusCode)
			case tc.want != 0 && err != nil:
				t.Fatalf("got %v, want %d", err, tc.want)
			case err == nil:
				resp.Body.Close()
				if resp.StatusCode != tc.want {
					t.Errorf("status %d, want %d", resp.StatusCode, tc.want)
				}
			}
			if got := s.n.Load(); got != tc.sent {
				t.Errorf("server saw %d requests, want %d", got, tc.sent)
			}
			s.mu.Lock()
			defer s.mu.Unlock()
			for i, b := range s.bodies {
				if b != "payload" && tc.statuses[min(i, len(tc.statuses)-1)] != 0 {
					t.Errorf("request %d carried %q, want the whole body again", i, b)
				}
			}
		})
	}
}

// TestRetryAfterHonoured: the client waits at least what Retry-After says,
// in seconds and as an HTTP-date.
func TestRetryAfterHonoured(t *testing.T) {
	for name, value := range map[string]func() string{
		"seconds": func() string { return "1" },
		"date":    func() string { return time.Now().Add(2 * time.Second).UTC().Format(http.TimeFormat) },
	} {
		t.Run(name, func(t *testing.T) {
			var (
				mu    sync.Mutex
				first time.Time
				gap   time.Duration
				n     atomic.Int32
			)
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				defer mu.Unlock()
				if n.Add(1) == 1 {
					first = time.Now()
					w.Header().Set("Retry-After", value())
					w.WriteHeader(http.StatusTooManyRequests)
					return
				}
				gap = time.Since(first)
			}))
			defer srv.Close()
			resp, err := fast(vendorhttp.Options{}).Get(srv.URL)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			mu.Lock()
			defer mu.Unlock()
			// An HTTP-date has whole seconds: the wait is at least 1 s.
			if resp.StatusCode != 200 || gap < 990*time.Millisecond {
				t.Errorf("status %d after a gap of %v; want 200 after at least the Retry-After", resp.StatusCode, gap)
			}
		})
	}
}

// TestDeadline: a wait that would outlive the context's deadline is not
// waited: the caller gets the vendor's answer at once.
func TestDeadline(t *testing.T) {
	s := &script{statuses: []int{429}, header: http.Header{"Retry-After": {"30"}}}
	srv := httptest.NewServer(s)
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL, nil)
	start := time.Now()
	resp, err := fast(vendorhttp.Options{}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 429 || time.Since(start) > time.Second || s.n.Load() != 1 {
		t.Errorf("status %d after %v and %d requests; want the 429 at once", resp.StatusCode, time.Since(start), s.n.Load())
	}
}

// TestThrottled: an answer the vendor means as "slow down" (Google's 403
// rateLimitExceeded) is retried, and a 403 that is not keeps its body.
func TestThrottled(t *testing.T) {
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch n.Add(1) {
		case 1:
			w.WriteHeader(403)
			_, _ = io.WriteString(w, `{"error":{"errors":[{"reason":"rateLimitExceeded"}]}}`)
		default:
			w.WriteHeader(403)
			_, _ = io.WriteString(w, `{"error":{"errors":[{"reason":"forbidden"}]}}`)
		}
	}))
	defer srv.Close()
	c := fast(vendorhttp.Options{Throttled: func(_ *http.Response, body []byte) bool {
		return strings.Contains(string(body), "rateLimitExceeded")
	}})
	resp, err := c.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if n.Load() != 2 || !strings.Contains(string(b), `"forbidden"`) {
		t.Errorf("%d requests, body %q; want a retry and the second body whole", n.Load(), b)
	}
}

// TestPacing: requests wait for the limiter, charged by their cost.
func TestPacing(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer srv.Close()
	c := vendorhttp.NewClient(vendorhttp.Options{
		Limiter: rate.NewLimiter(50, 5),
		Cost:    func(r *http.Request) int { return 5 },
	})
	start := time.Now()
	for range 6 { // 30 units at 50/s with a burst of 5: at least 0.5 s
		resp, err := c.Get(srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	if el := time.Since(start); el < 450*time.Millisecond {
		t.Errorf("6 requests of cost 5 at 50 units/s took %v, want at least 0.5 s", el)
	}
}

func TestCancelledWhileWaiting(t *testing.T) {
	s := &script{statuses: []int{503}}
	srv := httptest.NewServer(s)
	defer srv.Close()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL, nil)
	time.AfterFunc(100*time.Millisecond, cancel)
	_, err := vendorhttp.NewClient(vendorhttp.Options{BaseDelay: 10 * time.Second, MaxDelay: 10 * time.Second}).Do(req)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("got %v, want context.Canceled", err)
	}
}

// lateReader is a RoundTripper that answers at once and reads the request's body afterwards,
// as net/http's connection writer may when a server answers before the whole body is sent.
type lateReader struct {
	read chan []byte
}

func (l lateReader) RoundTrip(req *http.Request) (*http.Response, error) {
	go func() {
		time.Sleep(20 * time.Millisecond)
		b, _ := io.ReadAll(req.Body)
		l.read <- b
	}()
	return &http.Response{StatusCode: 200, Body: http.NoBody, Header: http.Header{}, Request: req}, nil
}

// With OwnBodies the transport sends its own copy of a request's body: a caller that reuses its buffer once
// RoundTrip returns (google.golang.org/api's chunked uploads do) cannot change the bytes a
// late reader of the request sends.
func TestRequestBodyIsTheTransportsOwn(t *testing.T) {
	l := lateReader{read: make(chan []byte, 1)}
	c := vendorhttp.NewClient(vendorhttp.Options{Base: l, OwnBodies: true})
	buf := []byte("first chunk")
	req, err := http.NewRequest(http.MethodPut, "http://vendor.example/upload", bytes.NewReader(buf))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	copy(buf, "NEXT! chunk") // the caller's buffer, reused for the next chunk
	if got := string(<-l.read); got != "first chunk" {
		t.Fatalf("sent %q, want the body as it was when the request was made", got)
	}
}
