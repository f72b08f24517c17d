package plugin

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
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
	// Env is added to the plugin's environment ("KEY=value" entries). A
	// plugin does not inherit the host's environment: it gets the variables
	// PluginEnv keeps, these, and go-plugin's handshake variables. A
	// command whose Env is already set (by the newCmd passed to NewPlugin)
	// is left as it is.
	Env []string
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

// killGrace is how long a probe waits for a plugin that let a call time out
// before the host kills it.
const killGrace = 2 * time.Second

// Command returns a command factory for a plugin executable and its
// arguments, for NewPlugin.
func Command(path string, args ...string) func() *exec.Cmd {
	return func() *exec.Cmd { return exec.Command(path, args...) }
}

// pluginEnvNames are the host variables a plugin keeps: where it may write
// (HOME, TMPDIR, XDG_DATA_HOME for the freedesktop trash), how text and time
// read, how it reaches the network (proxies, CA certificates), and the Go
// runtime's own settings. Everything else, the host's secrets included
// (SVC_STRIPE_SECRET_KEY, database URLs, cloud credentials), stays behind.
var pluginEnvNames = []string{
	"PATH", "HOME", "USER", "LOGNAME", "TMPDIR", "TZ", "LANG", "LC_ALL", "LC_CTYPE", "LC_MESSAGES",
	"XDG_DATA_HOME", "XDG_RUNTIME_DIR", "SSL_CERT_FILE", "SSL_CERT_DIR",
	"HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "http_proxy", "https_proxy", "no_proxy",
	"GOGC", "GOMEMLIMIT", "GOMAXPROCS", "GODEBUG", "GOTRACEBACK", "GOCOVERDIR",
}

// PluginEnvPrefix names the host variables meant for plugins: every
// variable whose name starts with it is passed on (SVC_PLUGIN_DEBUG_DIR).
const PluginEnvPrefix = "SVC_PLUGIN_"

// PluginEnv returns the environment a plugin process starts with, from the
// host's environment env (os.Environ()): only the variables named in
// docs/security.md ("What a plugin can reach") and those starting with
// PluginEnvPrefix, then extra.
func PluginEnv(env []string, extra ...string) []string {
	out := []string{}
	for _, kv := range env {
		k, _, ok := strings.Cut(kv, "=")
		if ok && (slices.Contains(pluginEnvNames, k) || strings.HasPrefix(k, PluginEnvPrefix)) {
			out = append(out, kv)
		}
	}
	return append(out, extra...)
}

// Plugin runs one provider plugin executable: at most one process at a
// time, started on first use and again after a crash. It is safe for
// concurrent use and is a providers.Factory through its Open method.
//
// No lock is held across a call into the plugin or a wait on its process:
// a start runs in its own goroutine and callers wait for it with their own
// context, and stopping a process kills it first (a frozen plugin cannot
// delay a kill) and reaps it in the background.
type Plugin struct {
	name   providers.Name
	newCmd func() *exec.Cmd
	opts   Options

	mu        sync.Mutex
	cur       *process
	starting  *startAttempt // the start in flight, if any
	gen       uint64
	lastStart time.Time
	closed    bool
	starts    atomic.Int64
}

// startAttempt is a start of the plugin process that callers wait on.
type startAttempt struct {
	done chan struct{}
	proc *process
	err  error
}

// process is one running plugin process.
type process struct {
	gen    uint64
	client *goplugin.Client
	cmd    *exec.Cmd
	rpc    *grpcClient
	desc   providers.Description
	lanes  *lanePool // content lanes to it, opened on the first fetch

	stopOnce sync.Once
	reaped   chan struct{} // closed once go-plugin has cleaned up after it
}

// stop kills the process and closes its content lanes, without waiting on
// the plugin: the process gets SIGKILL first (go-plugin's Kill would first
// ask it to shut down over RPC and wait for it, which a frozen plugin never
// answers), and go-plugin's clean-up (reaping, the socket directory) runs in
// the background. It is safe to call more than once and from any goroutine.
func (pr *process) stop() {
	pr.stopOnce.Do(func() {
		if pr.cmd != nil && pr.cmd.Process != nil {
			_ = pr.cmd.Process.Kill()
		}
		pr.lanes.close()
		go func() {
			defer close(pr.reaped)
			pr.client.Kill() // the process is gone: its Shutdown RPC fails at once
		}()
	})
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
	cur := p.cur
	p.mu.Unlock()
	if cur == nil || cur.client.Exited() || cur.cmd.Process == nil {
		return 0
	}
	return cur.cmd.Process.Pid
}

// Close stops the plugin process; later calls fail with
// ErrPluginUnavailable. It kills the process without waiting on the plugin,
// then waits at most a second for the clean-up after it.
func (p *Plugin) Close() error {
	p.mu.Lock()
	p.closed = true
	cur := p.cur
	p.cur = nil
	p.mu.Unlock()
	if cur != nil {
		cur.stop()
		select {
		case <-cur.reaped:
		case <-time.After(time.Second):
		}
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

// get returns the live process, starting one if there is none. The start
// runs in its own goroutine, bounded by StartTimeout and CallTimeout, so a
// caller that gives up (ctx) neither holds others up nor fails their start.
func (p *Plugin) get(ctx context.Context) (*process, error) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil, fmt.Errorf("plugin %s: closed: %w", p.name, providers.ErrPluginUnavailable)
	}
	if p.cur != nil && !p.cur.client.Exited() {
		cur := p.cur
		p.mu.Unlock()
		return cur, nil
	}
	if p.cur != nil {
		go p.cur.stop()
		p.cur = nil
	}
	a := p.starting
	if a == nil {
		var wait time.Duration
		if !p.lastStart.IsZero() {
			wait = p.opts.RestartDelay - time.Since(p.lastStart)
		}
		p.lastStart = time.Now().Add(max(wait, 0))
		p.starts.Add(1)
		a = &startAttempt{done: make(chan struct{})}
		p.starting = a
		go p.runStart(a, wait)
	}
	p.mu.Unlock()
	select {
	case <-a.done:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	// A process that died at once fails the call as a crash; the next call starts
	// another (after RestartDelay).
	return a.proc, a.err
}

// runStart starts a process for a, after wait, and makes it current.
func (p *Plugin) runStart(a *startAttempt, wait time.Duration) {
	if wait > 0 {
		time.Sleep(wait)
	}
	proc, err := p.start(context.Background())
	p.mu.Lock()
	p.starting = nil
	switch {
	case err != nil:
	case p.closed:
		go proc.stop()
		proc, err = nil, fmt.Errorf("plugin %s: closed: %w", p.name, providers.ErrPluginUnavailable)
	default:
		p.gen++
		proc.gen = p.gen
		p.cur = proc
	}
	a.proc, a.err = proc, err
	p.mu.Unlock()
	close(a.done)
}

func (p *Plugin) start(ctx context.Context) (*process, error) {
	logger := hclog.New(&hclog.LoggerOptions{Name: "plugin." + string(p.name), Output: p.opts.LogOutput, Level: hclog.Info})
	cmd := p.newCmd()
	if cmd.Env == nil {
		cmd.Env = PluginEnv(os.Environ(), p.opts.Env...)
	}
	client := goplugin.NewClient(&goplugin.ClientConfig{
		HandshakeConfig:  Handshake,
		VersionedPlugins: pluginSet(nil),
		Cmd:              cmd,
		SkipHostEnv:      true,
		AllowedProtocols: []goplugin.Protocol{goplugin.ProtocolGRPC},
		AutoMTLS:         true,
		StartTimeout:     p.opts.StartTimeout,
		Logger:           logger,
		GRPCDialOptions:  dialOptions(),
	})
	proc := &process{client: client, cmd: cmd, reaped: make(chan struct{}), lanes: &lanePool{timeout: p.opts.CallTimeout}}
	fail := func(err error) (*process, error) {
		proc.stop()
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
	proc.rpc, proc.desc = rpc, desc
	return proc, nil
}

// Kill kills the current plugin process as a crash would; the next call
// starts a new one. It is meant for tests and for an operator's recovery.
// It does not wait on the plugin.
func (p *Plugin) Kill() {
	p.mu.Lock()
	cur := p.cur
	p.cur = nil
	p.mu.Unlock()
	if cur != nil {
		cur.stop()
	}
}

// drop forgets proc (after killing it) if it is still current.
func (p *Plugin) drop(proc *process) {
	p.mu.Lock()
	if p.cur == proc {
		p.cur = nil
	}
	p.mu.Unlock()
	proc.stop()
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
	case codes.ResourceExhausted:
		// A message over the protocol's size limit (a page of millions of
		// objects): the plugin answered, but not within the protocol.
		return fmt.Errorf("%w: %s", providers.ErrInvalidResponse, st.Message())
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
	ctx, cancel := context.WithTimeout(context.Background(), killGrace)
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
