package plugin

import (
	"context"
	"maps"
	"sync"
	"time"

	"svc.dev/svc/providers"
	"svc.dev/svc/providers/internal/pluginpb"
)

// credentialsEvery is the least time between two credential updates the host applies from one
// instance: a vendor refreshes a token about once an hour, so anything faster is a plugin
// gone wrong, and only its newest update is kept.
var credentialsEvery = time.Second

// watch is the host's side of an instance's WatchCredentials stream.
type watch struct {
	mu     sync.Mutex
	fn     func(providers.Config)
	gen    uint64             // process generation the stream runs in
	cancel context.CancelFunc // ends the stream
}

// WatchCredentials registers fn for the credentials the plugin reports
// (providers.CredentialWatcher). Each report also replaces the credentials the instance is
// opened with again after a plugin restart, so a reopened instance starts from the newest
// token, not from one the vendor has since rotated away. Without CapCredentials it does
// nothing.
func (r *remote) WatchCredentials(fn func(providers.Config)) {
	if !r.Supports(providers.CapCredentials) {
		return
	}
	r.watch.mu.Lock()
	r.watch.fn = fn
	if fn == nil && r.watch.cancel != nil {
		r.watch.cancel()
		r.watch.cancel, r.watch.gen = nil, 0
	}
	r.watch.mu.Unlock()
	if fn == nil {
		return
	}
	r.mu.Lock()
	gen, id := r.gen, r.id
	r.mu.Unlock()
	r.p.mu.Lock()
	proc := r.p.cur
	r.p.mu.Unlock()
	if proc != nil && proc.gen == gen && id != 0 {
		r.watchIn(proc, id)
	}
}

// watchIn starts watching the instance id in proc, unless no one asked for it or a watch of
// that process runs already. bind calls it for each process the instance is opened in.
func (r *remote) watchIn(proc *process, id uint64) {
	w := &r.watch
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.fn == nil || (w.cancel != nil && w.gen == proc.gen) {
		return
	}
	if w.cancel != nil {
		w.cancel()
	}
	ctx, cancel := context.WithCancel(context.Background())
	w.cancel, w.gen = cancel, proc.gen
	go r.watchStream(ctx, proc, id)
}

// watchStream receives the instance's credentials until ctx ends or the process is no longer
// the instance's; a stream that breaks while the process lives is opened again.
func (r *remote) watchStream(ctx context.Context, proc *process, id uint64) {
	for ctx.Err() == nil {
		stream, err := proc.rpc.WatchCredentials(ctx, &pluginpb.WatchCredentialsRequest{InstanceId: id})
		for err == nil {
			var m *pluginpb.WatchCredentialsResponse
			if m, err = stream.Recv(); err != nil {
				break
			}
			if validate(m) != nil {
				continue // not credentials: ignored, never stored
			}
			r.applyCredentials(m.GetConfig())
			select { // at most one update a credentialsEvery
			case <-time.After(credentialsEvery):
			case <-ctx.Done():
				return
			}
		}
		r.mu.Lock()
		current := r.gen == proc.gen && !r.closed
		r.mu.Unlock()
		r.p.mu.Lock()
		current = current && r.p.cur == proc
		r.p.mu.Unlock()
		if !current {
			return // a new process's bind watches again
		}
		select {
		case <-time.After(credentialsEvery):
		case <-ctx.Done():
		}
	}
}

// applyCredentials makes cfg part of what the instance is opened with, then tells the
// watcher.
func (r *remote) applyCredentials(cfg map[string]string) {
	r.mu.Lock()
	next := maps.Clone(r.cfg)
	if next == nil {
		next = providers.Config{}
	}
	maps.Copy(next, cfg)
	r.cfg = next
	r.mu.Unlock()
	r.watch.mu.Lock()
	fn := r.watch.fn
	r.watch.mu.Unlock()
	if fn != nil {
		fn(providers.Config(maps.Clone(cfg)))
	}
}

// stopWatch ends the instance's watch as it closes.
func (r *remote) stopWatch() {
	r.watch.mu.Lock()
	defer r.watch.mu.Unlock()
	r.watch.fn = nil
	if r.watch.cancel != nil {
		r.watch.cancel()
		r.watch.cancel = nil
	}
}
