package plugin

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	goplugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"svc.dev/svc/providers"
	"svc.dev/svc/providers/internal/pluginpb"
)

// ServeOption configures Serve.
type ServeOption func(*serveConfig)

type serveConfig struct {
	ctx context.Context
}

// WithContext stops serving when ctx is done (for tests and embedding).
func WithContext(ctx context.Context) ServeOption {
	return func(c *serveConfig) { c.ctx = ctx }
}

// Serve serves a provider as a plugin process speaking protocol v1 and
// returns when the host closes the connection. desc must be what the
// factory's providers return from Describe. Serve must be called from the
// plugin's main; run by hand (without the host's magic cookie) it prints a
// message and exits.
func Serve(desc providers.Description, factory providers.Factory, opts ...ServeOption) {
	cfg := serveConfig{}
	for _, o := range opts {
		o(&cfg)
	}
	if err := providers.ValidateDescription(desc); err != nil {
		fmt.Fprintf(os.Stderr, "svc provider plugin: invalid description: %v\n", err)
		os.Exit(1)
	}
	if os.Getenv("GOGC") == "" {
		// A plugin process holds little beyond the page or chunk in flight;
		// collecting less often buys throughput for a few MiB.
		debug.SetGCPercent(400)
	}
	srv := newServer(desc, factory)
	sc := &goplugin.ServeConfig{
		HandshakeConfig:  Handshake,
		VersionedPlugins: pluginSet(srv),
		GRPCServer: func(o []grpc.ServerOption) *grpc.Server {
			return grpc.NewServer(append(o, serverOptions()...)...)
		},
		Logger: hclog.New(&hclog.LoggerOptions{Name: string(desc.Name), Output: os.Stderr, Level: hclog.Warn, JSONFormat: true}),
	}
	if cfg.ctx != nil {
		sc.Test = &goplugin.ServeTestConfig{Context: cfg.ctx}
	} else {
		go exitWithParent(os.Getppid(), time.Second)
	}
	goplugin.Serve(sc)
	srv.lanes.close()
}

// exitWithParent ends the plugin when the host that started it is gone (its parent process
// changes: it was re-parented), checking every interval. A host killed with SIGKILL cannot
// stop its plugins, and go-plugin's own shutdown needs a live host; without this they would
// live on as orphans.
func exitWithParent(ppid int, interval time.Duration) {
	if ppid <= 1 {
		return // started by init or a container's first process: nothing to watch
	}
	for range time.Tick(interval) {
		if os.Getppid() != ppid {
			fmt.Fprintln(os.Stderr, "svc provider plugin: the host process is gone; exiting")
			os.Exit(2)
		}
	}
}

// server implements the protocol over a provider factory. Each Open makes a
// provider instance addressed by its id in later calls.
type server struct {
	pluginpb.UnimplementedProviderServiceServer
	desc    providers.Description
	factory providers.Factory

	next      atomic.Uint64
	mu        sync.RWMutex
	instances map[uint64]providers.Provider

	lanes laneServer

	watchMu  sync.Mutex
	watching map[uint64]chan struct{} // by instance: closed to end its WatchCredentials stream

	aheadMu sync.Mutex
	ahead   map[uint64]*pageAhead // by instance
}

// NewServer returns the protocol's gRPC service for a provider factory. Serve
// uses it; it is exported for hosts that run a plugin server themselves
// (tests over an in-memory connection).
func NewServer(desc providers.Description, factory providers.Factory) pluginpb.ProviderServiceServer {
	return newServer(desc, factory)
}

func newServer(desc providers.Description, factory providers.Factory) *server {
	return &server{desc: desc, factory: factory, instances: make(map[uint64]providers.Provider), ahead: make(map[uint64]*pageAhead)}
}

func (s *server) OpenContentChannel(_ context.Context, req *pluginpb.OpenContentChannelRequest) (*pluginpb.OpenContentChannelResponse, error) {
	token, err := s.lanes.open(req.GetSocketPath())
	if errors.Is(err, errUnsupportedLanes) {
		return nil, status.Error(codes.Unimplemented, err.Error())
	}
	if err != nil {
		return nil, statusFromError(err)
	}
	return &pluginpb.OpenContentChannelResponse{Token: token}, nil
}

func (s *server) instance(id uint64) (providers.Provider, error) {
	s.mu.RLock()
	p, ok := s.instances[id]
	s.mu.RUnlock()
	if !ok {
		return nil, statusFromError(fmt.Errorf("instance %d: %w", id, providers.ErrInvalidArgument))
	}
	return p, nil
}

func (s *server) Describe(context.Context, *pluginpb.DescribeRequest) (*pluginpb.DescribeResponse, error) {
	return descriptionToProto(s.desc), nil
}

func (s *server) Open(ctx context.Context, req *pluginpb.OpenRequest) (*pluginpb.OpenResponse, error) {
	p, err := s.factory(ctx, providers.Config(req.GetConfig()))
	if err != nil {
		return nil, statusFromError(err)
	}
	id := s.next.Add(1)
	s.mu.Lock()
	s.instances[id] = p
	s.mu.Unlock()
	return &pluginpb.OpenResponse{InstanceId: id}, nil
}

func (s *server) Close(_ context.Context, req *pluginpb.CloseRequest) (*pluginpb.CloseResponse, error) {
	s.mu.Lock()
	p, ok := s.instances[req.GetInstanceId()]
	delete(s.instances, req.GetInstanceId())
	s.mu.Unlock()
	s.dropAhead(req.GetInstanceId())
	s.stopWatch(req.GetInstanceId(), nil, nil) // the instance closes: its provider calls no more
	if ok {
		if err := providers.CloseProvider(p); err != nil {
			return nil, statusFromError(err)
		}
	}
	return &pluginpb.CloseResponse{}, nil
}

func (s *server) List(ctx context.Context, req *pluginpb.ListRequest) (*pluginpb.ListResponse, error) {
	p, err := s.instance(req.GetInstanceId())
	if err != nil {
		return nil, err
	}
	var lane *pluginLane
	if ref := req.GetContentLane(); ref != nil {
		if lane, err = s.lanes.take(ref.GetId()); err != nil {
			return nil, statusFromError(err)
		}
		defer s.lanes.put(lane)
	}
	lreq := providers.ListRequest{SourceRef: req.GetSourceRef(), PageToken: req.GetPageToken(), PageSize: int(req.GetPageSize())}
	page, ok, err := s.takeAhead(ctx, req.GetInstanceId(), lreq)
	if !ok {
		page, err = p.List(ctx, lreq)
	}
	if err != nil {
		return nil, statusFromError(err)
	}
	s.readAhead(req.GetInstanceId(), p, lreq, page.NextPageToken)
	// The page is written in ListResponse's wire format by hand (see
	// listwire.go), without a pluginpb.Object built and marshalled per
	// object. It goes on the lane when it fits there at once (so this never
	// waits on the host, which reads the lane after the response)...
	if lane != nil {
		bp := encodeBuffers.Get().(*[]byte)
		defer func() {
			if cap(*bp) <= maxPooledPage {
				encodeBuffers.Put(bp)
			}
		}()
		*bp = appendListResponse((*bp)[:0], &page)
		if b := *bp; len(b) <= lane.capacity() {
			if err := lane.send(ctx, req.GetContentLane().GetTransfer(), bytes.NewReader(b)); err != nil {
				return nil, err
			}
			return &pluginpb.ListResponse{LaneBytes: uint64(len(b))}, nil
		}
		resp := &pluginpb.ListResponse{}
		resp.ProtoReflect().SetUnknown(bytes.Clone(*bp))
		return resp, nil
	}
	// ...else it is handed to gRPC as the message's unknown fields, which
	// proto.Marshal copies out verbatim: the host receives an ordinary
	// ListResponse.
	resp := &pluginpb.ListResponse{}
	resp.ProtoReflect().SetUnknown(appendListResponse(make([]byte, 0, 512*len(page.Objects)+256), &page))
	return resp, nil
}

// pageAhead is a page the plugin produces before the host asks for it.
// The host asks for page N+1 as soon as it has page N's token, but that
// request arrives only after page N's answer crossed to the host and the
// request crossed back: a round trip per page during which the plugin
// would idle. So after answering a List the plugin starts producing the
// next page at once and answers the host's request for it from there. List
// is side-effect free by contract, and in a listing read to the end every
// page is still produced once; one page per instance is held.
type pageAhead struct {
	req    providers.ListRequest
	done   chan struct{}
	cancel context.CancelFunc
	page   providers.Page
	err    error
}

// readAhead starts producing the page after prev, whose token is token.
func (s *server) readAhead(id uint64, p providers.Provider, prev providers.ListRequest, token string) {
	if token == "" {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	pa := &pageAhead{req: providers.ListRequest{SourceRef: prev.SourceRef, PageToken: token, PageSize: prev.PageSize}, done: make(chan struct{}), cancel: cancel}
	s.aheadMu.Lock()
	defer s.aheadMu.Unlock()
	if _, err := s.instance(id); err != nil {
		cancel() // closed meanwhile (Close drops its page after this check)
		return
	}
	if old := s.ahead[id]; old != nil {
		old.cancel()
	}
	s.ahead[id] = pa
	go func() {
		defer close(pa.done)
		pa.page, pa.err = p.List(ctx, pa.req)
	}()
}

// takeAhead returns the answer produced ahead for req, waiting for it if
// needed; ok is false when there is none (or it was cut short) and the
// caller must list itself.
func (s *server) takeAhead(ctx context.Context, id uint64, req providers.ListRequest) (providers.Page, bool, error) {
	s.aheadMu.Lock()
	pa := s.ahead[id]
	delete(s.ahead, id)
	s.aheadMu.Unlock()
	if pa == nil {
		return providers.Page{}, false, nil
	}
	if pa.req != req {
		pa.cancel()
		return providers.Page{}, false, nil
	}
	select {
	case <-pa.done:
		pa.cancel()
		if errors.Is(pa.err, context.Canceled) {
			return providers.Page{}, false, nil
		}
		return pa.page, true, pa.err
	case <-ctx.Done():
		pa.cancel()
		return providers.Page{}, true, ctx.Err()
	}
}

func (s *server) dropAhead(id uint64) {
	s.aheadMu.Lock()
	defer s.aheadMu.Unlock()
	if pa := s.ahead[id]; pa != nil {
		pa.cancel()
		delete(s.ahead, id)
	}
}

// encodeBuffers holds the buffers List encodes pages into for a lane.
var encodeBuffers = sync.Pool{New: func() any { return new([]byte) }}

func (s *server) Changes(ctx context.Context, req *pluginpb.ChangesRequest) (*pluginpb.ChangesResponse, error) {
	p, err := s.instance(req.GetInstanceId())
	if err != nil {
		return nil, err
	}
	page, err := p.Changes(ctx, providers.ChangesRequest{
		SourceRef: req.GetSourceRef(), Since: markerFromProto(req.GetSince()),
		PageToken: req.GetPageToken(), PageSize: int(req.GetPageSize()),
	})
	if err != nil {
		return nil, statusFromError(err)
	}
	resp := &pluginpb.ChangesResponse{
		Changes:       make([]*pluginpb.Change, len(page.Changes)),
		NextPageToken: page.NextPageToken,
		Marker:        markerToProto(page.Marker),
	}
	for i := range page.Changes {
		resp.Changes[i] = changeToProto(&page.Changes[i])
	}
	return resp, nil
}

func (s *server) Fetch(req *pluginpb.FetchRequest, stream grpc.ServerStreamingServer[pluginpb.FetchResponse]) error {
	p, err := s.instance(req.GetInstanceId())
	if err != nil {
		return err
	}
	var lane *pluginLane
	if ref := req.GetContentLane(); ref != nil {
		if lane, err = s.lanes.take(ref.GetId()); err != nil {
			return statusFromError(err)
		}
		defer s.lanes.put(lane)
	}
	c, err := p.Fetch(stream.Context(), providers.FetchRequest{
		SourceRef: req.GetSourceRef(), ObjectID: req.GetObjectId(), ExpectedVersion: req.GetExpectedVersion(),
	})
	if err != nil {
		return statusFromError(err)
	}
	defer c.Body.Close()
	if err := stream.Send(&pluginpb.FetchResponse{Part: &pluginpb.FetchResponse_Object{Object: objectToProto(&c.Object)}}); err != nil {
		return err
	}
	if lane != nil {
		return lane.send(stream.Context(), req.GetContentLane().GetTransfer(), c.Body)
	}
	// One buffer serves the whole stream: Send marshals before returning. It is no larger
	// than the object (plus one byte, to see its end in one read) when its size is known: a
	// mailbox's messages are a few KiB, and a chunk-sized buffer per fetch was most of what a
	// plugin allocated during a clean-up.
	size := chunkSize
	if n := c.Object.SizeBytes; n >= 0 && n < chunkSize {
		size = int(n) + 1
	}
	buf := make([]byte, size)
	msg := &pluginpb.FetchResponse{}
	chunk := &pluginpb.FetchResponse_Chunk{}
	msg.Part = chunk
	for {
		n, rerr := io.ReadFull(c.Body, buf)
		if n > 0 {
			chunk.Chunk = buf[:n]
			if err := stream.Send(msg); err != nil {
				return err
			}
		}
		if rerr == io.EOF || rerr == io.ErrUnexpectedEOF {
			return nil
		}
		if rerr != nil {
			return statusFromError(rerr)
		}
	}
}

func (s *server) Trash(ctx context.Context, req *pluginpb.TrashRequest) (*pluginpb.TrashResponse, error) {
	p, err := s.instance(req.GetInstanceId())
	if err != nil {
		return nil, err
	}
	t, ok := providers.AsTrasher(p)
	if !ok {
		return nil, statusFromError(fmt.Errorf("trash: %w", providers.ErrUnsupported))
	}
	res, err := t.Trash(ctx, providers.ActionRequest{SourceRef: req.GetSourceRef(), ObjectID: req.GetObjectId(), ExpectedVersion: req.GetExpectedVersion()})
	if err != nil {
		return nil, statusFromError(err)
	}
	return &pluginpb.TrashResponse{ResultId: res.ResultID, Restorable: res.Restorable}, nil
}

func (s *server) TrashBatch(ctx context.Context, req *pluginpb.TrashBatchRequest) (*pluginpb.TrashBatchResponse, error) {
	p, err := s.instance(req.GetInstanceId())
	if err != nil {
		return nil, err
	}
	b, ok := providers.AsBatchTrasher(p)
	if !ok {
		return nil, statusFromError(fmt.Errorf("trash batch: %w", providers.ErrUnsupported))
	}
	reqs := make([]providers.ActionRequest, len(req.GetItems()))
	for i, it := range req.GetItems() {
		reqs[i] = providers.ActionRequest{SourceRef: it.GetSourceRef(), ObjectID: it.GetObjectId(), ExpectedVersion: it.GetExpectedVersion()}
	}
	outs, err := b.TrashBatch(ctx, reqs)
	if err != nil {
		return nil, statusFromError(err)
	}
	if len(outs) != len(reqs) {
		return nil, statusFromError(fmt.Errorf("trash batch: %d outcomes for %d requests: %w", len(outs), len(reqs), providers.ErrInvalidData))
	}
	resp := &pluginpb.TrashBatchResponse{Results: make([]*pluginpb.TrashBatchResult, len(outs))}
	for i, o := range outs {
		r := &pluginpb.TrashBatchResult{ResultId: o.Result.ResultID, Restorable: o.Result.Restorable}
		if o.Err != nil {
			r = &pluginpb.TrashBatchResult{}
			r.Error, r.ErrorMessage = itemError(o.Err)
		}
		resp.Results[i] = r
	}
	return resp, nil
}

// fetchBatchMessageBytes is about how much content one message of a FetchBatch stream
// carries: several small objects a message (each message costs both sides a few
// microseconds), and the first ones reach the host while the plugin reads the rest.
const fetchBatchMessageBytes = 128 << 10

func (s *server) FetchBatch(req *pluginpb.FetchBatchRequest, stream grpc.ServerStreamingServer[pluginpb.FetchBatchResponse]) error {
	p, err := s.instance(req.GetInstanceId())
	if err != nil {
		return err
	}
	b, ok := providers.AsBatchFetcher(p)
	if !ok {
		return statusFromError(fmt.Errorf("fetch batch: %w", providers.ErrUnsupported))
	}
	reqs := make([]providers.FetchRequest, len(req.GetItems()))
	for i, it := range req.GetItems() {
		reqs[i] = providers.FetchRequest{SourceRef: it.GetSourceRef(), ObjectID: it.GetObjectId(), ExpectedVersion: it.GetExpectedVersion()}
	}
	// Results are written straight into the wire format of a FetchBatchResponse
	// (fetchwire.go), gathered into messages of about fetchBatchMessageBytes, and handed to
	// gRPC as a message's unknown fields, which it copies out verbatim. Send marshals before
	// it returns, so one buffer serves every message.
	resp := &pluginpb.FetchBatchResponse{}
	var buf []byte
	var sendErr error
	send := func() {
		if len(buf) > 0 && sendErr == nil {
			resp.ProtoReflect().SetUnknown(buf)
			sendErr = stream.Send(resp)
		}
		buf = buf[:0]
	}
	err = b.FetchBatch(stream.Context(), reqs, func(i int, out providers.FetchOutcome) {
		if sendErr != nil {
			return
		}
		if buf == nil {
			buf = make([]byte, 0, fetchBatchMessageBytes+64<<10)
		}
		buf = appendFetchBatchResult(buf, i, &out)
		if len(buf) >= fetchBatchMessageBytes {
			send()
		}
	})
	send()
	if err != nil {
		return statusFromError(err)
	}
	return sendErr
}

func (s *server) Remove(ctx context.Context, req *pluginpb.RemoveRequest) (*pluginpb.RemoveResponse, error) {
	p, err := s.instance(req.GetInstanceId())
	if err != nil {
		return nil, err
	}
	r, ok := providers.AsRemover(p)
	if !ok {
		return nil, statusFromError(fmt.Errorf("remove: %w", providers.ErrUnsupported))
	}
	res, err := r.Remove(ctx, providers.ActionRequest{SourceRef: req.GetSourceRef(), ObjectID: req.GetObjectId(), ExpectedVersion: req.GetExpectedVersion()})
	if err != nil {
		return nil, statusFromError(err)
	}
	return &pluginpb.RemoveResponse{ResultId: res.ResultID}, nil
}

func (s *server) Untrash(ctx context.Context, req *pluginpb.UntrashRequest) (*pluginpb.UntrashResponse, error) {
	p, err := s.instance(req.GetInstanceId())
	if err != nil {
		return nil, err
	}
	u, ok := providers.AsUntrasher(p)
	if !ok {
		return nil, statusFromError(fmt.Errorf("untrash: %w", providers.ErrUnsupported))
	}
	o, err := u.Untrash(ctx, providers.UntrashRequest{SourceRef: req.GetSourceRef(), ObjectID: req.GetObjectId(), ResultID: req.GetResultId()})
	if err != nil {
		return nil, statusFromError(err)
	}
	return &pluginpb.UntrashResponse{Object: objectToProto(&o)}, nil
}

func (s *server) Quota(ctx context.Context, req *pluginpb.QuotaRequest) (*pluginpb.QuotaResponse, error) {
	p, err := s.instance(req.GetInstanceId())
	if err != nil {
		return nil, err
	}
	q, ok := providers.AsQuotaer(p)
	if !ok {
		return nil, statusFromError(fmt.Errorf("quota: %w", providers.ErrUnsupported))
	}
	res, err := q.Quota(ctx, req.GetSourceRef())
	if err != nil {
		return nil, statusFromError(err)
	}
	return quotaToProto(res), nil
}

// WatchCredentials sends the instance's credentials each time its provider reports new ones,
// the newest only when several came while a send was under way, until the instance closes,
// another watch of it starts, or the host ends the stream.
func (s *server) WatchCredentials(req *pluginpb.WatchCredentialsRequest, stream grpc.ServerStreamingServer[pluginpb.WatchCredentialsResponse]) error {
	p, err := s.instance(req.GetInstanceId())
	if err != nil {
		return err
	}
	w, ok := providers.AsCredentialWatcher(p)
	if !ok {
		return statusFromError(fmt.Errorf("watch credentials: %w", providers.ErrUnsupported))
	}
	newest := make(chan providers.Config, 1)
	done := s.startWatch(req.GetInstanceId(), w, func(cfg providers.Config) {
		cfg = providers.Credentials(cfg)
		for {
			select {
			case newest <- cfg:
				return
			default:
				select { // drop the one not sent yet: this one supersedes it
				case <-newest:
				default:
				}
			}
		}
	})
	defer s.stopWatch(req.GetInstanceId(), done, w)
	for {
		select {
		case cfg := <-newest:
			if err := stream.Send(&pluginpb.WatchCredentialsResponse{Config: cfg}); err != nil {
				return err
			}
		case <-done:
			return nil
		case <-stream.Context().Done():
			return nil
		}
	}
}

// startWatch makes fn the instance's credentials watcher, ending the watch it had (a host
// that watches again after losing its stream), and returns the channel that closes when this
// watch ends.
func (s *server) startWatch(id uint64, w providers.CredentialWatcher, fn func(providers.Config)) chan struct{} {
	s.watchMu.Lock()
	defer s.watchMu.Unlock()
	if s.watching == nil {
		s.watching = map[uint64]chan struct{}{}
	}
	if prev, ok := s.watching[id]; ok {
		close(prev)
	}
	done := make(chan struct{})
	s.watching[id] = done
	w.WatchCredentials(fn)
	return done
}

// stopWatch ends the instance's watch if it is still done's (w, when given, is then told to
// stop calling), and does nothing if another has taken its place.
func (s *server) stopWatch(id uint64, done chan struct{}, w providers.CredentialWatcher) {
	s.watchMu.Lock()
	defer s.watchMu.Unlock()
	cur, ok := s.watching[id]
	if !ok || (done != nil && cur != done) {
		return
	}
	close(cur)
	delete(s.watching, id)
	if w != nil {
		w.WatchCredentials(nil)
	}
}

func (s *server) Write(stream grpc.ClientStreamingServer[pluginpb.WriteRequest, pluginpb.WriteResponse]) error {
	first, err := stream.Recv()
	if err != nil {
		return err
	}
	hdr := first.GetHeader()
	if hdr == nil {
		return statusFromError(fmt.Errorf("write: first message is not a header: %w", providers.ErrInvalidArgument))
	}
	p, err := s.instance(hdr.GetInstanceId())
	if err != nil {
		return err
	}
	w, ok := providers.AsWriter(p)
	if !ok {
		return statusFromError(fmt.Errorf("write: %w", providers.ErrUnsupported))
	}
	o, err := w.Write(stream.Context(), writeHeaderFromProto(hdr), &writeStreamReader{stream: stream})
	if err != nil {
		return statusFromError(err)
	}
	return stream.SendAndClose(&pluginpb.WriteResponse{Object: objectToProto(&o)})
}

// writeStreamReader reads the chunks of a Write stream.
type writeStreamReader struct {
	stream grpc.ClientStreamingServer[pluginpb.WriteRequest, pluginpb.WriteResponse]
	buf    []byte
}

func (r *writeStreamReader) Read(p []byte) (int, error) {
	for len(r.buf) == 0 {
		m, err := r.stream.Recv()
		if err != nil {
			if errors.Is(err, io.EOF) {
				return 0, io.EOF
			}
			return 0, err
		}
		r.buf = m.GetChunk()
	}
	n := copy(p, r.buf)
	r.buf = r.buf[n:]
	return n, nil
}
