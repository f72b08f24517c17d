package plugin

import (
	"context"
	"fmt"
	"io"
	"os/exec"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	goplugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"svc.dev/svc/providers"
	"svc.dev/svc/providers/internal/pluginpb"
)

// Options configures a Plugin. The zero value gives the defaults.
type Options struct {
	// CallTimeout bounds every unary call, the wait for the first message
	// of a Fetch and every later chunk, and every chunk a Write sends.
	// Default 30 s.
	CallTimeout time.Duration
	// StartTimeout bounds starting the plugin process and its handshake.
	// Default 20 s.
	StartTimeout time.Duration
	// RestartDelay is the least time between two starts of the plugin, so
	// a plugin that crashes at once does not spin. Default 200 ms.
	RestartDelay time.Duration
	// LogOutput receives the plugin's stderr and the transport's log lines.
	// Nil discards them.
	LogOutput io.Writer
}

func (o *Options) withDefaults() Options {
	var c Options
	if o != nil {
		c = *o
	}
	if c.CallTimeout <= 0 {
		c.CallTimeout = 30 * time.Second
	}
	if c.StartTimeout <= 0 {
		c.StartTimeout = 20 * time.Second
	}
	if c.RestartDelay <= 0 {
		c.RestartDelay = 200 * time.Millisecond
	}
	if c.LogOutput == nil {
		c.LogOutput = io.Discard
	}
	return c
}

// Command returns a command factory for a plugin executable and its
// arguments, for NewPlugin.
func Command(path string, args ...string) func() *exec.Cmd {
	return func() *exec.Cmd { return exec.Command(path, args...) }
}

// Plugin runs one provider plugin executable: at most one process at a
// time, started on first use and again after a crash. It is safe for
// concurrent use and is a providers.Factory through its Open method.
type Plugin struct {
	name   providers.Name
	newCmd func() *exec.Cmd
	opts   Options

	mu        sync.Mutex
	cur       *process
	gen       uint64
	lastStart time.Time
	closed    bool
	starts    atomic.Int64
}

// process is one running plugin process.
type process struct {
	gen    uint64
	client *goplugin.Client
	rpc    *grpcClient
	desc   providers.Description
	lanes  *lanePool // content lanes to it, opened on the first fetch
}

// stop kills the process and closes its content lanes.
func (pr *process) stop() {
	pr.client.Kill()
	pr.lanes.close()
}

// NewPlugin returns a host for the plugin that newCmd starts, which must
// serve the provider called name. Nothing starts until first use.
func NewPlugin(name providers.Name, newCmd func() *exec.Cmd, opts *Options) *Plugin {
	return &Plugin{name: name, newCmd: newCmd, opts: opts.withDefaults()}
}

// Name returns the provider name the plugin serves.
func (p *Plugin) Name() providers.Name { return p.name }

// Starts returns how many times a plugin process was started.
func (p *Plugin) Starts() int { return int(p.starts.Load()) }

// Pid returns the current plugin process id, or 0 when none runs.
func (p *Plugin) Pid() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cur == nil || p.cur.client.Exited() {
		return 0
	}
	if rc := p.cur.client.ReattachConfig(); rc != nil {
		return rc.Pid
	}
	return 0
}

// Close stops the plugin process; later calls fail with
// ErrPluginUnavailable.
func (p *Plugin) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	if p.cur != nil {
		p.cur.stop()
		p.cur = nil
	}
	return nil
}

// Describe returns the plugin's description, starting it if needed.
func (p *Plugin) Describe(ctx context.Context) (providers.Description, error) {
	proc, err := p.get(ctx)
	if err != nil {
		return providers.Description{}, &providers.Error{Op: "describe", Provider: p.name, Err: err}
	}
	return proc.desc, nil
}

// Open opens a provider instance in the plugin process. The returned
// provider survives plugin restarts: it re-opens itself, with cfg, in the
// new process.
func (p *Plugin) Open(ctx context.Context, cfg providers.Config) (providers.Provider, error) {
	proc, err := p.get(ctx)
	if err != nil {
		return nil, err
	}
	r := &remote{p: p, cfg: cfg, desc: proc.desc}
	if _, _, err := r.bind(ctx); err != nil {
		return nil, err
	}
	return r, nil
}

// get returns the live process, starting one if there is none.
func (p *Plugin) get(ctx context.Context) (*process, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil, fmt.Errorf("plugin %s: closed: %w", p.name, providers.ErrPluginUnavailable)
	}
	if p.cur != nil && !p.cur.client.Exited() {
		return p.cur, nil
	}
	if p.cur != nil {
		p.cur.stop()
		p.cur = nil
	}
	if wait := p.opts.RestartDelay - time.Since(p.lastStart); wait > 0 && !p.lastStart.IsZero() {
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	p.lastStart = time.Now()
	p.starts.Add(1)
	proc, err := p.start(ctx)
	if err != nil {
		return nil, err
	}
	p.cur = proc
	return proc, nil
}

func (p *Plugin) start(ctx context.Context) (*process, error) {
	logger := hclog.New(&hclog.LoggerOptions{Name: "plugin." + string(p.name), Output: p.opts.LogOutput, Level: hclog.Info})
	client := goplugin.NewClient(&goplugin.ClientConfig{
		HandshakeConfig:  Handshake,
		VersionedPlugins: pluginSet(nil),
		Cmd:              p.newCmd(),
		AllowedProtocols: []goplugin.Protocol{goplugin.ProtocolGRPC},
		AutoMTLS:         true,
		StartTimeout:     p.opts.StartTimeout,
		Logger:           logger,
		GRPCDialOptions:  dialOptions(),
	})
	fail := func(err error) (*process, error) {
		client.Kill()
		return nil, fmt.Errorf("start plugin %s: %w: %v", p.name, providers.ErrPluginUnavailable, err)
	}
	cp, err := client.Client()
	if err != nil {
		return fail(err)
	}
	raw, err := cp.Dispense(pluginName)
	if err != nil {
		return fail(err)
	}
	rpc, ok := raw.(*grpcClient)
	if !ok {
		return fail(fmt.Errorf("unexpected client type %T", raw))
	}
	cctx, cancel := context.WithTimeout(ctx, p.opts.CallTimeout)
	defer cancel()
	resp, err := rpc.Describe(cctx, &pluginpb.DescribeRequest{})
	if err != nil {
		return fail(fmt.Errorf("describe: %w", err))
	}
	if err := validate(resp); err != nil {
		return fail(err)
	}
	desc := descriptionFromProto(resp)
	if p.name != "" && desc.Name != p.name {
		return fail(fmt.Errorf("plugin describes itself as %q", desc.Name))
	}
	p.gen++
	return &process{gen: p.gen, client: client, rpc: rpc, desc: desc, lanes: &lanePool{timeout: p.opts.CallTimeout}}, nil
}

// Kill kills the current plugin process as a crash would; the next call
// starts a new one. It is meant for tests and for an operator's recovery.
func (p *Plugin) Kill() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cur != nil {
		p.cur.stop()
		p.cur = nil
	}
}

// drop forgets proc (after killing it) if it is still current.
func (p *Plugin) drop(proc *process) {
	p.mu.Lock()
	defer p.mu.Unlock()
	proc.stop()
	if p.cur == proc {
		p.cur = nil
	}
}

// classify turns a failed call's error into the typed error callers see.
// ctx is the caller's context.
func (p *Plugin) classify(ctx context.Context, proc *process, err error) error {
	st, ok := status.FromError(err)
	if !ok {
		return err // already ours (a validation failure)
	}
	if perr := errorFromStatus(st); perr != nil {
		return perr
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if exited(proc, 500*time.Millisecond) {
		p.drop(proc)
		return fmt.Errorf("%w: %s", providers.ErrPluginCrashed, st.Message())
	}
	switch st.Code() {
	case codes.DeadlineExceeded, codes.Canceled:
		go p.probe(proc)
		return fmt.Errorf("%w after %s", providers.ErrPluginTimeout, p.opts.CallTimeout)
	case codes.Unavailable, codes.Internal:
		// The connection broke but the process still runs: it is of no use.
		p.drop(proc)
		return fmt.Errorf("%w: %s", providers.ErrPluginCrashed, st.Message())
	}
	return fmt.Errorf("plugin %s: %s: %s", p.name, st.Code(), st.Message())
}

// probe checks a plugin that let a call time out; one that does not answer
// a Describe promptly is hung and is killed, so the next call restarts it.
func (p *Plugin) probe(proc *process) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if _, err := proc.rpc.Describe(ctx, &pluginpb.DescribeRequest{}); err != nil {
		p.drop(proc)
	}
}

// exited waits up to d for proc to be seen as exited: the connection can
// break a moment before the process is reaped.
func exited(proc *process, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for {
		if proc.client.Exited() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(10 * time.Millisecond)
	}
}
