package plugin

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"svc.dev/svc/providers"
	"svc.dev/svc/providers/internal/pluginpb"
)

// remote is a provider instance in a plugin process.
type remote struct {
	p    *Plugin
	cfg  providers.Config
	desc providers.Description

	mu      sync.Mutex
	gen     uint64 // process generation id belongs to
	id      uint64
	closed  bool
	opening *openAttempt // the Open in flight, if any

	pfMu  sync.Mutex
	ahead []*prefetched // pages read ahead, oldest first

	watch watch // the credentials watch (credentials.go)
}

var (
	_ providers.Provider          = (*remote)(nil)
	_ providers.Trasher           = (*remote)(nil)
	_ providers.BatchTrasher      = (*remote)(nil)
	_ providers.BatchFetcher      = (*remote)(nil)
	_ providers.Remover           = (*remote)(nil)
	_ providers.Untrasher         = (*remote)(nil)
	_ providers.Writer            = (*remote)(nil)
	_ providers.Quotaer           = (*remote)(nil)
	_ providers.CapabilityMasker  = (*remote)(nil)
	_ providers.CredentialWatcher = (*remote)(nil)
)

// Supports reports whether the plugin declared capability c.
func (r *remote) Supports(c providers.Capability) bool {
	for _, have := range r.desc.Capabilities {
		if have == c {
			return true
		}
	}
	return false
}

// bind returns the live process and this instance's id in it, opening the
// instance there if the process is new. Concurrent binds share one Open
// call, which runs with no lock held.
func (r *remote) bind(ctx context.Context) (*process, uint64, error) {
	for {
		proc, err := r.p.get(ctx)
		if err != nil {
			return nil, 0, err
		}
		r.mu.Lock()
		if r.closed {
			r.mu.Unlock()
			return nil, 0, fmt.Errorf("provider closed: %w", providers.ErrInvalidArgument)
		}
		if r.gen == proc.gen && r.id != 0 {
			id := r.id
			r.mu.Unlock()
			return proc, id, nil
		}
		if o := r.opening; o != nil && o.gen == proc.gen {
			r.mu.Unlock()
			select {
			case <-o.done:
			case <-ctx.Done():
				return nil, 0, ctx.Err()
			}
			if o.err != nil && !errors.Is(o.err, context.Canceled) && !errors.Is(o.err, context.DeadlineExceeded) {
				return nil, 0, o.err
			}
			continue // opened (or the opener gave up): look again
		}
		o := &openAttempt{gen: proc.gen, done: make(chan struct{})}
		r.opening = o
		r.mu.Unlock()
		id, err := r.open(ctx, proc)
		r.mu.Lock()
		if err == nil && proc.gen >= r.gen {
			r.gen, r.id = proc.gen, id
		}
		o.err = err
		if r.opening == o {
			r.opening = nil
		}
		r.mu.Unlock()
		close(o.done)
		if err != nil {
			return nil, 0, err
		}
		r.watchIn(proc, id)
		return proc, id, nil
	}
}

// openAttempt is an Open of the instance in a process that binds wait on.
type openAttempt struct {
	gen  uint64
	done chan struct{}
	err  error
}

// open opens the instance in proc under the call deadline.
func (r *remote) open(ctx context.Context, proc *process) (uint64, error) {
	cctx, cancel := context.WithTimeout(ctx, r.p.opts.CallTimeout)
	defer cancel()
	r.mu.Lock()
	cfg := r.cfg // replaced, never changed in place, by applyCredentials
	r.mu.Unlock()
	resp, err := proc.rpc.Open(cctx, &pluginpb.OpenRequest{Config: cfg})
	if err != nil {
		return 0, r.p.classify(ctx, proc, err)
	}
	if err := validate(resp); err != nil {
		return 0, err
	}
	return resp.GetInstanceId(), nil
}

// call runs one unary exchange with the instance under the call deadline.
func (r *remote) call(ctx context.Context, op, objectID string, fn func(ctx context.Context, proc *process, id uint64) error) error {
	proc, id, err := r.bind(ctx)
	if err == nil {
		cctx, cancel := context.WithTimeout(ctx, r.p.opts.CallTimeout)
		err = fn(cctx, proc, id)
		cancel()
		if err != nil {
			err = r.p.classify(ctx, proc, err)
		}
	}
	if err != nil {
		return &providers.Error{Op: op, Provider: r.desc.Name, ObjectID: objectID, Err: err}
	}
	return nil
}

func (r *remote) unsupported(op string, c providers.Capability) error {
	if r.Supports(c) {
		return nil
	}
	return &providers.Error{Op: op, Provider: r.desc.Name, Err: providers.ErrUnsupported}
}

func (r *remote) Describe(context.Context) (providers.Description, error) { return r.desc, nil }

// Close releases the instance in the plugin process.
func (r *remote) Close() error {
	r.pfMu.Lock()
	for _, pf := range r.ahead {
		pf.cancel()
	}
	r.ahead = nil
	r.pfMu.Unlock()
	r.stopWatch()
	r.mu.Lock()
	gen, id := r.gen, r.id
	r.closed = true
	r.mu.Unlock()
	r.p.mu.Lock()
	proc := r.p.cur
	r.p.mu.Unlock()
	if proc == nil || proc.gen != gen || id == 0 {
		return nil
	}
	// Closing an instance is clean-up, done as a host shuts down: it waits killGrace at most,
	// not a whole call deadline, on a plugin that does not answer (a frozen one is then
	// probed and killed, which releases the instance anyway).
	ctx, cancel := context.WithTimeout(context.Background(), min(r.p.opts.CallTimeout, killGrace))
	defer cancel()
	_, err := proc.rpc.Close(ctx, &pluginpb.CloseRequest{InstanceId: id})
	if err != nil {
		if ctx.Err() != nil {
			go r.p.probe(proc) // killed if it is hung: the next closes need not wait
		}
		return &providers.Error{Op: "close", Provider: r.desc.Name, Err: r.p.classify(ctx, proc, err)}
	}
	return nil
}
