package plugin

import (
	"context"
	"errors"
	"fmt"
	"net"

	"google.golang.org/grpc"
	"google.golang.org/grpc/status"

	"svc.dev/svc/providers"
	"svc.dev/svc/providers/internal/pluginpb"
)

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
