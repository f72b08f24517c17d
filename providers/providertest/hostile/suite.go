package hostile

import (
	"context"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"svc.dev/svc/providers"
)

// Harness says how to reach the hostile provider through the host under
// test.
type Harness struct {
	// Open opens the hostile provider, configured with cfg, through the
	// host under test (a plugin process serving New). Calls may share one
	// plugin process; the suite closes what it opens.
	Open func(ctx context.Context, cfg providers.Config) (providers.Provider, error)
	// OpenPatient, if set, opens it through a host whose call deadline is
	// long enough for the plugin to produce a 70 MiB page (under the race
	// detector, several seconds); nil means Open.
	OpenPatient func(ctx context.Context, cfg providers.Config) (providers.Provider, error)
	// CallTimeout is the host's deadline for one call, as configured for
	// this test (keep it short: the suite waits for it several times).
	CallTimeout time.Duration
	// KillGrace is how long the host may take, after a call timed out, to
	// find the plugin frozen, kill it and start another; default 2 s.
	KillGrace time.Duration
	// Secrets names environment variables the host has and no plugin may
	// see (set them in the host before its first plugin starts).
	Secrets []string
}

// Run runs the hostile suite: each subtest opens the provider with one
// misbehaviour and checks what the host does with it. With svc's own host,
// from a test binary that serves the provider when asked (TestMain:
// plugin.Serve(hostile.Description, hostile.New)):
//
//	pl := plugin.NewPlugin(providers.Simulated, plugin.Command(os.Args[0], "serve-hostile"), &plugin.Options{CallTimeout: 2 * time.Second})
//	defer pl.Close()
//	hostile.Run(t, hostile.Harness{Open: pl.Open, CallTimeout: 2 * time.Second, Secrets: []string{"MY_SECRET"}})
//
// The suite takes about four call timeouts and the kill grace.
func Run(t *testing.T, h Harness) {
	t.Helper()
	if h.CallTimeout <= 0 {
		t.Fatal("hostile: Harness.CallTimeout is required")
	}
	if h.KillGrace <= 0 {
		h.KillGrace = 2 * time.Second
	}
	tests := []struct {
		name string
		fn   func(t *testing.T)
	}{
		{"FrozenPluginIsKilled", h.testFrozen},
		{"HungCallHasADeadline", h.testHung},
		{"PageOverTheMessageLimit", h.testHugePage},
		{"FetchLargerThanAccepted", h.testBigFetch},
		{"SlowOpenBlocksNoOtherOpen", h.testSlowOpen},
		{"TrashAnsweredWithATransientError", h.testTrashLie},
		{"CrashWithATrashInFlight", h.testTrashCrash},
		{"NoHostSecretsInTheEnvironment", h.testEnv},
	}
	for _, tc := range tests {
		t.Run(tc.name, tc.fn)
	}
}

func (h *Harness) open(t *testing.T, cfg providers.Config) providers.Provider {
	t.Helper()
	p, err := h.Open(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { providers.CloseProvider(p) })
	return p
}

// within fails t unless fn returned within d.
func within(t *testing.T, what string, d time.Duration, fn func()) {
	t.Helper()
	done := make(chan struct{})
	start := time.Now()
	go func() { defer close(done); fn() }()
	select {
	case <-done:
	case <-time.After(d):
		t.Fatalf("%s: still waiting after %s", what, d)
	}
	t.Logf("%s: %s", what, time.Since(start).Round(time.Millisecond))
}

// testFrozen: a plugin that stops its own process mid-fetch fails every
// fetch in flight within the call deadline, is killed without the host
// waiting on it, and the next calls reach a new process.
func (h *Harness) testFrozen(t *testing.T) {
	p := h.open(t, providers.Config{"mode": "freeze_fetch", "objects": "8", "page_size": "8"})
	var wg sync.WaitGroup
	errs := make([]error, 4)
	within(t, "four fetches of a frozen plugin", h.CallTimeout+h.KillGrace+5*time.Second, func() {
		for i := range errs {
			wg.Go(func() {
				c, err := p.Fetch(context.Background(), providers.FetchRequest{SourceRef: Source, ObjectID: ObjectID(nil, i)})
				if err == nil {
					_, err = io.Copy(io.Discard, c.Body)
					c.Body.Close()
				}
				errs[i] = err
			})
		}
		wg.Wait()
	})
	for i, err := range errs {
		if err == nil || !providers.IsRetryable(err) {
			t.Errorf("fetch %d of a frozen plugin: %v, want a retryable error (timeout or crash)", i, err)
		}
	}
	// A listing reaches a live process again once the frozen one is killed.
	within(t, "a listing after the freeze", 2*h.CallTimeout+h.KillGrace+10*time.Second, func() {
		for {
			_, err := p.List(context.Background(), providers.ListRequest{SourceRef: Source})
			if err == nil {
				return
			}
			if !providers.IsRetryable(err) {
				t.Errorf("listing after the freeze: %v", err)
				return
			}
			time.Sleep(50 * time.Millisecond)
		}
	})
}

// testHung: a call the plugin never answers fails at the deadline with
// ErrPluginTimeout.
func (h *Harness) testHung(t *testing.T) {
	p := h.open(t, providers.Config{"mode": "hang_fetch"})
	var err error
	within(t, "a hung fetch", h.CallTimeout+5*time.Second, func() {
		_, err = p.Fetch(context.Background(), providers.FetchRequest{SourceRef: Source, ObjectID: ObjectID(nil, 0)})
	})
	if !errors.Is(err, providers.ErrPluginTimeout) {
		t.Errorf("hung fetch: %v, want ErrPluginTimeout", err)
	}
}

// testHugePage: a page past the protocol's message limit is a provider's
// invalid response (which callers report as the provider's fault), not an
// internal error.
func (h *Harness) testHugePage(t *testing.T) {
	open := h.Open
	if h.OpenPatient != nil {
		open = h.OpenPatient
	}
	p, err := open(context.Background(), providers.Config{"mode": "huge_page"})
	if err != nil {
		t.Fatal(err)
	}
	defer providers.CloseProvider(p)
	_, err = p.List(context.Background(), providers.ListRequest{SourceRef: Source})
	if !errors.Is(err, providers.ErrInvalidResponse) {
		t.Errorf("page over the message limit: %v, want ErrInvalidResponse", err)
	}
}

// testBigFetch: an object larger than the caller accepts fails with
// ErrTooLarge, and an object streamed whole is never more than it declared.
func (h *Harness) testBigFetch(t *testing.T) {
	p := h.open(t, providers.Config{"mode": "big_fetch", "fetch_size": "4194304"})
	req := providers.FetchRequest{SourceRef: Source, ObjectID: ObjectID(nil, 1), MaxBytes: 2000}
	c, err := p.Fetch(context.Background(), req)
	var n int64
	if err == nil {
		n, err = io.Copy(io.Discard, c.Body)
		c.Body.Close()
	}
	if !errors.Is(err, providers.ErrTooLarge) || n > req.MaxBytes {
		t.Errorf("fetch of 4 MiB with MaxBytes 2000: %d bytes read, %v; want ErrTooLarge and at most 2000 bytes", n, err)
	}
}

// testSlowOpen: an instance whose provider takes long to open (within the
// call deadline) holds up no other instance's open.
func (h *Harness) testSlowOpen(t *testing.T) {
	h.open(t, providers.Config{}) // the plugin process is up
	delay := h.CallTimeout * 3 / 4
	slow := make(chan error, 1)
	go func() {
		p, err := h.Open(context.Background(), providers.Config{"mode": "slow_open", "open_delay": delay.String()})
		if err == nil {
			providers.CloseProvider(p)
		}
		slow <- err
	}()
	time.Sleep(delay / 4) // the slow open is in flight
	within(t, "a second open while a slow one is in flight", delay/2, func() {
		p, err := h.Open(context.Background(), providers.Config{})
		if err != nil {
			t.Error(err)
			return
		}
		providers.CloseProvider(p)
	})
	if err := <-slow; err != nil {
		t.Errorf("slow open: %v", err)
	}
}

// testTrashLie: a trash that is done but answered with a transient error is
// reported as retryable, and the object is then gone (a retry finds it not
// found): a caller must treat that absence as its own trash.
func (h *Harness) testTrashLie(t *testing.T) {
	dir := t.TempDir()
	p := h.open(t, providers.Config{"mode": "trash_lie", "dir": dir})
	req := providers.ActionRequest{SourceRef: Source, ObjectID: ObjectID(nil, 2), ExpectedVersion: "v1"}
	tr, ok := providers.AsTrasher(p)
	if !ok {
		t.Fatal("the host hides the hostile provider's trash capability")
	}
	if _, err := tr.Trash(context.Background(), req); !providers.IsRetryable(err) {
		t.Fatalf("lying trash: %v, want a retryable error", err)
	}
	if _, err := tr.Trash(context.Background(), req); !errors.Is(err, providers.ErrNotFound) {
		t.Fatalf("trash again: %v, want ErrNotFound", err)
	}
}

// testTrashCrash: a plugin that dies with a trash in flight fails that call
// with a retryable error, and the host starts it again for the next.
func (h *Harness) testTrashCrash(t *testing.T) {
	dir := t.TempDir()
	p := h.open(t, providers.Config{"mode": "trash_crash", "dir": dir})
	tr, _ := providers.AsTrasher(p)
	req := providers.ActionRequest{SourceRef: Source, ObjectID: ObjectID(nil, 3), ExpectedVersion: "v1"}
	if _, err := tr.Trash(context.Background(), req); !providers.IsRetryable(err) {
		t.Fatalf("trash that crashed the plugin: %v, want a retryable error", err)
	}
	var err error
	within(t, "a trash after the crash", h.CallTimeout+10*time.Second, func() {
		for {
			if _, err = tr.Trash(context.Background(), req); !providers.IsRetryable(err) {
				return
			}
			time.Sleep(50 * time.Millisecond)
		}
	})
	if !errors.Is(err, providers.ErrNotFound) {
		t.Fatalf("trash after the crash: %v, want ErrNotFound (it was trashed before the crash)", err)
	}
}

// testEnv: the plugin sees none of the host's secrets.
func (h *Harness) testEnv(t *testing.T) {
	p := h.open(t, providers.Config{"mode": "env"})
	page, err := p.List(context.Background(), providers.ListRequest{SourceRef: Source})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, o := range page.Objects {
		names = append(names, o.ID)
		for _, s := range h.Secrets {
			if o.ID == s {
				t.Errorf("the plugin sees the host's %s", s)
			}
		}
	}
	t.Logf("the plugin's environment: %s", strings.Join(names, " "))
}
