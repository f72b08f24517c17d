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
