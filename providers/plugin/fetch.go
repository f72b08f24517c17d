package plugin

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/status"

	"svc.dev/svc/providers"
	"svc.dev/svc/providers/internal/pluginpb"
)

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
	case req.MaxBytes > 0 && obj.SizeBytes > req.MaxBytes:
		return providers.FetchOutcome{Err: &providers.Error{Op: "fetch", Provider: r.desc.Name, ObjectID: req.ObjectID,
			Err: fmt.Errorf("%w: %d bytes, at most %d accepted", providers.ErrTooLarge, obj.SizeBytes, req.MaxBytes)}}, nil
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
	if req.MaxBytes > 0 && obj.SizeBytes > req.MaxBytes {
		// More than the caller accepts (what the plan authorized): not one
		// byte of it is read, and the stream's exact length is checked
		// against the declared size, so nothing larger can follow.
		return fail(fmt.Errorf("%w: %q is %d bytes, at most %d accepted", providers.ErrTooLarge, obj.ID, obj.SizeBytes, req.MaxBytes), false)
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
		// A plugin that exits mid-content can end the stream cleanly a moment before its
		// connection breaks: that is a crash (retried), not a lie about the content.
		if exited(b.proc, 500*time.Millisecond) {
			return b.wrap(fmt.Errorf("%w: the plugin exited before the end of the content", providers.ErrPluginCrashed))
		}
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
