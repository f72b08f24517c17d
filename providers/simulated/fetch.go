package simulated

import (
	"context"
	"fmt"
	"io"
	"strings"

	"svc.dev/svc/providers"
)

// Fetch implements providers.Provider.
func (p *Provider) Fetch(ctx context.Context, req providers.FetchRequest) (*providers.Content, error) {
	if err := p.enter(ctx); err != nil {
		return nil, err
	}
	s, err := p.source(req.SourceRef)
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	i, w, o, err := p.resolve(s, req.ObjectID, req.ExpectedVersion)
	if err == nil && w == nil {
		if ov := s.over[i]; ov != nil && ov.trashed {
			err = fmt.Errorf("object %q is in the trash: %w", req.ObjectID, providers.ErrNotFound)
		}
	}
	p.mu.Unlock()
	if err != nil {
		return nil, err
	}
	p.fetches.Add(1)
	var body io.ReadCloser
	if w != nil {
		body = io.NopCloser(strings.NewReader(string(w.data)))
	} else {
		body = newContent(s.seed, s.files, i, p.cfg.epoch, o)
	}
	if p.cfg.crashMidFetch > 0 {
		body = &crashingReader{ReadCloser: body, left: p.cfg.crashMidFetch, p: p}
	}
	return &providers.Content{Object: o, Body: body}, nil
}

// FetchBatch implements providers.BatchFetcher: each object is fetched as Fetch fetches it
// (fault injection included), in order, its content read whole when it fits the batch's
// budget, else deferred.
func (p *Provider) FetchBatch(ctx context.Context, reqs []providers.FetchRequest, fn func(int, providers.FetchOutcome)) error {
	if len(reqs) > providers.MaxBatchSize {
		return fmt.Errorf("simulated: fetch batch of %d, at most %d: %w", len(reqs), providers.MaxBatchSize, providers.ErrInvalidArgument)
	}
	var budget providers.InlineBudget
	for i, req := range reqs {
		c, err := p.Fetch(ctx, req)
		if err != nil {
			fn(i, providers.FetchOutcome{Err: err})
			continue
		}
		if !budget.Take(c.Object.SizeBytes) {
			c.Body.Close()
			fn(i, providers.FetchOutcome{Deferred: true})
			continue
		}
		content := make([]byte, c.Object.SizeBytes)
		_, err = io.ReadFull(c.Body, content)
		c.Body.Close()
		if err != nil {
			fn(i, providers.FetchOutcome{Err: fmt.Errorf("simulated: read %q: %w", req.ObjectID, err)})
			continue
		}
		fn(i, providers.FetchOutcome{Object: c.Object, Content: content})
	}
	return nil
}

type crashingReader struct {
	io.ReadCloser
	left int64
	p    *Provider
}

func (r *crashingReader) Read(b []byte) (int, error) {
	if r.left <= 0 {
		return 0, r.p.doCrash()
	}
	if int64(len(b)) > r.left {
		b = b[:r.left]
	}
	n, err := r.ReadCloser.Read(b)
	r.left -= int64(n)
	return n, err
}

// TrashBatch implements providers.BatchTrasher: each request is trashed as
// Trash trashes it, in order.
func (p *Provider) TrashBatch(ctx context.Context, reqs []providers.ActionRequest) ([]providers.ActionOutcome, error) {
	if len(reqs) > providers.MaxBatchSize {
		return nil, fmt.Errorf("simulated: trash batch of %d, at most %d: %w", len(reqs), providers.MaxBatchSize, providers.ErrInvalidArgument)
	}
	outs := make([]providers.ActionOutcome, len(reqs))
	for i, req := range reqs {
		outs[i].Result, outs[i].Err = p.Trash(ctx, req)
	}
	return outs, nil
}

// Trash implements providers.Trasher.
func (p *Provider) Trash(ctx context.Context, req providers.ActionRequest) (providers.ActionResult, error) {
	if err := p.enter(ctx); err != nil {
		return providers.ActionResult{}, err
	}
	s, err := p.source(req.SourceRef)
	if err != nil {
		return providers.ActionResult{}, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	i, w, _, err := p.resolve(s, req.ObjectID, req.ExpectedVersion)
	if err != nil {
		return providers.ActionResult{}, err
	}
	res := providers.ActionResult{ResultID: "trash:" + req.ObjectID, Restorable: true}
	if w != nil {
		if !w.trashed {
			w.trashed = true
			s.record(req.ObjectID, true)
		}
		return res, nil
	}
	ov := s.over[i]
	if ov == nil {
		ov = &override{}
		s.over[i] = ov
	}
	if !ov.trashed {
		ov.trashed = true
		s.record(req.ObjectID, true)
	}
	return res, nil
}

// Remove implements providers.Remover.
func (p *Provider) Remove(ctx context.Context, req providers.ActionRequest) (providers.ActionResult, error) {
	if err := p.enter(ctx); err != nil {
		return providers.ActionResult{}, err
	}
	s, err := p.source(req.SourceRef)
	if err != nil {
		return providers.ActionResult{}, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	i, w, _, err := p.resolve(s, req.ObjectID, req.ExpectedVersion)
	if err != nil {
		return providers.ActionResult{}, err
	}
	if w != nil {
		w.removed, w.data = true, nil
	} else {
		ov := s.over[i]
		if ov == nil {
			ov = &override{}
			s.over[i] = ov
		}
		ov.removed = true
	}
	s.record(req.ObjectID, true)
	return providers.ActionResult{ResultID: "removed:" + req.ObjectID}, nil
}

// Untrash implements providers.Untrasher.
func (p *Provider) Untrash(ctx context.Context, req providers.UntrashRequest) (providers.Object, error) {
	if err := p.enter(ctx); err != nil {
		return providers.Object{}, err
	}
	s, err := p.source(req.SourceRef)
	if err != nil {
		return providers.Object{}, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if req.ResultID != "" && req.ResultID != "trash:"+req.ObjectID {
		return providers.Object{}, fmt.Errorf("simulated: result id %q does not name %q: %w", req.ResultID, req.ObjectID, providers.ErrInvalidArgument)
	}
	i, w, err := p.lookup(s, req.ObjectID)
	if err != nil {
		return providers.Object{}, err
	}
	if w != nil {
		if w.trashed {
			w.trashed = false
			s.record(req.ObjectID, false)
		}
		return w.obj, nil
	}
	if ov := s.over[i]; ov != nil && ov.trashed {
		ov.trashed = false
		s.record(req.ObjectID, false)
	}
	return p.object(s, i), nil
}

// Quota implements providers.Quotaer. Usage of the generated objects is
// computed once per source (a pass over its metadata), then adjusted by the
// changes since.
func (p *Provider) Quota(ctx context.Context, sourceRef string) (providers.Quota, error) {
	if err := p.enter(ctx); err != nil {
		return providers.Quota{}, err
	}
	s, err := p.source(sourceRef)
	if err != nil {
		return providers.Quota{}, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	q := providers.Quota{LimitBytes: 15 << 30, Breakdown: map[string]int64{}, ObservedAt: p.cfg.epoch}
	if s.files {
		q.LimitBytes = 100 << 30
	}
	if s.genUsed < 0 {
		s.genUsed = 0
		for i := 0; i < p.cfg.objects; i++ {
			s.genUsed += generate(s.seed, s.files, i, p.cfg.epoch).SizeBytes
		}
	}
	q.UsedBytes = s.genUsed
	for i, ov := range s.over {
		size := generate(s.seed, s.files, i, p.cfg.epoch).SizeBytes
		if ov.removed || ov.trashed {
			q.UsedBytes -= size
		}
		if ov.trashed && !ov.removed {
			q.TrashBytes += size
		}
	}
	for _, w := range s.written {
		switch {
		case w.removed:
		case w.trashed:
			q.TrashBytes += w.obj.SizeBytes
		default:
			q.UsedBytes += w.obj.SizeBytes
		}
	}
	q.Breakdown[map[bool]string{false: "mail", true: "files"}[s.files]] = q.UsedBytes
	q.Breakdown["trash"] = q.TrashBytes
	return q, nil
}
