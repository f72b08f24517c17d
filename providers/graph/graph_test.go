package graph_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/time/rate"

	"svc.dev/svc/providers"
	"svc.dev/svc/providers/graph"
)

func client(t *testing.T, h http.HandlerFunc, pace graph.Pacing) (*graph.Client, *httptest.Server) {
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	if pace.Rate == 0 {
		pace = graph.Pacing{Rate: rate.Inf, Burst: 1}
	}
	c, err := graph.New(providers.Config{"endpoint": srv.URL + "/v1.0", "access_token": "t"}, pace, nil)
	if err != nil {
		t.Fatal(err)
	}
	return c, srv
}

// TestLinksStayOnTheEndpoint: a nextLink or a path off the configured
// endpoint is refused, so the account's token is never sent elsewhere.
func TestLinksStayOnTheEndpoint(t *testing.T) {
	var sawAuth atomic.Int32
	evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "" {
			sawAuth.Add(1)
		}
		fmt.Fprint(w, `{"value":[]}`)
	}))
	defer evil.Close()
	c, _ := client(t, func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, `{"value":[{"id":"a"}],"@odata.nextLink":%q}`, evil.URL+"/v1.0/me/next")
	}, graph.Pacing{})
	_, _, _, _, err := graph.Step[struct{ ID string }](context.Background(), c, nil, graph.Cursor{Link: "/me/items"}, 10)
	if err == nil {
		t.Fatal("a nextLink to another host was followed")
	}
	if _, err := c.Do(context.Background(), "GET", evil.URL+"/v1.0/me", nil, nil, nil); !errors.Is(err, providers.ErrInvalidArgument) {
		t.Errorf("a request off the endpoint: %v", err)
	}
	if sawAuth.Load() != 0 {
		t.Errorf("the token reached another host")
	}
}

// TestErrors: OData errors become the providers' sentinels.
func TestErrors(t *testing.T) {
	status := map[string]int{"/404": 404, "/410": 410, "/412": 412, "/403": 403, "/400": 400}
	c, _ := client(t, func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(status[r.URL.Path[len("/v1.0"):]])
		fmt.Fprint(w, `{"error":{"code":"x","message":"y"}}`)
	}, graph.Pacing{})
	for path, want := range map[string]error{"/404": providers.ErrNotFound, "/410": providers.ErrMarkerExpired,
		"/412": providers.ErrVersionMismatch, "/403": providers.ErrPermission, "/400": providers.ErrInvalidArgument} {
		if _, err := c.Do(context.Background(), "GET", path, nil, nil, nil); !errors.Is(err, want) {
			t.Errorf("%s: %v, want %v", path, err, want)
		}
	}
}

// TestConcurrencyBound: no more than MaxConcurrent requests are in flight.
func TestConcurrencyBound(t *testing.T) {
	var now, most atomic.Int32
	c, _ := client(t, func(w http.ResponseWriter, r *http.Request) {
		n := now.Add(1)
		for {
			m := most.Load()
			if n <= m || most.CompareAndSwap(m, n) {
				break
			}
		}
		time.Sleep(20 * time.Millisecond)
		now.Add(-1)
		fmt.Fprint(w, `{}`)
	}, graph.Pacing{Rate: rate.Inf, Burst: 1, MaxConcurrent: 4})
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			if _, err := c.Do(context.Background(), "GET", "/me", nil, nil, nil); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if most.Load() > 4 || most.Load() < 2 {
		t.Errorf("%d requests in flight at once, want at most 4 (and some parallelism)", most.Load())
	}
}

// TestCreateIsNotResentBlindly: a POST answered 503 is sent once (it may
// have been carried out) and is ErrTransient; one answered 429 (refused
// unperformed) is sent again; 413 is ErrTooLarge; the body and its
// Content-Type arrive as given, every time.
func TestCreateIsNotResentBlindly(t *testing.T) {
	var posts atomic.Int32
	answers := []int{http.StatusServiceUnavailable, http.StatusTooManyRequests, http.StatusCreated, http.StatusRequestEntityTooLarge}
	var mu sync.Mutex
	c, _ := client(t, func(w http.ResponseWriter, r *http.Request) {
		n := posts.Add(1)
		b := make([]byte, 16)
		k, _ := r.Body.Read(b)
		if r.Method != http.MethodPost || r.Header.Get("Content-Type") != "text/plain" || string(b[:k]) != "TUlNRQ==" || r.Header.Get("X-Svc-No-Retry") != "" {
			t.Errorf("request %d: %s %q %q", n, r.Method, r.Header.Get("Content-Type"), b[:k])
		}
		mu.Lock()
		status := answers[0]
		answers = answers[1:]
		mu.Unlock()
		if status == http.StatusTooManyRequests {
			w.Header().Set("Retry-After", "0")
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		if status == http.StatusCreated {
			fmt.Fprint(w, `{"id":"m1"}`)
		} else {
			fmt.Fprint(w, `{"error":{"code":"x","message":"y"}}`)
		}
	}, graph.Pacing{})
	ctx := context.Background()
	if err := c.Create(ctx, "/me/mailFolders/inbox/messages", "text/plain", []byte("TUlNRQ=="), nil); !errors.Is(err, providers.ErrTransient) || posts.Load() != 1 {
		t.Fatalf("503: %v after %d requests, want ErrTransient after 1", err, posts.Load())
	}
	var out struct{ ID string }
	if err := c.Create(ctx, "/me/mailFolders/inbox/messages", "text/plain", []byte("TUlNRQ=="), &out); err != nil || out.ID != "m1" || posts.Load() != 3 {
		t.Fatalf("429 then 201: %v, %+v after %d requests", err, out, posts.Load())
	}
	if err := c.Create(ctx, "/me/mailFolders/inbox/messages", "text/plain", []byte("TUlNRQ=="), nil); !errors.Is(err, providers.ErrTooLarge) {
		t.Errorf("413: %v, want ErrTooLarge", err)
	}
}
