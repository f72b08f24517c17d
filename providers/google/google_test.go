package google_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/api/googleapi"

	"svc.dev/svc/providers"
	"svc.dev/svc/providers/google"
)

func TestErr(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want error
	}{
		{&googleapi.Error{Code: 404}, providers.ErrNotFound},
		{&googleapi.Error{Code: 403, Body: `{"error":{"errors":[{"reason":"insufficientPermissions"}]}}`}, providers.ErrPermission},
		{&googleapi.Error{Code: 403, Body: `{"error":{"errors":[{"reason":"userRateLimitExceeded"}]}}`}, providers.ErrTransient},
		{&googleapi.Error{Code: 429}, providers.ErrTransient},
		{&googleapi.Error{Code: 503}, providers.ErrTransient},
		{&googleapi.Error{Code: 400}, providers.ErrInvalidArgument},
		{&url.Error{Op: "Get", URL: "https://x", Err: errors.New("connection reset")}, providers.ErrTransient},
		{fmt.Errorf("page: %w", providers.ErrNotFound), providers.ErrNotFound},
		{&url.Error{Op: "Get", URL: "https://x", Err: providers.ErrReauthRequired}, providers.ErrReauthRequired},
	} {
		got := google.Err(providers.VendorAMail, "list", "", tc.err)
		var pe *providers.Error
		if !errors.Is(got, tc.want) || !errors.As(got, &pe) {
			t.Errorf("Err(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
	if errors.Is(google.Err(providers.VendorAMail, "list", "", &googleapi.Error{Code: 404}), providers.ErrTransient) {
		t.Error("a 404 is not transient")
	}
}

// TestLimiter: burst plus a minute's rate never pass the quota.
func TestLimiter(t *testing.T) {
	for _, q := range []int{60, 12000, 15000} {
		l := google.Limiter(q)
		if got := float64(l.Burst()) + float64(l.Limit())*60; got > float64(q)+1e-9 {
			t.Errorf("quota %d: burst %d + 60 s at %v = %v", q, l.Burst(), l.Limit(), got)
		}
	}
}

// TestSharedLimiter: two clients of one account share the account's pacing;
// another account has its own.
func TestSharedLimiter(t *testing.T) {
	cfg := func(rt string) providers.Config {
		return providers.Config{"refresh_token": rt, "client_id": "c", "token_url": "https://oauth.example/token"}
	}
	a1, err := google.NewClient(cfg("rt-a"), "https://api.example/", 6000, nil)
	if err != nil {
		t.Fatal(err)
	}
	a2, _ := google.NewClient(cfg("rt-a"), "https://api.example/", 6000, nil)
	b, _ := google.NewClient(cfg("rt-b"), "https://api.example/", 6000, nil)
	if a1.Limiter != a2.Limiter || a1.Limiter == b.Limiter || a1.Limiter == nil {
		t.Errorf("limiters %p %p %p: want the first two shared", a1.Limiter, a2.Limiter, b.Limiter)
	}
}

// TestOnce: a request made with Once is not sent again after a 5xx (it
// may have been performed); others are.
func TestOnce(t *testing.T) {
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	c, err := google.NewClient(providers.Config{"access_token": "t", "quota_per_minute": "off"}, srv.URL, 6000, func(*http.Request) int { return 1 })
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		ctx  context.Context
		want int32
	}{{google.Once(context.Background()), 1}, {context.Background(), 2}} {
		n.Store(0)
		ctx, cancel := context.WithTimeout(tc.ctx, 3*time.Second)
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+"/import", strings.NewReader("x"))
		resp, err := c.HTTP.Do(req)
		cancel()
		if err == nil {
			resp.Body.Close()
		}
		if got := n.Load(); (tc.want == 1 && got != 1) || (tc.want > 1 && got < tc.want) {
			t.Errorf("sent %d times, want %d", got, tc.want)
		}
	}
}
