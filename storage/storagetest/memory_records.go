package storagetest

// The in-memory Memory store's collections: plans, executions, journals, sources,
// destinations, receipts, manifests and events.

import (
	"context"
	"fmt"
	"iter"
	"slices"
	"strings"

	"google.golang.org/protobuf/proto"

	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/storage"
)

type memPlans struct{ m *Memory }

func newPlan() *svcv1.Plan { return &svcv1.Plan{} }

func (x memPlans) Put(_ context.Context, tenant string, p *svcv1.Plan, also ...storage.Write) error {
	return x.m.change(also, func() error { return x.m.put("plan", tenant, p.GetPlanId(), p) })
}

func (x memPlans) FillSmall(ctx context.Context, tenant string, plans []*svcv1.Plan, limit int) (bool, error) {
	total := 0
	for _, p := range plans {
		if total += int(p.GetProjection().GetObjectCount()); total > limit {
			return false, nil
		}
	}
	for _, p := range plans {
		if err := x.Fill(ctx, tenant, p); err != nil {
			return false, err
		}
	}
	return true, nil
}

func (x memPlans) Get(_ context.Context, tenant, id string) (*svcv1.Plan, error) {
	x.m.mu.Lock()
	defer x.m.mu.Unlock()
	return get(x.m, "plan", tenant, id, newPlan())
}

func (x memPlans) Header(ctx context.Context, tenant, id string) (*svcv1.Plan, error) {
	p, err := x.Get(ctx, tenant, id)
	if err != nil {
		return nil, err
	}
	p.Objects = nil
	return p, nil
}

func (x memPlans) Fill(ctx context.Context, tenant string, p *svcv1.Plan) error {
	if len(p.Objects) > 0 {
		return nil
	}
	whole, err := x.Get(ctx, tenant, p.GetPlanId())
	if err != nil {
		return err
	}
	p.Objects = whole.Objects
	return nil
}

func (x memPlans) Objects(ctx context.Context, tenant, id string) iter.Seq2[[]*svcv1.PlanObject, error] {
	return func(yield func([]*svcv1.PlanObject, error) bool) {
		p, err := x.Get(ctx, tenant, id)
		if err != nil {
			yield(nil, err)
			return
		}
		for objs := range slices.Chunk(p.Objects, 1024) {
			if !yield(objs, nil) {
				return
			}
		}
	}
}

func (x memPlans) Page(ctx context.Context, tenant string, h *svcv1.Plan, start, limit int) ([]*svcv1.PlanObject, bool, error) {
	p, err := x.Get(ctx, tenant, h.GetPlanId())
	if err != nil {
		return nil, false, err
	}
	if start >= len(p.Objects) {
		return nil, false, nil
	}
	end := min(len(p.Objects), start+limit)
	return p.Objects[start:end], end < len(p.Objects), nil
}

func (x memPlans) Update(_ context.Context, tenant, id string, fn func(*svcv1.Plan) error, also ...storage.Write) error {
	return x.m.change(also, func() error {
		p, err := get(x.m, "plan", tenant, id, newPlan())
		if err != nil {
			return err
		}
		if err := fn(p); err != nil {
			return err
		}
		return x.m.put("plan", tenant, id, p)
	})
}

func (x memPlans) UpdateHeader(ctx context.Context, tenant, id string, fn func(*svcv1.Plan) error, also ...storage.Write) error {
	return x.Update(ctx, tenant, id, fn, also...)
}

func (x memPlans) Scan(_ context.Context, tenant string, fn func(*svcv1.Plan) bool) error {
	x.m.mu.Lock()
	defer x.m.mu.Unlock()
	return scan(x.m, "plan", tenant, newPlan, func(_ string, p *svcv1.Plan) bool { p.Objects = nil; return fn(p) })
}

type memExecutions struct{ m *Memory }

func newExecution() *svcv1.Execution { return &svcv1.Execution{} }

func (x memExecutions) Get(_ context.Context, tenant, id string) (*svcv1.Execution, error) {
	x.m.mu.Lock()
	defer x.m.mu.Unlock()
	return get(x.m, "execution", tenant, id, newExecution())
}

func (x memExecutions) Update(_ context.Context, tenant, id string, fn func(*svcv1.Execution) error, also ...storage.Write) error {
	return x.m.change(also, func() error {
		e, err := get(x.m, "execution", tenant, id, newExecution())
		if err != nil {
			return err
		}
		if err := fn(e); err != nil {
			return err
		}
		return x.m.put("execution", tenant, id, e)
	})
}

func (x memExecutions) PutWrite(tenant string, e *svcv1.Execution) storage.Write {
	return memWrite{x.m, func() error { return x.m.put("execution", tenant, e.GetId(), e) }}
}

func (x memExecutions) ScanAll(_ context.Context, fn func(string, *svcv1.Execution) bool) error {
	x.m.mu.Lock()
	defer x.m.mu.Unlock()
	var keys []string
	for k := range x.m.records {
		if strings.HasPrefix(k, "execution\x00") {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		parts := strings.Split(k, "\x00")
		e := newExecution()
		if err := proto.Unmarshal(x.m.records[k], e); err != nil {
			return err
		}
		if !fn(parts[1], e) {
			return nil
		}
	}
	return nil
}

func (x memExecutions) Scan(_ context.Context, tenant string, fn func(*svcv1.Execution) bool) error {
	x.m.mu.Lock()
	defer x.m.mu.Unlock()
	return scan(x.m, "execution", tenant, newExecution, func(_ string, e *svcv1.Execution) bool { return fn(e) })
}

type memJournal struct{ m *Memory }

func (j memJournal) Append(_ context.Context, tenant, exeID string, entries [][]byte) error {
	j.m.mu.Lock()
	defer j.m.mu.Unlock()
	for _, e := range entries {
		j.m.journal[tenant+"/"+exeID] = append(j.m.journal[tenant+"/"+exeID], slices.Clone(e))
	}
	return nil
}

func (j memJournal) Read(_ context.Context, tenant, exeID string) ([][]byte, error) {
	j.m.mu.Lock()
	defer j.m.mu.Unlock()
	return slices.Clone(j.m.journal[tenant+"/"+exeID]), nil
}

// ScanAfter's positions are an entry's index plus one.
func (j memJournal) ScanAfter(ctx context.Context, tenant, exeID string, after uint64, fn func(uint64, []byte) error) error {
	j.m.mu.Lock()
	all := j.m.journal[tenant+"/"+exeID]
	entries := slices.Clone(all[min(uint64(len(all)), after):])
	j.m.mu.Unlock()
	for i, e := range entries {
		if err := fn(after+uint64(i)+1, e); err != nil {
			return err
		}
	}
	return nil
}

func (j memJournal) Scan(ctx context.Context, tenant, exeID string, fn func([]byte) error) error {
	entries, err := j.Read(ctx, tenant, exeID)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if err := fn(e); err != nil {
			return err
		}
	}
	return nil
}

type memSources struct{ m *Memory }

func newSource() *svcv1.Source { return &svcv1.Source{} }

func (x memSources) Get(_ context.Context, tenant, id string) (*svcv1.Source, error) {
	x.m.mu.Lock()
	defer x.m.mu.Unlock()
	return get(x.m, "source", tenant, id, newSource())
}

func (x memSources) Put(_ context.Context, tenant string, src *svcv1.Source) error {
	return x.m.change(nil, func() error { return x.m.put("source", tenant, src.GetId(), src) })
}

func (x memSources) Update(_ context.Context, tenant, id string, fn func(*svcv1.Source) error) error {
	return x.m.change(nil, func() error {
		src, err := get(x.m, "source", tenant, id, newSource())
		if err != nil {
			return err
		}
		if err := fn(src); err != nil {
			return err
		}
		return x.m.put("source", tenant, id, src)
	})
}

func (x memSources) Scan(_ context.Context, tenant string, fn func(*svcv1.Source) bool) error {
	x.m.mu.Lock()
	defer x.m.mu.Unlock()
	return scan(x.m, "source", tenant, newSource, func(_ string, s *svcv1.Source) bool { return fn(s) })
}

func (x memSources) PutConfig(_ context.Context, tenant, id string, sealed []byte) error {
	x.m.mu.Lock()
	defer x.m.mu.Unlock()
	x.m.records[key("source_config", tenant, id)] = slices.Clone(sealed)
	return nil
}

func (x memSources) Config(_ context.Context, tenant, id string) ([]byte, error) {
	x.m.mu.Lock()
	defer x.m.mu.Unlock()
	b, ok := x.m.records[key("source_config", tenant, id)]
	if !ok {
		return nil, fmt.Errorf("source %s configuration: %w", id, storage.ErrNotFound)
	}
	return slices.Clone(b), nil
}

type memDestinations struct{ m *Memory }

func (x memDestinations) Get(_ context.Context, tenant, id string) (*svcv1.Destination, error) {
	x.m.mu.Lock()
	defer x.m.mu.Unlock()
	return get(x.m, "destination", tenant, id, &svcv1.Destination{})
}

func (x memDestinations) Put(_ context.Context, tenant string, d *svcv1.Destination) error {
	return x.m.change(nil, func() error { return x.m.put("destination", tenant, d.GetDestinationId(), d) })
}

func (x memDestinations) PutOrigin(_ context.Context, tenant, id, sourceID string) error {
	x.m.mu.Lock()
	defer x.m.mu.Unlock()
	x.m.records[key("destination_origin", tenant, id)] = []byte(sourceID)
	return nil
}

func (x memDestinations) Origin(_ context.Context, tenant, id string) (string, error) {
	x.m.mu.Lock()
	defer x.m.mu.Unlock()
	b, ok := x.m.records[key("destination_origin", tenant, id)]
	if !ok {
		return "", fmt.Errorf("destination %s origin: %w", id, storage.ErrNotFound)
	}
	return string(b), nil
}

type memReceipts struct{ m *Memory }

func (r memReceipts) Get(_ context.Context, tenant, id string) ([]byte, error) {
	r.m.mu.Lock()
	defer r.m.mu.Unlock()
	b, ok := r.m.records[key("receipt", tenant, id)]
	if !ok {
		return nil, fmt.Errorf("receipt %s: %w", id, storage.ErrNotFound)
	}
	return slices.Clone(b), nil
}

func (r memReceipts) Put(_ context.Context, tenant, id string, raw []byte) error {
	r.m.mu.Lock()
	defer r.m.mu.Unlock()
	r.m.records[key("receipt", tenant, id)] = slices.Clone(raw)
	return nil
}

type memManifests struct{ m *Memory }

func newManifest() *svcv1.Manifest { return &svcv1.Manifest{} }

func (x memManifests) Get(_ context.Context, tenant, assetID string) (*svcv1.Manifest, error) {
	x.m.mu.Lock()
	defer x.m.mu.Unlock()
	return get(x.m, "manifest", tenant, assetID, newManifest())
}

func (x memManifests) Put(_ context.Context, tenant, assetID string, v *svcv1.Manifest) error {
	return x.m.change(nil, func() error { return x.m.put("manifest", tenant, assetID, v) })
}

func (x memManifests) Update(ctx context.Context, tenant, assetID string, fn func(*svcv1.Manifest) error) error {
	return x.m.change(nil, func() error {
		v, err := get(x.m, "manifest", tenant, assetID, newManifest())
		if err != nil {
			return err
		}
		if err := fn(v); err != nil {
			return err
		}
		return x.m.put("manifest", tenant, assetID, v)
	})
}

func (x memManifests) Upsert(_ context.Context, tenant, assetID string, create func() (*svcv1.Manifest, error), fn func(*svcv1.Manifest) error, also ...storage.Write) error {
	return x.m.change(also, func() error {
		v, err := get(x.m, "manifest", tenant, assetID, newManifest())
		if err != nil {
			if v, err = create(); err != nil {
				return err
			}
		}
		if err := fn(v); err != nil {
			return err
		}
		return x.m.put("manifest", tenant, assetID, v)
	})
}

func (x memManifests) Scan(_ context.Context, tenant string, fn func(*svcv1.Manifest) bool) error {
	x.m.mu.Lock()
	defer x.m.mu.Unlock()
	return scan(x.m, "manifest", tenant, newManifest, func(_ string, v *svcv1.Manifest) bool { return fn(v) })
}

func (x memManifests) All(ctx context.Context, tenant string) iter.Seq2[*svcv1.Manifest, error] {
	return func(yield func(*svcv1.Manifest, error) bool) {
		var ms []*svcv1.Manifest
		if err := x.Scan(ctx, tenant, func(m *svcv1.Manifest) bool { ms = append(ms, m); return true }); err != nil {
			yield(nil, err)
			return
		}
		for _, m := range ms {
			if !yield(m, nil) {
				return
			}
		}
	}
}

type memEvents struct{ m *Memory }

func (e memEvents) Write(ev *svcv1.Event, streams ...string) (storage.Write, error) {
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(ev)
	if err != nil {
		return nil, err
	}
	return memWrite{e.m, func() error {
		for _, s := range streams {
			e.m.records[key("event", s, ev.GetId())] = b
		}
		return nil
	}}, nil
}
