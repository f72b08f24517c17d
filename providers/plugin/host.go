package plugin

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os/exec"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"buf.build/go/protovalidate"
	"github.com/hashicorp/go-hclog"
	goplugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

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

var validator = sync.OnceValues(func() (protovalidate.Validator, error) { return protovalidate.New() })

// validate applies the protocol's protovalidate rules to a plugin response.
func validate(m proto.Message) error {
	v, err := validator()
	if err != nil {
		return fmt.Errorf("%w: validator: %v", providers.ErrInvalidResponse, err)
	}
	if err := v.Validate(m); err != nil {
		return fmt.Errorf("%w: %v", providers.ErrInvalidResponse, err)
	}
	return nil
}

// validateList validates a page: the page's own fields, then its objects,
// split across GOMAXPROCS goroutines when the page is large, because
// protovalidate's reflective walk (a few microseconds an object) is most of
// the host's cost of a listing through the boundary. It also applies
// checkItems to every object.
func validateList(page proto.Message, objects []*pluginpb.Object) error {
	if err := validate(page); err != nil {
		return err
	}
	workers := min(runtime.GOMAXPROCS(0), len(objects)/128)
	if workers <= 1 {
		return validateObjects(objects, 0)
	}
	errs := make([]error, workers)
	var wg sync.WaitGroup
	per := (len(objects) + workers - 1) / workers
	for w := range workers {
		lo, hi := w*per, min((w+1)*per, len(objects))
		wg.Go(func() { errs[w] = validateObjects(objects[lo:hi], lo) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

func validateObjects(objects []*pluginpb.Object, offset int) error {
	for i, o := range objects {
		if err := validate(o); err != nil {
			return fmt.Errorf("objects[%d]: %w", offset+i, err)
		}
		if err := checkItems(o); err != nil {
			return fmt.Errorf("objects[%d]: %w", offset+i, err)
		}
	}
	return nil
}

// checkItems applies the per-item length limits the protocol documents on
// Object but leaves out of the protovalidate rules (see provider.proto).
func checkItems(o *pluginpb.Object) error {
	long := func(items []string, limit int) bool {
		for _, s := range items {
			if len(s) > limit {
				return true
			}
		}
		return false
	}
	bad := long(o.GetContainers(), 4096)
	if h := o.GetMessage(); h != nil {
		bad = bad || long(h.GetTo(), 2048) || long(h.GetCc(), 2048)
	}
	for k, v := range o.GetMetadata() {
		bad = bad || k == "" || len(k) > 256 || len(v) > 4096
	}
	if bad {
		return fmt.Errorf("%w: object %q: a container, recipient or metadata entry exceeds its length limit", providers.ErrInvalidResponse, o.GetId())
	}
	if hasControl(o.GetId()) || hasControl(o.GetParentId()) || hasControl(o.GetVersion()) {
		return fmt.Errorf("%w: object %q: control character in id, parent_id or version", providers.ErrInvalidResponse, o.GetId())
	}
	return nil
}

func hasControl(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == 0x7f {
			return true
		}
	}
	return false
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

// remote is a provider instance in a plugin process.
type remote struct {
	p    *Plugin
	cfg  providers.Config
	desc providers.Description

	mu     sync.Mutex
	gen    uint64 // process generation id belongs to
	id     uint64
	closed bool

	pfMu  sync.Mutex
	ahead []*prefetched // pages read ahead, oldest first
}

var (
	_ providers.Provider         = (*remote)(nil)
	_ providers.Trasher          = (*remote)(nil)
	_ providers.BatchTrasher     = (*remote)(nil)
	_ providers.BatchFetcher     = (*remote)(nil)
	_ providers.Remover          = (*remote)(nil)
	_ providers.Untrasher        = (*remote)(nil)
	_ providers.Writer           = (*remote)(nil)
	_ providers.Quotaer          = (*remote)(nil)
	_ providers.CapabilityMasker = (*remote)(nil)
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
// instance there if the process is new.
func (r *remote) bind(ctx context.Context) (*process, uint64, error) {
	proc, err := r.p.get(ctx)
	if err != nil {
		return nil, 0, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil, 0, fmt.Errorf("provider closed: %w", providers.ErrInvalidArgument)
	}
	if r.gen == proc.gen && r.id != 0 {
		return proc, r.id, nil
	}
	cctx, cancel := context.WithTimeout(ctx, r.p.opts.CallTimeout)
	defer cancel()
	resp, err := proc.rpc.Open(cctx, &pluginpb.OpenRequest{Config: r.cfg})
	if err != nil {
		return nil, 0, r.p.classify(ctx, proc, err)
	}
	if err := validate(resp); err != nil {
		return nil, 0, err
	}
	r.gen, r.id = proc.gen, resp.GetInstanceId()
	return proc, r.id, nil
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
	ctx, cancel := context.WithTimeout(context.Background(), r.p.opts.CallTimeout)
	defer cancel()
	_, err := proc.rpc.Close(ctx, &pluginpb.CloseRequest{InstanceId: id})
	if err != nil {
		return &providers.Error{Op: "close", Provider: r.desc.Name, Err: r.p.classify(ctx, proc, err)}
	}
	return nil
}

func (r *remote) List(ctx context.Context, req providers.ListRequest) (providers.Page, error) {
	if pf := r.takePrefetch(req); pf != nil {
		select {
		case <-pf.done:
			if pf.err == nil || !errors.Is(pf.err, context.Canceled) {
				if pf.err == nil {
					r.readAhead(req, pf.page.NextPageToken)
				}
				return pf.page, pf.err
			}
		case <-ctx.Done():
			return providers.Page{}, &providers.Error{Op: "list", Provider: r.desc.Name, Err: ctx.Err()}
		}
	}
	return r.list(ctx, req)
}

// maxAhead is how many pages a listing reads ahead through the boundary.
const maxAhead = 2

// prefetched is a page read ahead. A listing through the plugin boundary
// asks the plugin for page N+1 as soon as page N's token arrives, before
// page N is decoded, so the plugin produces the next page while the host
// decodes and checks this one and while the caller works on the one before:
// the two processes work in parallel. List is side-effect free by contract,
// so reading ahead is safe; at most maxAhead pages per provider instance
// are held.
type prefetched struct {
	req    providers.ListRequest
	ctx    context.Context
	done   chan struct{}
	cancel context.CancelFunc
	page   providers.Page
	err    error
}

// readAhead starts reading the page after prev, whose next page token is
// token, unless it is being read already or maxAhead pages are.
func (r *remote) readAhead(prev providers.ListRequest, token string) {
	if token == "" {
		return
	}
	req := providers.ListRequest{SourceRef: prev.SourceRef, PageToken: token, PageSize: prev.PageSize}
	pf := r.reserveAhead(req)
	if pf == nil {
		return
	}
	// Send now if the plugin is up (never wait here for a restart: this
	// runs while the page before is still being decoded).
	var call *listCall
	if r.live() {
		call = r.startList(pf.ctx, req, true)
	}
	go func() {
		defer close(pf.done)
		if call == nil {
			call = r.startList(pf.ctx, req, true)
		}
		pf.page, pf.err = call.finish()
	}()
}

// reserveAhead records a read-ahead of req, or returns nil if there is one
// already or maxAhead are held.
func (r *remote) reserveAhead(req providers.ListRequest) *prefetched {
	r.pfMu.Lock()
	defer r.pfMu.Unlock()
	if len(r.ahead) >= maxAhead {
		return nil
	}
	for _, pf := range r.ahead {
		if pf.req == req {
			return nil
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	pf := &prefetched{req: req, ctx: ctx, done: make(chan struct{}), cancel: cancel}
	r.ahead = append(r.ahead, pf)
	return pf
}

// live reports whether the instance is open in a running plugin process,
// so that a call needs no start or re-open first.
func (r *remote) live() bool {
	r.p.mu.Lock()
	cur := r.p.cur
	r.p.mu.Unlock()
	if cur == nil || cur.client.Exited() {
		return false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return !r.closed && r.gen == cur.gen && r.id != 0
}

// takePrefetch returns the read-ahead page for req, if one was started, and
// drops the pages read ahead for anything else.
func (r *remote) takePrefetch(req providers.ListRequest) *prefetched {
	r.pfMu.Lock()
	defer r.pfMu.Unlock()
	for i, pf := range r.ahead {
		if pf.req == req {
			for _, old := range r.ahead[:i] {
				old.cancel()
			}
			r.ahead = append(r.ahead[:0], r.ahead[i+1:]...)
			return pf
		}
	}
	for _, old := range r.ahead {
		old.cancel()
	}
	r.ahead = r.ahead[:0]
	return nil
}

func (r *remote) list(ctx context.Context, req providers.ListRequest) (providers.Page, error) {
	return r.startList(ctx, req, true).finish()
}

// listCall is a List call sent and not yet answered. A read-ahead sends
// its request at once, from the goroutine that found the token, and waits
// for the answer in another: handing the sending to a new goroutine cost
// a scheduling delay per page during which the plugin idled.
type listCall struct {
	r      *remote
	req    providers.ListRequest
	parent context.Context    // the caller's
	ctx    context.Context    // the call's, under the call timeout
	cancel context.CancelFunc // of ctx
	proc   *process
	lane   *hostLane
	stream grpc.ClientStream
	res    listResult
	err    error // from binding (final) or sending (to classify)
	bound  bool
}

// listStream describes List as a stream, so that sending the request and
// reading the answer can happen apart.
var listStream = grpc.StreamDesc{StreamName: "List"}

// startList binds the instance and sends the request. The page may come
// on a lane (see lane.go); listCodec decodes and checks a page sent in the
// response as it arrives (decodeList). Either way, reading the next page
// starts as soon as this page's token is known.
func (r *remote) startList(ctx context.Context, req providers.ListRequest, useLane bool) *listCall {
	c := &listCall{r: r, req: req, parent: ctx}
	proc, id, err := r.bind(ctx)
	if err != nil {
		c.err = err
		return c
	}
	c.proc, c.bound = proc, true
	c.ctx, c.cancel = context.WithTimeout(ctx, r.p.opts.CallTimeout)
	lr := &pluginpb.ListRequest{InstanceId: id, SourceRef: req.SourceRef, PageToken: req.PageToken, PageSize: int32(req.PageSize)}
	if useLane {
		if c.lane = proc.lanes.acquire(c.ctx, proc.rpc); c.lane != nil {
			lr.ContentLane = c.lane.begin()
		}
	}
	c.res.early = func(token string) { r.readAhead(req, token) }
	c.stream, err = proc.rpc.conn.NewStream(c.ctx, &listStream, pluginpb.ProviderService_List_FullMethodName, grpc.ForceCodecV2(listCodec{}))
	if err == nil {
		err = c.stream.SendMsg(lr)
	}
	if err == nil {
		err = c.stream.CloseSend()
	}
	c.err = err
	return c
}

// finish waits for the answer and returns the checked page.
func (c *listCall) finish() (providers.Page, error) {
	page, err := c.wait()
	if c.cancel != nil {
		c.cancel()
	}
	if err != nil {
		if c.bound {
			err = c.r.p.classify(c.parent, c.proc, err)
		}
		return providers.Page{}, &providers.Error{Op: "list", Provider: c.r.desc.Name, Err: err}
	}
	return page, nil
}

func (c *listCall) wait() (providers.Page, error) {
	err := c.err
	if err == nil {
		err = c.stream.RecvMsg(&c.res)
	}
	proc, lane, res := c.proc, c.lane, &c.res
	if err != nil && lane != nil && laneRejected(err) {
		// The plugin lost the lane: ask again without one.
		proc.lanes.release(lane, false)
		c.cancel()
		retry := c.r.startList(c.parent, c.req, false)
		*c = *retry
		return c.wait()
	}
	switch {
	case err != nil:
		if lane != nil {
			// A provider's error comes before anything is sent on the
			// lane, which stays usable.
			st, _ := status.FromError(err)
			proc.lanes.release(lane, errorFromStatus(st) != nil)
		}
		return providers.Page{}, err
	case res.laneBytes > 0 && lane == nil:
		return providers.Page{}, fmt.Errorf("%w: page announced on a lane that was not offered", providers.ErrInvalidResponse)
	case res.laneBytes > 0:
		if err := c.r.receivePage(c.ctx, proc, lane, res); err != nil {
			return providers.Page{}, err
		}
	case lane != nil:
		proc.lanes.release(lane, true) // the page came in the response
	}
	if res.err != nil {
		return providers.Page{}, res.err
	}
	if res.page.NextPageToken == "" && res.page.Marker.IsZero() {
		return providers.Page{}, fmt.Errorf("%w: last page without a revision marker", providers.ErrInvalidResponse)
	}
	return res.page, nil
}

// receivePage reads a page sent on a lane and decodes it into res.
func (r *remote) receivePage(ctx context.Context, proc *process, lane *hostLane, res *listResult) error {
	deadline, _ := ctx.Deadline() // call sets one
	bp := pageBuffers.Get().(*[]byte)
	b, err := lane.receive(ctx, deadline, res.laneBytes, *bp)
	if err == nil {
		res.page, res.err = decodeList(b, res.early)
	}
	if cap(b) <= maxPooledPage {
		*bp = b
		pageBuffers.Put(bp)
	}
	proc.lanes.release(lane, err == nil)
	var ne net.Error
	switch {
	case err == nil, errors.Is(err, providers.ErrInvalidResponse):
		return err
	case ctx.Err() != nil:
		return ctx.Err()
	case errors.As(err, &ne) && ne.Timeout():
		go r.p.probe(proc)
		return fmt.Errorf("%w after %s", providers.ErrPluginTimeout, r.p.opts.CallTimeout)
	}
	// The lane broke: the plugin died, or is of no use.
	r.p.drop(proc)
	return fmt.Errorf("%w: content lane: %v", providers.ErrPluginCrashed, err)
}

func (r *remote) Changes(ctx context.Context, req providers.ChangesRequest) (providers.ChangePage, error) {
	var page providers.ChangePage
	err := r.call(ctx, "changes", "", func(ctx context.Context, proc *process, id uint64) error {
		resp, err := proc.rpc.Changes(ctx, &pluginpb.ChangesRequest{
			InstanceId: id, SourceRef: req.SourceRef, Since: markerToProto(req.Since),
			PageToken: req.PageToken, PageSize: int32(req.PageSize),
		})
		if err != nil {
			return err
		}
		if err := validate(resp); err != nil {
			return err
		}
		if resp.GetNextPageToken() == "" && resp.GetMarker() == nil {
			return fmt.Errorf("%w: last page without a revision marker", providers.ErrInvalidResponse)
		}
		page.Changes = make([]providers.Change, len(resp.GetChanges()))
		for i, c := range resp.GetChanges() {
			if c.GetObject() != nil {
				if err := checkItems(c.GetObject()); err != nil {
					return err
				}
			}
			page.Changes[i] = changeFromProto(c)
		}
		page.NextPageToken = resp.GetNextPageToken()
		page.Marker = markerFromProto(resp.GetMarker())
		return nil
	})
	return page, err
}

func (r *remote) Trash(ctx context.Context, req providers.ActionRequest) (providers.ActionResult, error) {
	if err := r.unsupported("trash", providers.CapTrash); err != nil {
		return providers.ActionResult{}, err
	}
	var res providers.ActionResult
	err := r.call(ctx, "trash", req.ObjectID, func(ctx context.Context, proc *process, id uint64) error {
		resp, err := proc.rpc.Trash(ctx, &pluginpb.TrashRequest{InstanceId: id, SourceRef: req.SourceRef, ObjectId: req.ObjectID, ExpectedVersion: req.ExpectedVersion})
		if err != nil {
			return err
		}
		if err := validate(resp); err != nil {
			return err
		}
		res = providers.ActionResult{ResultID: resp.GetResultId(), Restorable: resp.GetRestorable()}
		return nil
	})
	return res, err
}

// TrashBatch trashes the requests' objects in one call to the plugin.
func (r *remote) TrashBatch(ctx context.Context, reqs []providers.ActionRequest) ([]providers.ActionOutcome, error) {
	if err := r.unsupported("trash batch", providers.CapTrashBatch); err != nil {
		return nil, err
	}
	if len(reqs) > providers.MaxBatchSize {
		return nil, &providers.Error{Op: "trash batch", Provider: r.desc.Name,
			Err: fmt.Errorf("%d requests, at most %d: %w", len(reqs), providers.MaxBatchSize, providers.ErrInvalidArgument)}
	}
	in := &pluginpb.TrashBatchRequest{Items: make([]*pluginpb.TrashBatchItem, len(reqs))}
	for i, q := range reqs {
		in.Items[i] = &pluginpb.TrashBatchItem{SourceRef: q.SourceRef, ObjectId: q.ObjectID, ExpectedVersion: q.ExpectedVersion}
	}
	var outs []providers.ActionOutcome
	err := r.call(ctx, "trash batch", "", func(ctx context.Context, proc *process, id uint64) error {
		in.InstanceId = id
		resp, err := proc.rpc.TrashBatch(ctx, in)
		if err != nil {
			return err
		}
		if err := validate(resp); err != nil {
			return err
		}
		if len(resp.GetResults()) != len(reqs) {
			return fmt.Errorf("plugin answered %d results for %d requests: %w", len(resp.GetResults()), len(reqs), providers.ErrInvalidData)
		}
		outs = make([]providers.ActionOutcome, len(reqs))
		for i, res := range resp.GetResults() {
			if res.GetError() != nil {
				outs[i].Err = &providers.Error{Op: "trash", Provider: r.desc.Name, ObjectID: reqs[i].ObjectID, Err: errorFromInfo(res.GetError(), res.GetErrorMessage())}
				continue
			}
			outs[i].Result = providers.ActionResult{ResultID: res.GetResultId(), Restorable: res.GetRestorable()}
		}
		return nil
	})
	return outs, err
}

// FetchBatch fetches the requests' objects in one call to the plugin, handing each outcome to
// fn as its message arrives. Every result is checked as a Fetch's would be (the object asked
// for, at the expected version, content of its declared size) and the content against the
// batch limits (providers.InlineBudget); results must come once each, in order. A bad result
// fails the call from there on: the outcomes already handed over stand.
func (r *remote) FetchBatch(ctx context.Context, reqs []providers.FetchRequest, fn func(int, providers.FetchOutcome)) error {
	wrap := func(err error) error { return &providers.Error{Op: "fetch batch", Provider: r.desc.Name, Err: err} }
	if err := r.unsupported("fetch batch", providers.CapFetchBatch); err != nil {
		return err
	}
	if len(reqs) > providers.MaxBatchSize {
		return wrap(fmt.Errorf("%d requests, at most %d: %w", len(reqs), providers.MaxBatchSize, providers.ErrInvalidArgument))
	}
	if len(reqs) == 0 {
		return nil
	}
	proc, id, err := r.bind(ctx)
	if err != nil {
		return wrap(err)
	}
	in := &pluginpb.FetchBatchRequest{InstanceId: id, Items: make([]*pluginpb.FetchBatchItem, len(reqs))}
	for i, q := range reqs {
		in.Items[i] = &pluginpb.FetchBatchItem{SourceRef: q.SourceRef, ObjectId: q.ObjectID, ExpectedVersion: q.ExpectedVersion}
	}
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	wd := newWatchdog(r.p.opts.CallTimeout, cancel)
	defer wd.disarm()
	wd.arm()
	// The responses are decoded and checked by listCodec (decodeFetchBatch), not through the
	// generated messages and protovalidate.
	stream, err := proc.rpc.conn.NewStream(sctx, &fetchBatchStream, pluginpb.ProviderService_FetchBatch_FullMethodName, grpc.ForceCodecV2(listCodec{}))
	if err == nil {
		err = stream.SendMsg(in)
	}
	if err == nil {
		err = stream.CloseSend()
	}
	wd.disarm()
	if err != nil {
		return wrap(r.streamError(ctx, proc, wd, err))
	}
	next := 0
	var budget providers.InlineBudget
	for {
		var msg batchMessage
		wd.arm()
		err := stream.RecvMsg(&msg)
		wd.disarm()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return wrap(r.streamError(ctx, proc, wd, err))
		}
		if msg.err != nil {
			return wrap(msg.err)
		}
		for i := range msg.results {
			res := &msg.results[i]
			if res.index != uint64(next) || next >= len(reqs) {
				return wrap(fmt.Errorf("%w: fetch batch result for item %d, expected %d of %d", providers.ErrInvalidResponse, res.index, next, len(reqs)))
			}
			out, err := r.fetchResult(reqs[next], res, &budget)
			if err != nil {
				return wrap(err)
			}
			fn(next, out)
			next++
		}
	}
	if next != len(reqs) {
		return wrap(fmt.Errorf("%w: fetch batch answered %d of %d items", providers.ErrInvalidResponse, next, len(reqs)))
	}
	return nil
}

// fetchBatchStream describes FetchBatch for NewStream.
var fetchBatchStream = grpc.StreamDesc{StreamName: "FetchBatch", ServerStreams: true}

// fetchResult checks one result of a batch fetch and turns it into an outcome.
func (r *remote) fetchResult(req providers.FetchRequest, res *batchResult, budget *providers.InlineBudget) (providers.FetchOutcome, error) {
	switch {
	case res.errInfo != nil:
		if res.object != nil || res.deferred || len(res.content) > 0 {
			return providers.FetchOutcome{}, fmt.Errorf("%w: fetch batch result %d has an error and more", providers.ErrInvalidResponse, res.index)
		}
		return providers.FetchOutcome{Err: &providers.Error{Op: "fetch", Provider: r.desc.Name, ObjectID: req.ObjectID,
			Err: errorFromInfo(res.errInfo, res.errMsg)}}, nil
	case res.deferred:
		if res.object != nil || len(res.content) > 0 {
			return providers.FetchOutcome{}, fmt.Errorf("%w: deferred fetch batch result %d has content", providers.ErrInvalidResponse, res.index)
		}
		return providers.FetchOutcome{Deferred: true}, nil
	case res.object == nil:
		return providers.FetchOutcome{}, fmt.Errorf("%w: fetch batch result %d has no object", providers.ErrInvalidResponse, res.index)
	}
	obj, content := *res.object, res.content
	switch {
	case obj.ID != req.ObjectID:
		return providers.FetchOutcome{}, fmt.Errorf("%w: fetched object %q, asked for %q", providers.ErrInvalidResponse, obj.ID, req.ObjectID)
	case req.ExpectedVersion != "" && obj.Version != req.ExpectedVersion:
		return providers.FetchOutcome{}, fmt.Errorf("%w: fetched version %q, expected %q", providers.ErrInvalidResponse, obj.Version, req.ExpectedVersion)
	case int64(len(content)) != obj.SizeBytes:
		return providers.FetchOutcome{}, fmt.Errorf("%w: content of %q is %d bytes, object declares %d", providers.ErrInvalidResponse, obj.ID, len(content), obj.SizeBytes)
	case !budget.Take(obj.SizeBytes):
		return providers.FetchOutcome{}, fmt.Errorf("%w: content of %q (%d bytes) passes the batch's limits", providers.ErrInvalidResponse, obj.ID, obj.SizeBytes)
	}
	if content == nil {
		content = []byte{}
	}
	return providers.FetchOutcome{Object: obj, Content: content}, nil
}

func (r *remote) Remove(ctx context.Context, req providers.ActionRequest) (providers.ActionResult, error) {
	if err := r.unsupported("remove", providers.CapRemove); err != nil {
		return providers.ActionResult{}, err
	}
	var res providers.ActionResult
	err := r.call(ctx, "remove", req.ObjectID, func(ctx context.Context, proc *process, id uint64) error {
		resp, err := proc.rpc.Remove(ctx, &pluginpb.RemoveRequest{InstanceId: id, SourceRef: req.SourceRef, ObjectId: req.ObjectID, ExpectedVersion: req.ExpectedVersion})
		if err != nil {
			return err
		}
		if err := validate(resp); err != nil {
			return err
		}
		res = providers.ActionResult{ResultID: resp.GetResultId()}
		return nil
	})
	return res, err
}

func (r *remote) Untrash(ctx context.Context, req providers.UntrashRequest) (providers.Object, error) {
	if err := r.unsupported("untrash", providers.CapUntrash); err != nil {
		return providers.Object{}, err
	}
	var o providers.Object
	err := r.call(ctx, "untrash", req.ObjectID, func(ctx context.Context, proc *process, id uint64) error {
		resp, err := proc.rpc.Untrash(ctx, &pluginpb.UntrashRequest{InstanceId: id, SourceRef: req.SourceRef, ObjectId: req.ObjectID, ResultId: req.ResultID})
		if err != nil {
			return err
		}
		if err := validate(resp); err != nil {
			return err
		}
		if err := checkItems(resp.GetObject()); err != nil {
			return err
		}
		o = objectFromProto(resp.GetObject())
		return nil
	})
	return o, err
}

func (r *remote) Quota(ctx context.Context, sourceRef string) (providers.Quota, error) {
	if err := r.unsupported("quota", providers.CapQuota); err != nil {
		return providers.Quota{}, err
	}
	var q providers.Quota
	err := r.call(ctx, "quota", "", func(ctx context.Context, proc *process, id uint64) error {
		resp, err := proc.rpc.Quota(ctx, &pluginpb.QuotaRequest{InstanceId: id, SourceRef: sourceRef})
		if err != nil {
			return err
		}
		if err := validate(resp); err != nil {
			return err
		}
		q = quotaFromProto(resp)
		return nil
	})
	return q, err
}

// watchdog cancels a stream when one step of it (a Recv, a Send) takes
// longer than the call timeout.
type watchdog struct {
	d        time.Duration
	cancel   context.CancelFunc
	timer    *time.Timer
	timedOut atomic.Bool
}

func newWatchdog(d time.Duration, cancel context.CancelFunc) *watchdog {
	w := &watchdog{d: d, cancel: cancel}
	w.timer = time.AfterFunc(d, func() { w.timedOut.Store(true); cancel() })
	w.timer.Stop()
	return w
}

func (w *watchdog) arm()    { w.timer.Reset(w.d) }
func (w *watchdog) disarm() { w.timer.Stop() }

func (r *remote) Fetch(ctx context.Context, req providers.FetchRequest) (*providers.Content, error) {
	return r.fetch(ctx, req, true)
}

func (r *remote) fetch(ctx context.Context, req providers.FetchRequest, useLane bool) (*providers.Content, error) {
	wrap := func(err error) error {
		return &providers.Error{Op: "fetch", Provider: r.desc.Name, ObjectID: req.ObjectID, Err: err}
	}
	proc, id, err := r.bind(ctx)
	if err != nil {
		return nil, wrap(err)
	}
	// The content travels on a lane when the plugin offers them (see
	// lane.go), else in the stream's messages.
	var lane *hostLane
	if useLane {
		lane = proc.lanes.acquire(ctx, proc.rpc)
	}
	var laneRef *pluginpb.ContentLane
	if lane != nil {
		laneRef = lane.begin()
	}
	sctx, cancel := context.WithCancel(ctx)
	wd := newWatchdog(r.p.opts.CallTimeout, cancel)
	fail := func(err error, laneReusable bool) (*providers.Content, error) {
		wd.disarm()
		cancel()
		if lane != nil {
			proc.lanes.release(lane, laneReusable)
		}
		return nil, wrap(err)
	}
	wd.arm()
	stream, err := proc.rpc.Fetch(sctx, &pluginpb.FetchRequest{InstanceId: id, SourceRef: req.SourceRef, ObjectId: req.ObjectID, ExpectedVersion: req.ExpectedVersion, ContentLane: laneRef})
	if err != nil {
		return fail(r.streamError(ctx, proc, wd, err), false)
	}
	first, err := stream.Recv()
	wd.disarm()
	if err != nil {
		if errors.Is(err, io.EOF) {
			return fail(fmt.Errorf("%w: fetch stream ended before the object", providers.ErrInvalidResponse), false)
		}
		if lane != nil && laneRejected(err) {
			// The plugin lost the lane: ask again without one.
			fail(err, false)
			return r.fetch(ctx, req, false)
		}
		// A provider's error (not found, a moved version) comes before any
		// content: the lane is untouched and stays usable.
		st, _ := status.FromError(err)
		return fail(r.streamError(ctx, proc, wd, err), errorFromStatus(st) != nil)
	}
	if err := validate(first); err != nil {
		return fail(err, false)
	}
	om := first.GetObject()
	if om == nil {
		return fail(fmt.Errorf("%w: fetch stream did not start with the object", providers.ErrInvalidResponse), false)
	}
	if err := checkItems(om); err != nil {
		return fail(err, false)
	}
	obj := objectFromProto(om)
	if obj.ID != req.ObjectID {
		return fail(fmt.Errorf("%w: fetched object %q, asked for %q", providers.ErrInvalidResponse, obj.ID, req.ObjectID), false)
	}
	if req.ExpectedVersion != "" && obj.Version != req.ExpectedVersion {
		return fail(fmt.Errorf("%w: fetched version %q, expected %q", providers.ErrInvalidResponse, obj.Version, req.ExpectedVersion), false)
	}
	body := &fetchBody{r: r, proc: proc, ctx: ctx, sctx: sctx, stream: stream, cancel: cancel, wd: wd, want: obj.SizeBytes, wrap: wrap, lane: lane, held: -1}
	if lane != nil {
		// Cancelling the fetch (the caller's context, Close) wakes a read
		// blocked on the lane.
		body.stopWake = context.AfterFunc(sctx, func() { _ = lane.conn.SetReadDeadline(time.Unix(1, 0)) })
	}
	return &providers.Content{Object: obj, Body: body}, nil
}

func (r *remote) streamError(ctx context.Context, proc *process, wd *watchdog, err error) error {
	if wd.timedOut.Load() && ctx.Err() == nil {
		go r.p.probe(proc)
		return fmt.Errorf("%w after %s", providers.ErrPluginTimeout, r.p.opts.CallTimeout)
	}
	return r.p.classify(ctx, proc, err)
}

// fetchBody reads a Fetch's content, from the stream's chunks or from a
// content lane, and checks that it has the length the object declared.
type fetchBody struct {
	r      *remote
	proc   *process
	ctx    context.Context // the caller's
	sctx   context.Context // the stream's
	stream grpc.ServerStreamingClient[pluginpb.FetchResponse]
	cancel context.CancelFunc
	wd     *watchdog
	wrap   func(error) error

	// mu serialises Read and Close: Close may come from another goroutine
	// to abort a Read, and must not unmap a lane's memory under it.
	mu       sync.Mutex
	lane     *hostLane // nil when the content comes in chunks
	stopWake func() bool
	held     int // the lane slot buf points into, or -1
	buf      []byte
	got      int64
	want     int64
	err      error
}

func (b *fetchBody) Read(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for len(b.buf) == 0 {
		if b.err != nil {
			return 0, b.err
		}
		if b.lane != nil {
			b.nextSlot()
		} else {
			b.nextChunk()
		}
	}
	n := copy(p, b.buf)
	b.buf = b.buf[n:]
	return n, nil
}

// nextChunk receives the next chunk of the stream into buf, or sets err.
func (b *fetchBody) nextChunk() {
	b.wd.arm()
	m, err := b.stream.Recv()
	b.wd.disarm()
	switch {
	case errors.Is(err, io.EOF):
		b.err = b.endOfContent()
		return
	case err != nil:
		b.err = b.wrap(b.r.streamError(b.ctx, b.proc, b.wd, err))
		return
	}
	c, ok := m.GetPart().(*pluginpb.FetchResponse_Chunk)
	if !ok {
		b.err = b.wrap(fmt.Errorf("%w: object sent twice in a fetch stream", providers.ErrInvalidResponse))
		return
	}
	b.take(c.Chunk)
}

// take accounts for n more bytes of content in buf.
func (b *fetchBody) take(p []byte) {
	b.got += int64(len(p))
	if b.got > b.want {
		b.err = b.wrap(fmt.Errorf("%w: content exceeds the declared %d bytes", providers.ErrInvalidResponse, b.want))
		return
	}
	b.buf = p
}

// endOfContent checks the length once the content is complete.
func (b *fetchBody) endOfContent() error {
	if b.got != b.want {
		return b.wrap(fmt.Errorf("%w: content is %d bytes, object declares %d", providers.ErrInvalidResponse, b.got, b.want))
	}
	return io.EOF
}

// nextSlot gives back the slot just read and points buf at the next filled
// one, or sets err; at the end it confirms the stream's status and returns
// the lane.
func (b *fetchBody) nextSlot() {
	deadline := func() time.Time { return time.Now().Add(b.r.p.opts.CallTimeout) }
	if b.held >= 0 {
		if err := b.lane.free(uint32(b.held), deadline()); err != nil {
			b.laneFailed(err)
			return
		}
		b.held = -1
	}
	f, err := b.lane.next(b.sctx, deadline())
	if err != nil {
		b.laneFailed(err)
		return
	}
	switch f.kind {
	case frameData:
		p := b.lane.slot(f)
		if p == nil {
			b.finish(b.wrap(fmt.Errorf("%w: content lane frame names slot %d, %d bytes", providers.ErrInvalidResponse, f.slot, f.n)), false)
			return
		}
		b.held = int(f.slot)
		if b.take(p); b.err != nil {
			b.finish(b.err, false)
		}
	case frameEnd:
		if err := b.endOfContent(); err != io.EOF {
			b.finish(err, false)
			return
		}
		// The status must confirm the content.
		b.wd.arm()
		m, err := b.stream.Recv()
		b.wd.disarm()
		switch {
		case errors.Is(err, io.EOF):
			b.finish(io.EOF, true)
		case err != nil:
			b.finish(b.wrap(b.r.streamError(b.ctx, b.proc, b.wd, err)), false)
		default:
			_ = m
			b.finish(b.wrap(fmt.Errorf("%w: a message after content sent on a lane", providers.ErrInvalidResponse)), false)
		}
	case frameAbort:
		b.finish(b.statusError(), false)
	default:
		b.finish(b.wrap(fmt.Errorf("%w: content lane frame of kind %d", providers.ErrInvalidResponse, f.kind)), false)
	}
}

// statusError is the error the stream ends with, after the plugin aborted
// the content or the lane broke.
func (b *fetchBody) statusError() error {
	b.wd.arm()
	_, err := b.stream.Recv()
	b.wd.disarm()
	if err == nil || errors.Is(err, io.EOF) {
		return b.wrap(fmt.Errorf("%w: content lane closed before the end of the content", providers.ErrInvalidResponse))
	}
	return b.wrap(b.r.streamError(b.ctx, b.proc, b.wd, err))
}

// laneFailed handles a failed read or write on the lane: a cancelled fetch,
// a plugin that did not send the next frame in time, or a broken lane (the
// plugin crashed, usually: the stream's status says).
func (b *fetchBody) laneFailed(err error) {
	var ne net.Error
	switch {
	case errors.Is(err, providers.ErrInvalidResponse):
		b.finish(b.wrap(err), false)
	case b.ctx.Err() != nil:
		b.finish(b.wrap(b.ctx.Err()), false)
	case b.sctx.Err() != nil:
		b.finish(b.wrap(b.sctx.Err()), false)
	case errors.As(err, &ne) && ne.Timeout():
		go b.r.p.probe(b.proc)
		b.finish(b.wrap(fmt.Errorf("%w after %s", providers.ErrPluginTimeout, b.r.p.opts.CallTimeout)), false)
	default:
		b.finish(b.statusError(), false)
	}
}

// finish ends a lane fetch with err (io.EOF when the content is complete)
// and gives the lane back.
func (b *fetchBody) finish(err error, clean bool) {
	b.err = err
	b.buf = nil
	if b.lane == nil {
		return
	}
	woke := !b.stopWake()
	b.wd.disarm()
	b.cancel()
	b.proc.lanes.release(b.lane, clean && !woke)
	b.lane = nil
}

func (b *fetchBody) Close() error {
	b.cancel() // wakes a Read blocked on the stream or the lane
	b.mu.Lock()
	defer b.mu.Unlock()
	closed := b.wrap(errors.New("fetch body closed"))
	if b.lane != nil {
		b.finish(closed, false)
	}
	if b.err == nil {
		b.err = closed
	}
	b.wd.disarm()
	return nil
}

func (r *remote) Write(ctx context.Context, req providers.WriteRequest, body io.Reader) (providers.Object, error) {
	wrap := func(err error) error {
		return &providers.Error{Op: "write", Provider: r.desc.Name, ObjectID: req.Path, Err: err}
	}
	if err := r.unsupported("write", providers.CapWrite); err != nil {
		return providers.Object{}, err
	}
	proc, id, err := r.bind(ctx)
	if err != nil {
		return providers.Object{}, wrap(err)
	}
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	wd := newWatchdog(r.p.opts.CallTimeout, cancel)
	defer wd.disarm()
	fail := func(err error) (providers.Object, error) {
		return providers.Object{}, wrap(r.streamError(ctx, proc, wd, err))
	}
	stream, err := proc.rpc.Write(sctx)
	if err != nil {
		return fail(err)
	}
	wd.arm()
	if err := stream.Send(&pluginpb.WriteRequest{Part: &pluginpb.WriteRequest_Header{Header: writeHeaderToProto(id, req)}}); err != nil {
		return r.closeWrite(ctx, proc, wd, stream, err, wrap)
	}
	wd.disarm()
	buf := make([]byte, chunkSize)
	msg := &pluginpb.WriteRequest{}
	chunk := &pluginpb.WriteRequest_Chunk{}
	msg.Part = chunk
	for {
		n, rerr := io.ReadFull(body, buf)
		if n > 0 {
			chunk.Chunk = buf[:n]
			wd.arm()
			err := stream.Send(msg)
			wd.disarm()
			if err != nil {
				return r.closeWrite(ctx, proc, wd, stream, err, wrap)
			}
		}
		if rerr == io.EOF || rerr == io.ErrUnexpectedEOF {
			break
		}
		if rerr != nil {
			return providers.Object{}, wrap(fmt.Errorf("read content: %w", rerr))
		}
	}
	wd.arm()
	resp, err := stream.CloseAndRecv()
	wd.disarm()
	if err != nil {
		return fail(err)
	}
	if err := validate(resp); err != nil {
		return providers.Object{}, wrap(err)
	}
	if err := checkItems(resp.GetObject()); err != nil {
		return providers.Object{}, wrap(err)
	}
	return objectFromProto(resp.GetObject()), nil
}

// closeWrite handles a failed Send: the real error is the status the
// plugin closed the stream with (a Send only reports io.EOF).
func (r *remote) closeWrite(ctx context.Context, proc *process, wd *watchdog, stream grpc.ClientStreamingClient[pluginpb.WriteRequest, pluginpb.WriteResponse], err error, wrap func(error) error) (providers.Object, error) {
	if errors.Is(err, io.EOF) {
		wd.arm()
		_, err = stream.CloseAndRecv()
		wd.disarm()
		if err == nil {
			err = fmt.Errorf("%w: write stream closed early", providers.ErrInvalidResponse)
		}
	}
	return providers.Object{}, wrap(r.streamError(ctx, proc, wd, err))
}
