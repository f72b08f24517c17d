package builtin_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"slices"
	"testing"
	"time"

	dropboxfake "svc.dev/svc/internal/vendorfake/dropbox"
	graphfake "svc.dev/svc/internal/vendorfake/graph"
	"svc.dev/svc/providers"
	"svc.dev/svc/providers/providertest"
)

// vendorEnv is one vendor connector against its fake, with the fake's
// fault controls.
type vendorEnv struct {
	name     providers.Name
	cfg      providers.Config
	listPath string // the listing route's path prefix, for faults
	throttle func(path string, retryAfter, times int)
	fail     func(path string, status, times int)
	clear    func()
	revoke   func()
	expire   func()
	corrupt  func(o providers.Object) // changes the content the vendor serves for o, not its hashes
	rotate   func()                   // makes each refresh rotate the refresh token
}

func graphEnv(t *testing.T, name providers.Name) vendorEnv {
	g := graphfake.Seeded(graphfake.Seed{Seed: 8, Messages: 30, Files: 8})
	t.Cleanup(g.Close)
	env := vendorEnv{name: name,
		cfg: providers.Config{"endpoint": g.Endpoint(), "access_token": graphfake.AccessToken, "refresh_token": graphfake.RefreshToken,
			"client_id": "svc-test", "token_url": g.TokenURL(), "requests_per_second": "1000", "burst": "100"},
		listPath: "/v1.0/me/mailFolders/" + g.FolderID("inbox") + "/messages/delta",
		throttle: func(p string, ra, n int) {
			g.Inject(graphfake.Fault{PathPrefix: p, Status: http.StatusTooManyRequests, RetryAfter: ra, Times: n})
		},
		fail:  func(p string, st, n int) { g.Inject(graphfake.Fault{PathPrefix: p, Status: st, Times: n}) },
		clear: g.ClearFaults, revoke: g.Revoke, expire: g.ExpireAccessTokens, rotate: g.RotateRefreshTokens,
	}
	if name == providers.VendorBFiles {
		env.listPath = "/v1.0/me/drive/root/delta"
		env.corrupt = func(o providers.Object) { g.CorruptItem(o.ID) }
	}
	return env
}

func vendorEnvs(t *testing.T) []vendorEnv {
	d := dropboxfake.Seeded(dropboxfake.Seed{Seed: 8, Files: 8})
	t.Cleanup(d.Close)
	return []vendorEnv{
		graphEnv(t, providers.VendorBMail),
		graphEnv(t, providers.VendorBFiles),
		{name: providers.VendorCFiles, cfg: providers.Config{"api_url": d.URL(), "content_url": d.URL(), "access_token": dropboxfake.AccessToken,
			"refresh_token": dropboxfake.RefreshToken, "client_id": "svc-test", "token_url": d.TokenURL(), "requests_per_second": "1000", "burst": "100"},
			listPath: "/2/files/list_folder",
			throttle: func(p string, ra, n int) {
				d.Inject(dropboxfake.Fault{PathPrefix: p, Status: http.StatusTooManyRequests, RetryAfter: ra, Times: n})
			},
			fail:  func(p string, st, n int) { d.Inject(dropboxfake.Fault{PathPrefix: p, Status: st, Times: n}) },
			clear: d.ClearFaults, revoke: d.Revoke, expire: d.ExpireAccessTokens, rotate: d.RotateRefreshTokens,
			corrupt: func(o providers.Object) { d.Corrupt(o.ID) }},
	}
}

func ids(objs []providers.Object) []string {
	out := make([]string, len(objs))
	for i, o := range objs {
		out[i] = o.ID
	}
	return out
}

// TestVendorFaults: each vendor connector against faults of its API, in
// process: a 429's Retry-After is waited out; a listing that fails midway
// (the vendor down past the caller's deadline) resumes from its page token
// in a new instance (as after a crash) with nothing skipped or repeated; an
// expired access token is refreshed; a revoked grant is reauth_required; one
// object's failure (a moved version, content that does not match the
// vendor's hash) leaves the others alone.
func TestVendorFaults(t *testing.T) {
	reg := registries(t)["in-process"]
	for _, env := range vendorEnvs(t) {
		t.Run(string(env.name), func(t *testing.T) {
			ctx := context.Background()
			open := func() providers.Provider { return openFrom(t, reg, env.name, env.cfg) }
			p := open()
			want, _ := providertest.ListAll(ctx, t, p, "default", 3)

			env.throttle(env.listPath, 1, 1)
			start := time.Now()
			got, _ := providertest.ListAll(ctx, t, p, "default", 3)
			if waited := time.Since(start); waited < time.Second {
				t.Errorf("listing through a 429 with Retry-After: 1 took %v", waited)
			}
			if !slices.Equal(ids(got), ids(want)) {
				t.Errorf("listing after a 429 differs")
			}

			first, err := p.List(ctx, providers.ListRequest{SourceRef: "default", PageSize: 3})
			if err != nil || first.NextPageToken == "" {
				t.Fatalf("first page: %v, %+v", err, first)
			}
			env.fail(env.listPath, http.StatusServiceUnavailable, 1000)
			short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
			_, err = p.List(short, providers.ListRequest{SourceRef: "default", PageToken: first.NextPageToken, PageSize: 3})
			cancel()
			if !providers.IsRetryable(err) {
				t.Fatalf("listing with the vendor down: %v, want a retryable error", err)
			}
			env.clear()
			resumed := append([]providers.Object(nil), first.Objects...)
			q := open() // a new instance, as after a crash of the plugin
			for tok := first.NextPageToken; tok != ""; {
				pg, err := q.List(ctx, providers.ListRequest{SourceRef: "default", PageToken: tok, PageSize: 3})
				if err != nil {
					t.Fatalf("resume: %v", err)
				}
				resumed, tok = append(resumed, pg.Objects...), pg.NextPageToken
			}
			if !slices.Equal(ids(resumed), ids(want)) {
				t.Errorf("resumed listing differs:\n%v\n%v", ids(resumed), ids(want))
			}

			env.expire()
			if _, err := p.List(ctx, providers.ListRequest{SourceRef: "default", PageSize: 3}); err != nil {
				t.Errorf("list with an expired access token (refresh expected): %v", err)
			}

			// Per-object failures.
			tr, _ := providers.AsTrasher(p)
			a, b := want[0], want[1]
			if _, err := tr.Trash(ctx, providers.ActionRequest{SourceRef: "default", ObjectID: a.ID, ExpectedVersion: a.Version + "x"}); !errors.Is(err, providers.ErrVersionMismatch) {
				t.Errorf("trash with a moved version: %v", err)
			}
			if _, err := tr.Trash(ctx, providers.ActionRequest{SourceRef: "default", ObjectID: b.ID, ExpectedVersion: b.Version}); err != nil {
				t.Errorf("trash beside a refused one: %v", err)
			}
			if env.corrupt != nil {
				env.corrupt(a)
				c, err := p.Fetch(ctx, providers.FetchRequest{SourceRef: "default", ObjectID: a.ID, ExpectedVersion: a.Version})
				if err == nil {
					_, err = io.Copy(io.Discard, c.Body)
					c.Body.Close()
				}
				if !errors.Is(err, providers.ErrInvalidData) {
					t.Errorf("fetch of content that does not match the vendor's hash: %v, want ErrInvalidData", err)
				}
				c, err = p.Fetch(ctx, providers.FetchRequest{SourceRef: "default", ObjectID: want[2].ID, ExpectedVersion: want[2].Version})
				if err == nil {
					_, err = io.Copy(io.Discard, c.Body)
					c.Body.Close()
				}
				if err != nil {
					t.Errorf("fetch beside a corrupt object: %v", err)
				}
			}

			env.revoke()
			for mode, r := range registries(t) {
				_, err := openFrom(t, r, env.name, env.cfg).List(ctx, providers.ListRequest{SourceRef: "default"})
				if !errors.Is(err, providers.ErrReauthRequired) {
					t.Errorf("%s: list after the grant was revoked: %v, want ErrReauthRequired", mode, err)
				}
			}
		})
	}
}
