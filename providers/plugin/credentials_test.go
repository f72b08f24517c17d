package plugin_test

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	"svc.dev/svc/providers"
)

// rotatingProvider stands for a vendor connector whose vendor rotates refresh tokens: each
// List "refreshes", replacing its refresh token with the next one and reporting it; its one
// object names the refresh token the instance was opened with.
type rotatingProvider struct {
	opened string

	mu    sync.Mutex
	token string
	watch func(providers.Config)
}

var rotatingDescription = providers.Description{
	Name: providers.Simulated, ProtocolVersion: providers.ProtocolVersion,
	OperationClasses: []providers.OperationClass{providers.Discover, providers.Preserve, providers.Monitor},
	Capabilities:     []providers.Capability{providers.CapCredentials},
	ObjectKinds:      []providers.Kind{providers.KindFile},
	MarkerKinds:      []providers.MarkerKind{providers.MarkerNone},
}

func newRotating(_ context.Context, cfg providers.Config) (providers.Provider, error) {
	return &rotatingProvider{opened: cfg[providers.KeyRefreshToken], token: cfg[providers.KeyRefreshToken]}, nil
}

func (p *rotatingProvider) Describe(context.Context) (providers.Description, error) {
	return rotatingDescription, nil
}

func (p *rotatingProvider) WatchCredentials(fn func(providers.Config)) {
	p.mu.Lock()
	p.watch = fn
	p.mu.Unlock()
}

func (p *rotatingProvider) List(context.Context, providers.ListRequest) (providers.Page, error) {
	p.mu.Lock()
	n, _ := strconv.Atoi(p.token[1:])
	p.token = "r" + strconv.Itoa(n+1)
	if p.watch != nil {
		// A plugin must report nothing but credentials: the extra key is dropped.
		p.watch(providers.Config{providers.KeyRefreshToken: p.token, providers.KeyAccessToken: "a" + p.token[1:], "endpoint": "https://elsewhere.example"})
	}
	p.mu.Unlock()
	return providers.Page{Marker: providers.Marker{Kind: providers.MarkerNone},
		Objects: []providers.Object{{ID: p.opened, Kind: providers.KindFile}}}, nil
}

func (p *rotatingProvider) Changes(context.Context, providers.ChangesRequest) (providers.ChangePage, error) {
	return providers.ChangePage{Marker: providers.Marker{Kind: providers.MarkerNone}}, nil
}

func (p *rotatingProvider) Fetch(context.Context, providers.FetchRequest) (*providers.Content, error) {
	return nil, providers.ErrNotFound
}

// Credentials a plugin reports reach the host's watcher, and a plugin restarted afterwards
// reopens the instance with them, not with the refresh token it was first given (which the
// vendor has rotated away).
func TestCredentialsWatchedThroughThePlugin(t *testing.T) {
	t.Parallel()
	pl := newPlugin(t, providers.Simulated, "rotating", nil)
	p := open(t, pl, providers.Config{providers.KeyRefreshToken: "r0", "endpoint": "https://vendor.example"})
	w, ok := providers.AsCredentialWatcher(p)
	if !ok {
		t.Fatal("the plugin's instance is not a CredentialWatcher")
	}
	got := make(chan providers.Config, 8)
	w.WatchCredentials(func(cfg providers.Config) { got <- cfg })
	ctx := context.Background()
	list := func() string {
		t.Helper()
		page, err := p.List(ctx, providers.ListRequest{})
		if err != nil {
			t.Fatal(err)
		}
		return page.Objects[0].ID
	}
	if opened := list(); opened != "r0" {
		t.Fatalf("opened with %q", opened)
	}
	select {
	case cfg := <-got:
		want := providers.Config{providers.KeyRefreshToken: "r1", providers.KeyAccessToken: "a1"}
		if len(cfg) != len(want) || cfg[providers.KeyRefreshToken] != "r1" || cfg[providers.KeyAccessToken] != "a1" {
			t.Fatalf("watcher got %v, want %v", cfg, want)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no credentials reported")
	}
	kill(t, pl)
	// The host reopens the instance in a new process: with the rotated token.
	deadline := time.Now().Add(10 * time.Second)
	for {
		page, err := p.List(ctx, providers.ListRequest{})
		if err == nil {
			if page.Objects[0].ID != "r1" {
				t.Fatalf("reopened with refresh token %q, want r1", page.Objects[0].ID)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal(err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	// The watch follows the instance into the new process.
	select {
	case cfg := <-got:
		if cfg[providers.KeyRefreshToken] != "r2" {
			t.Fatalf("after the restart the watcher got %v, want r2", cfg)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no credentials reported after the plugin restarted")
	}
	// Closed, the instance reports nothing more.
	w.WatchCredentials(nil)
	if err := providers.CloseProvider(p); err != nil {
		t.Fatal(err)
	}
}
