package plugin_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"svc.dev/svc/providers"
	"svc.dev/svc/providers/plugin"
	"svc.dev/svc/providers/providertest/hostile"
)

// TestHostile runs the hostile suite through the real plugin boundary: the
// test binary serves the hostile provider as a plugin (TestMain).
func TestHostile(t *testing.T) {
	t.Parallel() // each test has its own plugin process
	const callTimeout = 2 * time.Second
	pl := newPlugin(t, providers.Simulated, "hostile", &plugin.Options{CallTimeout: callTimeout})
	patient := newPlugin(t, providers.Simulated, "hostile", &plugin.Options{CallTimeout: time.Minute})
	hostile.Run(t, hostile.Harness{
		OpenPatient: func(ctx context.Context, cfg providers.Config) (providers.Provider, error) {
			return patient.Open(ctx, cfg)
		},
		Open: func(ctx context.Context, cfg providers.Config) (providers.Provider, error) {
			p, err := pl.Open(ctx, cfg)
			for i := 0; err != nil && providers.IsRetryable(err) && i < 3; i++ {
				p, err = pl.Open(ctx, cfg) // a plugin a subtest before froze or crashed
			}
			return p, err
		},
		CallTimeout: callTimeout,
		Secrets:     []string{hostSecret},
	})
}

// stopped reports whether process pid is stopped (SIGSTOP).
func stopped(pid int) bool {
	b, err := os.ReadFile("/proc/" + itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i > 0 && len(s) > i+2 && s[i+2] == 'T'
}

func itoa(n int) string { return fmtInt(n) }

func fmtInt(n int) string {
	if n == 0 {
		return "0"
	}
	var b []byte
	for ; n > 0; n /= 10 {
		b = append([]byte{byte('0' + n%10)}, b...)
	}
	return string(b)
}

// TestCloseDoesNotWaitOnAFrozenPlugin: go-plugin's Kill asks a plugin to shut
// down over RPC, without a deadline, before it kills it; the host used to do
// that holding its lock, so a frozen plugin hung every caller and Close. Now
// Close kills the process first and returns at once.
func TestCloseDoesNotWaitOnAFrozenPlugin(t *testing.T) {
	t.Parallel() // each test has its own plugin process
	pl := newPlugin(t, providers.Simulated, "hostile", &plugin.Options{CallTimeout: time.Minute})
	p := open(t, pl, providers.Config{"mode": "freeze_fetch"})
	pid := pl.Pid()
	fetched := make(chan error, 1)
	go func() {
		c, err := p.Fetch(context.Background(), providers.FetchRequest{SourceRef: hostile.Source, ObjectID: hostile.ObjectID(nil, 0)})
		if err == nil {
			t.Logf("fetched %+v at %s, pid now %d", c.Object, time.Now(), pl.Pid())
		}
		fetched <- err
	}()
	for deadline := time.Now().Add(10 * time.Second); !stopped(pid); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the plugin never froze")
		}
	}
	closed := make(chan struct{})
	start := time.Now()
	go func() { pl.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(3 * time.Second):
		t.Fatal("Close waits on a frozen plugin")
	}
	t.Logf("Close took %s", time.Since(start).Round(time.Millisecond))
	select {
	case err := <-fetched:
		if err == nil {
			t.Fatal("the fetch of a killed plugin succeeded")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the fetch in flight outlived the plugin's kill")
	}
	for deadline := time.Now().Add(5 * time.Second); syscall.Kill(pid, 0) == nil; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("plugin process %d still exists after Close", pid)
		}
	}
	if _, err := p.List(context.Background(), providers.ListRequest{SourceRef: hostile.Source}); !errors.Is(err, providers.ErrPluginUnavailable) {
		t.Fatalf("a call after Close: %v, want ErrPluginUnavailable", err)
	}
}

// TestCloseDoesNotWaitOnAPluginFrozenBeforeItsFirstFetch: the first fetch of a process opens
// its content channel (a call into the plugin) and dials a lane; the lane pool used to hold
// its lock across both, and a kill closes the pool under that lock.
func TestCloseDoesNotWaitOnAPluginFrozenBeforeItsFirstFetch(t *testing.T) {
	t.Parallel() // each test has its own plugin process
	pl := newPlugin(t, providers.Simulated, "hostile", &plugin.Options{CallTimeout: time.Minute})
	p := open(t, pl, providers.Config{})
	pid := pl.Pid()
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	fetched := make(chan error, 1)
	go func() {
		_, err := p.Fetch(context.Background(), providers.FetchRequest{SourceRef: hostile.Source, ObjectID: hostile.ObjectID(nil, 0)})
		fetched <- err
	}()
	time.Sleep(300 * time.Millisecond) // the fetch waits on the frozen plugin
	closed := make(chan struct{})
	go func() { pl.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(3 * time.Second):
		t.Fatal("Close waits on a frozen plugin")
	}
	select {
	case err := <-fetched:
		if err == nil {
			t.Fatal("the fetch of a killed plugin succeeded")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the fetch in flight outlived the plugin's kill")
	}
}

// TestInstanceCloseDoesNotWaitOnAFrozenPlugin: closing a provider instance (as a host does when
// it shuts down) is a call into the plugin; on a frozen plugin it gave up only after the whole
// call deadline (30 s by default), holding a SIGTERMed svc past its drain. It now waits the
// kill grace at most.
func TestInstanceCloseDoesNotWaitOnAFrozenPlugin(t *testing.T) {
	t.Parallel() // its own plugin process
	pl := newPlugin(t, providers.Simulated, "hostile", &plugin.Options{CallTimeout: time.Minute})
	for attempt := 1; ; attempt++ {
		p, err := pl.Open(context.Background(), providers.Config{})
		if err != nil {
			t.Fatal(err)
		}
		pid := pl.Pid()
		if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
		defer syscall.Kill(pid, syscall.SIGKILL)
		start := time.Now()
		closed := make(chan error, 1)
		go func() { closed <- providers.CloseProvider(p) }()
		select {
		case err := <-closed:
			took := time.Since(start)
			t.Logf("closing an instance of a frozen plugin took %s: %v", took.Round(time.Millisecond), err)
			if err == nil && attempt < 3 {
				// An answer without waiting means the instance was not on the process frozen:
				// the host had replaced its process between the Open and the freeze (a health
				// check missed on a loaded machine), which released the instance. Try again.
				syscall.Kill(pid, syscall.SIGCONT)
				continue
			}
		case <-time.After(5 * time.Second):
			t.Fatal("closing an instance waits on a frozen plugin")
		}
		// The frozen process is killed (the host probed it), so closing more instances is quick.
		for deadline := time.Now().Add(10 * time.Second); syscall.Kill(pid, 0) == nil; time.Sleep(20 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("frozen plugin process %d still exists after an instance's close timed out", pid)
			}
		}
		return
	}
}
