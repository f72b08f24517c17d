package plugin

import (
	"context"
	"errors"
	"fmt"
	"io"

	"google.golang.org/grpc"

	"svc.dev/svc/providers"
	"svc.dev/svc/providers/internal/pluginpb"
)

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
