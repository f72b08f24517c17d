package vendorhttp_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"svc.dev/svc/providers"
	"svc.dev/svc/providers/vendorhttp"
)

// tokenServer is an OAuth 2.0 token endpoint: it answers a refresh with
// access tokens "fresh-1", "fresh-2", ..., or with the error it is told.
type tokenServer struct {
	*httptest.Server
	n      atomic.Int32
	status int
	code   string // OAuth error code
}

func newTokenServer(t *testing.T) *tokenServer {
	ts := &tokenServer{status: 200}
	ts.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := ts.n.Add(1)
		if r.FormValue("grant_type") != "refresh_token" || r.FormValue("refresh_token") != "rt-secret" {
			w.WriteHeader(400)
			_, _ = w.Write([]byte(`{"error":"invalid_request"}`))
			return
		}
		w.Header().Set("Content-Type", "application/json")
		if ts.status != 200 {
			w.WriteHeader(ts.status)
			_ = json.NewEncoder(w).Encode(map[string]string{"error": ts.code, "error_description": "Token has been expired or revoked."})
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"access_token": "fresh-" + string(rune('0'+n)), "token_type": "Bearer", "expires_in": 3600})
	}))
	t.Cleanup(ts.Close)
	return ts
}

// api is a vendor API that accepts the bearer tokens in good.
func api(t *testing.T, good ...string) (*httptest.Server, *atomic.Int32) {
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		for _, g := range good {
			if r.Header.Get("Authorization") == "Bearer "+g {
				_, _ = w.Write([]byte("ok"))
				return
			}
		}
		w.WriteHeader(http.StatusUnauthorized)
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

func creds(t *testing.T, ts *tokenServer, extra providers.Config) *vendorhttp.Credentials {
	cfg := providers.Config{"access_token": "old-secret", "refresh_token": "rt-secret", "token_type": "Bearer",
		"expiry": time.Now().Add(time.Hour).UTC().Format(time.RFC3339), "client_id": "svc", "client_secret": "cs", "token_url": ts.URL}
	for k, v := range extra {
		if v == "" {
			delete(cfg, k)
		} else {
			cfg[k] = v
		}
	}
	c, err := vendorhttp.CredentialsFromConfig(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func get(c *http.Client, url string) (int, error) {
	resp, err := c.Get(url)
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}

func noSecret(t *testing.T, err error) {
	t.Helper()
	for _, s := range []string{"old-secret", "rt-secret", "fresh-", "cs"} {
		if err != nil && strings.Contains(err.Error(), s) && s != "cs" {
			t.Errorf("error %q carries a secret", err)
		}
	}
}

func TestCredentials(t *testing.T) {
	t.Run("valid token is used as is", func(t *testing.T) {
		ts := newTokenServer(t)
		srv, _ := api(t, "old-secret")
		c := vendorhttp.NewClient(vendorhttp.Options{Credentials: creds(t, ts, nil)})
		if code, err := get(c, srv.URL); code != 200 || err != nil {
			t.Fatalf("%d %v", code, err)
		}
		if ts.n.Load() != 0 {
			t.Errorf("refreshed a valid token")
		}
	})
	t.Run("expired token is refreshed first", func(t *testing.T) {
		ts := newTokenServer(t)
		srv, n := api(t, "fresh-1")
		c := vendorhttp.NewClient(vendorhttp.Options{Credentials: creds(t, ts, providers.Config{"expiry": "2020-01-01T00:00:00Z"})})
		for range 3 {
			if code, err := get(c, srv.URL); code != 200 || err != nil {
				t.Fatalf("%d %v", code, err)
			}
		}
		if ts.n.Load() != 1 || n.Load() != 3 {
			t.Errorf("%d refreshes, %d API calls; want 1 and 3", ts.n.Load(), n.Load())
		}
	})
	t.Run("401 refreshes once and retries", func(t *testing.T) {
		ts := newTokenServer(t)
		srv, n := api(t, "fresh-1") // the vendor revoked old-secret early
		c := vendorhttp.NewClient(vendorhttp.Options{Credentials: creds(t, ts, nil)})
		if code, err := get(c, srv.URL); code != 200 || err != nil {
			t.Fatalf("%d %v", code, err)
		}
		if ts.n.Load() != 1 || n.Load() != 2 {
			t.Errorf("%d refreshes, %d API calls; want 1 and 2", ts.n.Load(), n.Load())
		}
	})
	t.Run("401 after refresh is reauth_required", func(t *testing.T) {
		ts := newTokenServer(t)
		srv, _ := api(t) // accepts nothing
		c := vendorhttp.NewClient(vendorhttp.Options{Credentials: creds(t, ts, nil)})
		_, err := get(c, srv.URL)
		if !errors.Is(err, providers.ErrReauthRequired) || !errors.Is(err, providers.ErrPermission) {
			t.Fatalf("got %v, want ErrReauthRequired", err)
		}
		noSecret(t, err)
	})
	t.Run("invalid_grant is reauth_required, not retried", func(t *testing.T) {
		ts := newTokenServer(t)
		ts.status, ts.code = 400, "invalid_grant"
		srv, n := api(t, "fresh-1")
		c := vendorhttp.NewClient(vendorhttp.Options{Credentials: creds(t, ts, providers.Config{"expiry": "2020-01-01T00:00:00Z"})})
		_, err := get(c, srv.URL)
		var re *vendorhttp.ReauthError
		if !errors.Is(err, providers.ErrReauthRequired) || !errors.As(err, &re) || re.Reason != "invalid_grant" {
			t.Fatalf("got %v, want a ReauthError for invalid_grant", err)
		}
		if ts.n.Load() != 1 || n.Load() != 0 {
			t.Errorf("%d refreshes, %d API calls; want 1 and none", ts.n.Load(), n.Load())
		}
		noSecret(t, err)
	})
	t.Run("token endpoint down is transient", func(t *testing.T) {
		ts := newTokenServer(t)
		ts.status, ts.code = 503, ""
		srv, _ := api(t, "fresh-1")
		c := vendorhttp.NewClient(vendorhttp.Options{Credentials: creds(t, ts, providers.Config{"expiry": "2020-01-01T00:00:00Z"}), Attempts: 1})
		_, err := get(c, srv.URL)
		if !errors.Is(err, providers.ErrTransient) || errors.Is(err, providers.ErrPermission) {
			t.Fatalf("got %v, want ErrTransient", err)
		}
		noSecret(t, err)
	})
	t.Run("401 without refresh is reauth_required", func(t *testing.T) {
		ts := newTokenServer(t)
		srv, _ := api(t)
		c := vendorhttp.NewClient(vendorhttp.Options{Credentials: creds(t, ts, providers.Config{"refresh_token": ""})})
		if _, err := get(c, srv.URL); !errors.Is(err, providers.ErrReauthRequired) {
			t.Fatalf("got %v, want ErrReauthRequired", err)
		}
	})
}

func TestCredentialsFromConfig(t *testing.T) {
	for name, cfg := range map[string]providers.Config{
		"empty":                {},
		"bad expiry":           {"access_token": "x", "expiry": "tomorrow"},
		"refresh alone":        {"refresh_token": "x"},
		"refresh no token url": {"refresh_token": "x", "client_id": "c"},
	} {
		_, err := vendorhttp.CredentialsFromConfig(cfg, nil)
		if !errors.Is(err, providers.ErrInvalidArgument) {
			t.Errorf("%s: got %v, want ErrInvalidArgument", name, err)
		}
		if err != nil && strings.Contains(err.Error(), `"x"`) {
			t.Errorf("%s: error %q repeats a value", name, err)
		}
	}
	if _, err := vendorhttp.CredentialsFromConfig(providers.Config{"refresh_token": "x", "client_id": "c", "token_url": "http://127.0.0.1/token"}, nil); err != nil {
		t.Errorf("refresh token with its client: %v", err)
	}
}

// A refresh tells the watcher the new token's configuration, which CredentialsFromConfig reads
// back; a refresh the server refuses tells it nothing.
func TestWatchCredentials(t *testing.T) {
	ts := newTokenServer(t)
	c := creds(t, ts, providers.Config{"expiry": time.Now().Add(-time.Minute).UTC().Format(time.RFC3339)})
	var got []providers.Config
	c.WatchCredentials(func(cfg providers.Config) { got = append(got, cfg) })
	tok, err := c.Token(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 {
		t.Fatalf("watcher called %d times, want once", len(got))
	}
	cfg := got[0]
	if cfg["access_token"] != tok.AccessToken || cfg["refresh_token"] != "rt-secret" || cfg["token_type"] != "Bearer" || cfg["expiry"] == "" {
		t.Fatalf("watcher got %v", cfg)
	}
	again, err := vendorhttp.CredentialsFromConfig(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	if back, err := again.Token(t.Context()); err != nil || back.AccessToken != tok.AccessToken {
		t.Fatalf("the reported configuration reads back as %v, %v", back, err)
	}
	ts.status, ts.code = 400, "invalid_grant"
	if _, err := c.Refresh(t.Context(), nil); err == nil {
		t.Fatal("refused refresh: no error")
	}
	c.WatchCredentials(nil)
	if len(got) != 1 {
		t.Fatalf("watcher called %d times, want once", len(got))
	}
}

// A refresh that came before the watcher was registered is reported at once when it is: a
// plugin's host starts watching a moment after it opened the instance, which may already have
// refreshed (and the vendor rotated the refresh token).
func TestWatchCredentialsLate(t *testing.T) {
	ts := newTokenServer(t)
	c := creds(t, ts, providers.Config{"expiry": time.Now().Add(-time.Minute).UTC().Format(time.RFC3339)})
	var got []providers.Config
	c.WatchCredentials(func(cfg providers.Config) { got = append(got, cfg) })
	if len(got) != 0 {
		t.Fatalf("reported %d times before any refresh", len(got))
	}
	c.WatchCredentials(nil)
	tok, err := c.Token(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	c.WatchCredentials(func(cfg providers.Config) { got = append(got, cfg) })
	if len(got) != 1 || got[0]["access_token"] != tok.AccessToken {
		t.Fatalf("a watcher registered after the refresh got %v", got)
	}
}
