package plugin

import (
	"context"
	"crypto/sha256"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"svc.dev/svc/providers"
	"svc.dev/svc/providers/providertest"
	"svc.dev/svc/providers/simulated"
)

func skipWithoutLanes(t *testing.T) {
	if !lanesSupported {
		t.Skip("content lanes need Linux")
	}
}

// bigObject returns a simulated mail object larger than a lane's slots
// together, so a fetch reuses slots.
func bigObject(t *testing.T, p providers.Provider) providers.Object {
	t.Helper()
	for token := ""; ; {
		page, err := p.List(context.Background(), providers.ListRequest{SourceRef: "mail", PageToken: token, PageSize: 1000})
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range page.Objects {
			if o.SizeBytes > laneSlots*laneSlotSize+12345 {
				return o
			}
		}
		if token = page.NextPageToken; token == "" {
			t.Fatal("no object larger than a lane")
			return providers.Object{}
		}
	}
}

func sum(t *testing.T, p providers.Provider, o providers.Object) [32]byte {
	t.Helper()
	c, err := p.Fetch(context.Background(), providers.FetchRequest{SourceRef: "mail", ObjectID: o.ID, ExpectedVersion: o.Version})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Body.Close()
	h := sha256.New()
	if n, err := io.Copy(h, c.Body); err != nil || n != o.SizeBytes {
		t.Fatalf("read %d of %d bytes: %v", n, o.SizeBytes, err)
	}
	return [32]byte(h.Sum(nil))
}

func lanesOf(t *testing.T, pl *Plugin) *lanePool {
	t.Helper()
	pl.mu.Lock()
	defer pl.mu.Unlock()
	if pl.cur == nil {
		t.Fatal("no plugin process")
	}
	return pl.cur.lanes
}

// TestFetchUsesContentLane checks that content crosses on a lane, byte for
// byte, that a lane is reused after a clean fetch, and that one abandoned
// half way is closed rather than reused.
func TestFetchUsesContentLane(t *testing.T) {
	skipWithoutLanes(t)
	t.Parallel()
	ctx := context.Background()
	pl := NewPlugin(providers.Simulated, Command(os.Args[0], "plugin", "serve", "simulated"), nil)
	defer pl.Close()
	cfg := providers.Config{"objects": "300"}
	p, err := pl.Open(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	inproc, _ := simulated.New(ctx, cfg)
	o := bigObject(t, p)
	want := sum(t, inproc, o)
	for range 2 {
		if sum(t, p, o) != want {
			t.Fatal("content through the lane differs from in-process content")
		}
	}
	lp := lanesOf(t, pl)
	lp.mu.Lock()
	open, idle := lp.open, len(lp.idle)
	lp.mu.Unlock()
	if !lp.ok || open != 1 || idle != 1 {
		t.Fatalf("lanes: ok %v, %d open, %d idle; want one, reused", lp.ok, open, idle)
	}

	// Abandon a fetch half way: its lane is closed, the next fetch gets a
	// new one and the right bytes.
	c, err := p.Fetch(ctx, providers.FetchRequest{SourceRef: "mail", ObjectID: o.ID})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.CopyN(io.Discard, c.Body, laneSlotSize+7); err != nil {
		t.Fatal(err)
	}
	c.Body.Close()
	if _, err := c.Body.Read(make([]byte, 1)); err == nil {
		t.Fatal("read after close succeeded")
	}
	if sum(t, p, o) != want {
		t.Fatal("content after an abandoned fetch differs")
	}
	lp.mu.Lock()
	open, idle = lp.open, len(lp.idle)
	lp.mu.Unlock()
	if open != 1 || idle != 1 {
		t.Fatalf("lanes after an abandoned fetch: %d open, %d idle; want 1, 1", open, idle)
	}

	// A lane the plugin does not know (here: a host-side id it never
	// heard of) is dropped and the call made again without one.
	for _, op := range []string{"fetch", "list"} {
		lp.mu.Lock()
		lp.idle[0].id = 9999
		lp.mu.Unlock()
		if op == "fetch" {
			if sum(t, p, o) != want {
				t.Fatal("content after a rejected lane differs")
			}
		} else if _, err := p.List(ctx, providers.ListRequest{SourceRef: "mail", PageSize: 1000}); err != nil {
			t.Fatalf("list after a rejected lane: %v", err)
		}
		lp.mu.Lock()
		open, idle = lp.open, len(lp.idle)
		lp.mu.Unlock()
		if open != 0 || idle != 0 {
			t.Fatalf("%s: a rejected lane was kept: %d open, %d idle", op, open, idle)
		}
		if _, err := p.List(ctx, providers.ListRequest{SourceRef: "mail", PageSize: 1000}); err != nil { // one page, no read-ahead; opens a lane again
			t.Fatal(err)
		}
	}

	// The socket's directory goes with the process.
	dir := lp.dir
	pl.Kill()
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("lane directory %s after the process went: %v", dir, err)
	}
}

// TestListOnLane checks that listing pages cross on lanes and arrive as the
// provider produced them, and that a page too large for a lane comes in the
// response.
func TestListOnLane(t *testing.T) {
	skipWithoutLanes(t)
	t.Parallel()
	ctx := context.Background()
	pl := NewPlugin(providers.Simulated, Command(os.Args[0], "plugin", "serve", "simulated"), nil)
	defer pl.Close()
	cfg := providers.Config{"objects": "2100", "seed": "3"}
	p, err := pl.Open(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	inproc, _ := simulated.New(ctx, cfg)
	for _, src := range []string{"mail", "files"} {
		got, gotMarker := providertest.ListAll(ctx, t, p, src, 1000)
		want, wantMarker := providertest.ListAll(ctx, t, inproc, src, 1000)
		if len(got) != len(want) || gotMarker != wantMarker {
			t.Fatalf("%s: %d objects, marker %v; want %d, %v", src, len(got), gotMarker, len(want), wantMarker)
		}
		for i := range got {
			if !proto.Equal(objectToProto(&got[i]), objectToProto(&want[i])) {
				t.Fatalf("%s: object %d differs:\n%+v\n%+v", src, i, got[i], want[i])
			}
		}
	}
	lp := lanesOf(t, pl)
	lp.mu.Lock()
	open, idle := lp.open, len(lp.idle)
	lp.mu.Unlock()
	if open == 0 || idle != open {
		t.Fatalf("lanes after listing: %d open, %d idle", open, idle)
	}

	bad := NewPlugin(providers.Simulated, Command(os.Args[0], "plugin", "serve", "bad"), nil)
	defer bad.Close()
	hp, err := bad.Open(ctx, providers.Config{"mode": "huge_page"})
	if err != nil {
		t.Fatal(err)
	}
	page, err := hp.List(ctx, providers.ListRequest{SourceRef: "x"})
	if err != nil || len(page.Objects) != 5 || len(page.Objects[4].Metadata) != 256 {
		t.Fatalf("huge page: %d objects, %v", len(page.Objects), err)
	}
}

// laneHarness is a lane between an in-process laneServer (the test plays
// the plugin) and a host-side fetch body.
type laneHarness struct {
	body *fetchBody
	lane *pluginLane
}

func newLaneHarness(t *testing.T, want int64) laneHarness {
	t.Helper()
	skipWithoutLanes(t)
	var srv laneServer
	path := filepath.Join(t.TempDir(), "l.sock")
	token, err := srv.open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.close)
	pool := &lanePool{tried: true, ok: true, path: path, token: token, timeout: time.Second}
	t.Cleanup(pool.close)
	hl := pool.acquire(context.Background(), nil)
	if hl == nil {
		t.Fatal("no lane")
	}
	hl.begin() // transfer 1
	pl, err := srv.take(hl.id)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.put(pl) })
	p := &Plugin{name: providers.Simulated, opts: (&Options{CallTimeout: time.Second}).withDefaults()}
	sctx, cancel := context.WithCancel(context.Background())
	b := &fetchBody{
		r: &remote{p: p, desc: providers.Description{Name: providers.Simulated}}, proc: &process{lanes: pool},
		ctx: context.Background(), sctx: sctx, cancel: cancel, wd: newWatchdog(time.Second, cancel),
		wrap: func(err error) error { return err }, want: want, lane: hl, held: -1,
	}
	b.stopWake = context.AfterFunc(sctx, func() { _ = hl.conn.SetReadDeadline(time.Unix(1, 0)) })
	return laneHarness{body: b, lane: pl}
}

// TestLaneFramesAreChecked plays a plugin that breaks the lane protocol.
func TestLaneFramesAreChecked(t *testing.T) {
	cases := map[string]struct {
		want   int64
		frames []frame // the transfer is 1 unless set
	}{
		"slot out of range":      {10, []frame{{kind: frameData, slot: laneSlots, n: 10}}},
		"longer than a slot":     {laneSlotSize + 1, []frame{{kind: frameData, n: laneSlotSize + 1}}},
		"empty data frame":       {10, []frame{{kind: frameData}}},
		"more than declared":     {10, []frame{{kind: frameData, n: 6}, {kind: frameData, slot: 1, n: 6}}},
		"less than declared":     {10, []frame{{kind: frameData, n: 6}, {kind: frameEnd}}},
		"unknown frame":          {10, []frame{{kind: 9}}},
		"a free from the plugin": {10, []frame{{kind: frameFree}}},
		"a stale frame":          {10, []frame{{kind: frameData, n: 10, transfer: 7}}},
		"a stale end":            {10, []frame{{kind: frameData, n: 10}, {kind: frameEnd, transfer: 2}}},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			h := newLaneHarness(t, c.want)
			for _, f := range c.frames {
				if f.transfer == 0 {
					f.transfer = 1
				}
				if err := h.lane.frame(f); err != nil {
					t.Fatal(err)
				}
			}
			_, err := io.Copy(io.Discard, h.body)
			if !errors.Is(err, providers.ErrInvalidResponse) {
				t.Fatalf("got %v, want ErrInvalidResponse", err)
			}
			if h.body.lane != nil {
				t.Fatal("lane kept after a protocol error")
			}
		})
	}
}

// TestLaneCloseWakesRead checks that closing a body from another goroutine
// ends a Read blocked on the lane, without waiting for the call timeout.
func TestLaneCloseWakesRead(t *testing.T) {
	h := newLaneHarness(t, 10)
	done := make(chan error, 1)
	go func() {
		_, err := h.body.Read(make([]byte, 10))
		done <- err
	}()
	time.Sleep(50 * time.Millisecond)
	start := time.Now()
	h.body.Close()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("read succeeded")
		}
	case <-time.After(500 * time.Millisecond):
		t.Fatal("Close did not wake the read")
	}
	if d := time.Since(start); d > 500*time.Millisecond {
		t.Fatalf("Close took %s", d)
	}
}

// TestLaneHelloChecksToken checks that a lane is refused without the
// secret the plugin handed out over gRPC.
func TestLaneHelloChecksToken(t *testing.T) {
	skipWithoutLanes(t)
	var srv laneServer
	path := filepath.Join(t.TempDir(), "l.sock")
	token, err := srv.open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.close()
	bad := append([]byte(nil), token...)
	bad[0] ^= 1
	if l, err := dialLane(path, bad, 1, time.Second); err == nil {
		l.close()
		t.Fatal("lane with a wrong token accepted")
	}
	l, err := dialLane(path, token, 2, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer l.close()
	if _, err := dialLane(path, token, 2, time.Second); err == nil {
		t.Fatal("duplicate lane id accepted")
	}
	if _, err := srv.take(3); !laneRejected(statusFromError(err)) {
		t.Fatalf("unknown lane: %v", err)
	}
	if _, err := srv.open(path + "x"); err == nil {
		t.Fatal("second channel on another path accepted")
	}
}
