package plugin_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"svc.dev/svc/providers"
	"svc.dev/svc/providers/local"
	"svc.dev/svc/providers/plugin"
	"svc.dev/svc/providers/providertest"
	"svc.dev/svc/providers/providertest/hostile"
	"svc.dev/svc/providers/simulated"
)

// The test binary doubles as the plugin: "TESTBINARY plugin serve NAME".
func TestMain(m *testing.M) {
	if len(os.Args) == 4 && os.Args[1] == "plugin" && os.Args[2] == "serve" {
		switch os.Args[3] {
		case "simulated":
			plugin.Serve(simulated.Description, simulated.NewFactory(simulated.Options{Crash: func() { os.Exit(3) }}))
		case "bad":
			plugin.Serve(badDescription, newBad)
		case "hostile":
			plugin.Serve(hostile.Description, hostile.New)
		case "local":
			plugin.Serve(local.Description, local.New)
		case "rotating":
			plugin.Serve(rotatingDescription, newRotating)
		}
		os.Exit(0)
	}
	// A secret of the host's, which no plugin may see (TestHostile).
	os.Setenv(hostSecret, "sk_test_not_for_plugins")
	os.Exit(m.Run())
}

const hostSecret = "SVC_STRIPE_SECRET_KEY"

func newPlugin(t testing.TB, name providers.Name, serve string, opts *plugin.Options) *plugin.Plugin {
	t.Helper()
	p := plugin.NewPlugin(name, plugin.Command(os.Args[0], "plugin", "serve", serve), opts)
	t.Cleanup(func() { p.Close() })
	return p
}

func open(t testing.TB, pl *plugin.Plugin, cfg providers.Config) providers.Provider {
	t.Helper()
	p, err := pl.Open(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestConformanceThroughPlugin(t *testing.T) {
	t.Parallel() // each test has its own plugin process
	pl := newPlugin(t, providers.Simulated, "simulated", nil)
	providertest.Run(t, providertest.Harness{
		Open: func(t testing.TB) (providers.Provider, string) {
			return open(t, pl, providers.Config{"objects": "30"}), "mail"
		},
		MinObjects: 30,
	})
	if pl.Starts() != 1 {
		t.Errorf("plugin started %d times, want once for all instances", pl.Starts())
	}
}

func kill(t *testing.T, pl *plugin.Plugin) {
	t.Helper()
	pid := pl.Pid()
	if pid == 0 {
		t.Fatal("no plugin process")
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
}

func TestKillMidListingThenRecover(t *testing.T) {
	t.Parallel() // each test has its own plugin process
	ctx := context.Background()
	pl := newPlugin(t, providers.Simulated, "simulated", nil)
	p := open(t, pl, providers.Config{"objects": "5000"})
	page1, err := p.List(ctx, providers.ListRequest{SourceRef: "mail", PageSize: 1000})
	if err != nil {
		t.Fatal(err)
	}
	kill(t, pl)
	// A page read ahead before the kill may still be served; the first page
	// that needs the dead process fails with a typed, retryable error.
	got := page1.Objects
	token := page1.NextPageToken
	var err2 error
	for token != "" {
		page, err := p.List(ctx, providers.ListRequest{SourceRef: "mail", PageToken: token, PageSize: 1000})
		if err != nil {
			err2 = err
			break
		}
		got = append(got, page.Objects...)
		token = page.NextPageToken
	}
	err = err2
	if !errors.Is(err, providers.ErrPluginCrashed) || !providers.IsRetryable(err) {
		t.Fatalf("listing after a kill: got %v, want ErrPluginCrashed", err)
	}
	// The listing resumes from the same stateless token in a new process.
	rest, marker := listFrom(t, p, token)
	if pl.Starts() != 2 {
		t.Errorf("plugin started %d times, want 2", pl.Starts())
	}
	inproc, _ := simulated.New(ctx, providers.Config{"objects": "5000"})
	want, wantMarker := providertest.ListAll(ctx, t, inproc, "mail", 1000)
	got = append(got, rest...)
	if len(got) != len(want) || got[4999].ID != want[4999].ID || marker != wantMarker {
		t.Fatalf("recovered listing: %d objects, marker %v; want %d, %v", len(got), marker, len(want), wantMarker)
	}
}

func listFrom(t *testing.T, p providers.Provider, token string) ([]providers.Object, providers.Marker) {
	var out []providers.Object
	for {
		page, err := p.List(context.Background(), providers.ListRequest{SourceRef: "mail", PageToken: token, PageSize: 1000})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, page.Objects...)
		if page.NextPageToken == "" {
			return out, page.Marker
		}
		token = page.NextPageToken
	}
}

// largeObject finds a mail object of at least 4 MiB.
func largeObject(t *testing.T, p providers.Provider) providers.Object {
	objs, _ := providertest.ListAll(context.Background(), t, p, "mail", 1000)
	for _, o := range objs {
		if o.SizeBytes >= 4<<20 {
			return o
		}
	}
	t.Fatal("no large object")
	return providers.Object{}
}

func digest(t *testing.T, p providers.Provider, id string) [32]byte {
	c, err := p.Fetch(context.Background(), providers.FetchRequest{SourceRef: "mail", ObjectID: id})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Body.Close()
	h := sha256.New()
	if _, err := io.Copy(h, c.Body); err != nil {
		t.Fatal(err)
	}
	return [32]byte(h.Sum(nil))
}

func TestKillMidFetchThenRecover(t *testing.T) {
	t.Parallel() // each test has its own plugin process
	ctx := context.Background()
	pl := newPlugin(t, providers.Simulated, "simulated", nil)
	p := open(t, pl, providers.Config{"objects": "300"})
	o := largeObject(t, p)
	c, err := p.Fetch(ctx, providers.FetchRequest{SourceRef: "mail", ObjectID: o.ID, ExpectedVersion: o.Version})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.CopyN(io.Discard, c.Body, 1<<20); err != nil {
		t.Fatal(err)
	}
	kill(t, pl)
	_, err = io.Copy(io.Discard, c.Body)
	c.Body.Close()
	if !errors.Is(err, providers.ErrPluginCrashed) {
		t.Fatalf("reading after a kill: got %v, want ErrPluginCrashed", err)
	}
	inproc, _ := simulated.New(ctx, providers.Config{"objects": "300"})
	if digest(t, p, o.ID) != digest(t, inproc, o.ID) {
		t.Fatal("content fetched after the restart differs from in-process content")
	}
}

func TestInjectedCrashes(t *testing.T) {
	t.Parallel() // each test has its own plugin process
	ctx := context.Background()
	pl := newPlugin(t, providers.Simulated, "simulated", nil)
	p := open(t, pl, providers.Config{"objects": "50", "crash_after": "2"})
	for i := range 2 {
		if _, err := p.List(ctx, providers.ListRequest{SourceRef: "mail"}); err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
	}
	if _, err := p.List(ctx, providers.ListRequest{SourceRef: "mail"}); !errors.Is(err, providers.ErrPluginCrashed) {
		t.Fatalf("third call: got %v, want ErrPluginCrashed", err)
	}
	if _, err := p.List(ctx, providers.ListRequest{SourceRef: "mail"}); err != nil {
		t.Fatalf("call after the restart: %v", err)
	}

	p2 := open(t, pl, providers.Config{"objects": "300", "crash_mid_fetch": "100000"})
	o := largeObject(t, p2)
	c, err := p2.Fetch(ctx, providers.FetchRequest{SourceRef: "mail", ObjectID: o.ID})
	if err == nil {
		_, err = io.Copy(io.Discard, c.Body)
		c.Body.Close()
	}
	if !errors.Is(err, providers.ErrPluginCrashed) {
		t.Fatalf("crash mid fetch: got %v, want ErrPluginCrashed", err)
	}
}

func TestHangBecomesTimeout(t *testing.T) {
	ctx := context.Background()
	// 1 s: the first call must not time out on a loaded machine; the hung one must.
	pl := newPlugin(t, providers.Simulated, "simulated", &plugin.Options{CallTimeout: time.Second})
	p := open(t, pl, providers.Config{"objects": "50", "hang_after": "1"})
	if _, err := p.List(ctx, providers.ListRequest{SourceRef: "mail"}); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err := p.List(ctx, providers.ListRequest{SourceRef: "mail"})
	if !errors.Is(err, providers.ErrPluginTimeout) {
		t.Fatalf("hung call: got %v, want ErrPluginTimeout", err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("hung call took %s", d)
	}
	c, err := p.Fetch(ctx, providers.FetchRequest{SourceRef: "mail", ObjectID: "msg-00000001"})
	if err == nil {
		c.Body.Close()
	}
	if !errors.Is(err, providers.ErrPluginTimeout) {
		t.Fatalf("hung fetch: got %v, want ErrPluginTimeout", err)
	}
	// The process answered the probe, so it was not restarted.
	if pl.Starts() != 1 {
		t.Errorf("plugin restarted %d times after timeouts of a live process", pl.Starts()-1)
	}
}

// TestStalledContentBecomesTimeout checks the deadline on each chunk of
// content: a plugin that stops sending mid-content fails the read with
// ErrPluginTimeout, and is not restarted since it still answers.
func TestStalledContentBecomesTimeout(t *testing.T) {
	ctx := context.Background()
	pl := newPlugin(t, providers.Simulated, "bad", &plugin.Options{CallTimeout: 300 * time.Millisecond})
	p := open(t, pl, providers.Config{"mode": "stall_content"})
	c, err := p.Fetch(ctx, providers.FetchRequest{SourceRef: "x", ObjectID: "a"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Body.Close()
	start := time.Now()
	_, err = io.ReadAll(c.Body)
	if !errors.Is(err, providers.ErrPluginTimeout) {
		t.Fatalf("got %v, want ErrPluginTimeout", err)
	}
	if d := time.Since(start); d > 1500*time.Millisecond {
		t.Errorf("stalled read took %s", d)
	}
	p2 := open(t, pl, providers.Config{"mode": "ok"})
	c, err = p2.Fetch(ctx, providers.FetchRequest{SourceRef: "x", ObjectID: "a"})
	if err != nil {
		t.Fatal(err)
	}
	if b, err := io.ReadAll(c.Body); err != nil || string(b) != "0123456789" {
		t.Fatalf("fetch after a stall: %q, %v", b, err)
	}
	c.Body.Close()
	if pl.Starts() != 1 {
		t.Errorf("plugin started %d times; a stalled but live plugin is not restarted", pl.Starts())
	}
}

func TestProviderErrorsCrossTheBoundary(t *testing.T) {
	t.Parallel() // each test has its own plugin process
	ctx := context.Background()
	pl := newPlugin(t, providers.Simulated, "simulated", nil)
	p := open(t, pl, providers.Config{"objects": "10"})
	_, err := p.Fetch(ctx, providers.FetchRequest{SourceRef: "mail", ObjectID: "msg-00000001", ExpectedVersion: "v9"})
	var vm *providers.VersionMismatchError
	if !errors.As(err, &vm) || vm.Expected != "v9" || vm.Actual != "v1" || vm.ObjectID != "msg-00000001" {
		t.Fatalf("version mismatch through the plugin: %v", err)
	}
	if _, err := p.List(ctx, providers.ListRequest{SourceRef: "nope"}); !errors.Is(err, providers.ErrNotFound) {
		t.Errorf("unknown source: %v", err)
	}
	if _, err := pl.Open(ctx, providers.Config{"objects": "x"}); !errors.Is(err, providers.ErrInvalidArgument) {
		t.Errorf("bad config: %v", err)
	}
}

func TestInvalidResponsesAreRejected(t *testing.T) {
	t.Parallel() // each test has its own plugin process
	ctx := context.Background()
	pl := newPlugin(t, providers.Simulated, "bad", nil)
	for _, mode := range []string{"empty_id", "negative_size", "control_id", "bad_sha", "unknown_kind", "no_marker"} {
		t.Run(mode, func(t *testing.T) {
			p := open(t, pl, providers.Config{"mode": mode})
			_, err := p.List(ctx, providers.ListRequest{SourceRef: "x"})
			if !errors.Is(err, providers.ErrInvalidResponse) {
				t.Fatalf("got %v, want ErrInvalidResponse", err)
			}
		})
	}
	t.Run("short_content", func(t *testing.T) {
		p := open(t, pl, providers.Config{"mode": "short_content"})
		c, err := p.Fetch(ctx, providers.FetchRequest{SourceRef: "x", ObjectID: "a"})
		if err != nil {
			t.Fatal(err)
		}
		_, err = io.ReadAll(c.Body)
		if !errors.Is(err, providers.ErrInvalidResponse) {
			t.Fatalf("got %v, want ErrInvalidResponse", err)
		}
	})
	t.Run("wrong_object", func(t *testing.T) {
		p := open(t, pl, providers.Config{"mode": "ok"})
		_, err := p.Fetch(ctx, providers.FetchRequest{SourceRef: "x", ObjectID: "b"})
		if !errors.Is(err, providers.ErrInvalidResponse) {
			t.Fatalf("got %v, want ErrInvalidResponse", err)
		}
	})
	// A batch fetch: every result is checked; what came before a bad one stands, nothing after it.
	for _, tc := range []struct {
		mode string
		got  int   // outcomes handed over
		err  error // of the call
	}{
		{"ok", 3, nil},
		{"batch_short", 1, providers.ErrInvalidResponse},
		{"batch_skip", 1, providers.ErrInvalidResponse},
		{"batch_stop", 1, providers.ErrInvalidResponse},
		{"batch_over", 0, providers.ErrInvalidResponse},
		{"batch_fail", 1, providers.ErrPermission},
	} {
		t.Run("fetch_"+tc.mode, func(t *testing.T) {
			p := open(t, pl, providers.Config{"mode": tc.mode})
			b, ok := providers.AsBatchFetcher(p)
			if !ok {
				t.Fatal("no batch fetcher through the plugin")
			}
			got := 0
			reqs := []providers.FetchRequest{{ObjectID: "a"}, {ObjectID: "a"}, {ObjectID: "a"}}
			err := b.FetchBatch(ctx, reqs, func(i int, out providers.FetchOutcome) {
				if out.Err != nil || string(out.Content) != "0123456789" {
					t.Errorf("outcome %d: %+v", i, out)
				}
				got++
			})
			if got != tc.got || (tc.err == nil) != (err == nil) || (tc.err != nil && !errors.Is(err, tc.err)) {
				t.Fatalf("%d outcomes, %v; want %d, %v", got, err, tc.got, tc.err)
			}
		})
	}
	// A well-formed response from the same plugin passes.
	p := open(t, pl, providers.Config{"mode": "ok"})
	if _, err := p.List(ctx, providers.ListRequest{SourceRef: "x"}); err != nil {
		t.Fatal(err)
	}
}

func TestStartFailures(t *testing.T) {
	t.Parallel() // each test has its own plugin process
	ctx := context.Background()
	notPlugin := plugin.NewPlugin(providers.Simulated, plugin.Command("/bin/true"), &plugin.Options{StartTimeout: 2 * time.Second})
	defer notPlugin.Close()
	if _, err := notPlugin.Open(ctx, nil); !errors.Is(err, providers.ErrPluginUnavailable) {
		t.Errorf("a binary that is no plugin: %v", err)
	}
	wrongName := newPlugin(t, providers.VendorDLocal, "simulated", nil)
	if _, err := wrongName.Open(ctx, nil); !errors.Is(err, providers.ErrPluginUnavailable) || !strings.Contains(err.Error(), "simulated") {
		t.Errorf("a plugin serving another provider: %v", err)
	}
}

func TestWriteThroughPlugin(t *testing.T) {
	t.Parallel() // each test has its own plugin process
	ctx := context.Background()
	pl := newPlugin(t, providers.Simulated, "simulated", nil)
	p := open(t, pl, providers.Config{"objects": "5"})
	data := bytes.Repeat([]byte("0123456789"), 300_000) // 3 MB: several chunks
	sum := sha256.Sum256(data)
	w, ok := providers.AsWriter(p)
	if !ok {
		t.Fatal("no writer through the plugin")
	}
	o, err := w.Write(ctx, providers.WriteRequest{SourceRef: "files", Path: "big.bin", SizeBytes: int64(len(data)), SHA256: fmt.Sprintf("%x", sum)}, bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	if o.SizeBytes != int64(len(data)) {
		t.Fatalf("wrote %d bytes", o.SizeBytes)
	}
}
