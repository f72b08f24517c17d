package simulated

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"svc.dev/svc/providers"
)

// Description is the simulated provider's description.
var Description = providers.Description{
	Name:             providers.Simulated,
	ProtocolVersion:  providers.ProtocolVersion,
	DisplayName:      "Simulated mail and files",
	Capabilities:     []providers.Capability{providers.CapTrash, providers.CapRemove, providers.CapUntrash, providers.CapWrite, providers.CapQuota, providers.CapTrashBatch, providers.CapFetchBatch},
	OperationClasses: providers.OperationClassesFor([]providers.Capability{providers.CapTrash, providers.CapRemove, providers.CapUntrash, providers.CapWrite, providers.CapQuota}),
	ObjectKinds:      []providers.Kind{providers.KindMessage, providers.KindFile, providers.KindPhoto, providers.KindVideo, providers.KindStatement},
	MarkerKinds:      []providers.MarkerKind{providers.MarkerHistoryID},
}

// MaxObjects is the largest source the provider generates.
const MaxObjects = 10_000_000

// maxWrittenBytes bounds the content written to a simulated provider, which
// keeps it in memory.
const maxWrittenBytes = 256 << 20

// Options configures the factory.
type Options struct {
	// Crash is called when an injected crash fires. Nil makes the call fail
	// with an error wrapping providers.ErrTransient.
	Crash func()
}

// New opens a simulated provider in process. It is a providers.Factory.
func New(ctx context.Context, cfg providers.Config) (providers.Provider, error) {
	return NewFactory(Options{})(ctx, cfg)
}

// NewFactory returns a factory with the given options.
func NewFactory(opts Options) providers.Factory {
	return func(_ context.Context, cfg providers.Config) (providers.Provider, error) {
		return open(cfg, opts)
	}
}

type config struct {
	seed               uint64
	objects            int
	epoch              time.Time
	latency            time.Duration
	transientEvery     int64
	versionChangeAfter int64
	hangAfter          int64
	crashAfter         int64
	crashMidFetch      int64
}

func parseConfig(cfg providers.Config) (config, error) {
	c := config{seed: 1, objects: 1000, epoch: time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)}
	var err error
	for k, v := range cfg {
		switch k {
		case "seed":
			c.seed, err = strconv.ParseUint(v, 10, 64)
		case "objects":
			c.objects, err = strconv.Atoi(v)
			if err == nil && (c.objects < 0 || c.objects > MaxObjects) {
				err = fmt.Errorf("out of range 0..%d", MaxObjects)
			}
		case "epoch":
			c.epoch, err = time.Parse(time.RFC3339, v)
		case "latency":
			c.latency, err = time.ParseDuration(v)
		case "transient_every":
			c.transientEvery, err = strconv.ParseInt(v, 10, 64)
		case "version_change_after":
			c.versionChangeAfter, err = strconv.ParseInt(v, 10, 64)
		case "hang_after":
			c.hangAfter, err = strconv.ParseInt(v, 10, 64)
		case "crash_after":
			c.crashAfter, err = strconv.ParseInt(v, 10, 64)
		case "crash_mid_fetch":
			c.crashMidFetch, err = strconv.ParseInt(v, 10, 64)
		default:
			err = fmt.Errorf("unknown key")
		}
		if err != nil {
			return c, fmt.Errorf("simulated: config %q: %v: %w", k, err, providers.ErrInvalidArgument)
		}
	}
	return c, nil
}

// Provider is a simulated provider instance.
type Provider struct {
	cfg   config
	crash func()

	calls   atomic.Int64
	fetches atomic.Int64
	changed atomic.Bool // the version_change_after fault fired

	mu      sync.Mutex
	sources map[string]*source
}

var (
	_ providers.Provider  = (*Provider)(nil)
	_ providers.Trasher   = (*Provider)(nil)
	_ providers.Remover   = (*Provider)(nil)
	_ providers.Untrasher = (*Provider)(nil)
	_ providers.Writer    = (*Provider)(nil)
	_ providers.Quotaer   = (*Provider)(nil)
)

func open(cfg providers.Config, opts Options) (*Provider, error) {
	c, err := parseConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &Provider{cfg: c, crash: opts.Crash, sources: make(map[string]*source)}, nil
}

// Describe implements providers.Provider.
func (p *Provider) Describe(context.Context) (providers.Description, error) { return Description, nil }

// source is the mutable overlay of one generated source: what was changed
// since generation. Its size grows with mutations, not with the source.
type source struct {
	ref     string
	files   bool
	seed    uint64
	gen     uint64 // history id: the number of mutations
	log     []mutation
	over    map[int]*override
	written []*written
	genUsed int64 // bytes of all generated objects; -1 until computed
}

type mutation struct {
	id      string
	deleted bool
}

type override struct {
	version string
	trashed bool
	removed bool
}

type written struct {
	obj     providers.Object
	data    []byte
	trashed bool
	removed bool
}

var errCrash = fmt.Errorf("simulated crash (in process): %w", providers.ErrTransient)

// enter applies the per-call faults. It returns an error for the call to
// fail with.
func (p *Provider) enter(ctx context.Context) error {
	n := p.calls.Add(1)
	if p.cfg.latency > 0 {
		select {
		case <-time.After(p.cfg.latency):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if p.cfg.crashAfter > 0 && n > p.cfg.crashAfter {
		if err := p.doCrash(); err != nil {
			return err
		}
	}
	if p.cfg.hangAfter > 0 && n > p.cfg.hangAfter {
		<-ctx.Done()
		return ctx.Err()
	}
	if p.cfg.transientEvery > 0 && n%p.cfg.transientEvery == 0 {
		return fmt.Errorf("simulated throttling (call %d): %w", n, providers.ErrTransient)
	}
	return ctx.Err()
}

func (p *Provider) doCrash() error {
	if p.crash != nil {
		p.crash()
	}
	return errCrash
}

// source returns the overlay of ref, creating it.
func (p *Provider) source(ref string) (*source, error) {
	kind, account, _ := strings.Cut(ref, "/")
	if kind != "mail" && kind != "files" {
		return nil, fmt.Errorf("simulated: source %q: want mail or files, optionally /account: %w", ref, providers.ErrNotFound)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	s, ok := p.sources[ref]
	if !ok {
		s = &source{ref: ref, files: kind == "files", seed: mix(p.cfg.seed ^ hashString(kind+"/"+account)), over: make(map[int]*override), genUsed: -1}
		p.sources[ref] = s
	}
	return s, nil
}

func (s *source) marker() providers.Marker {
	return providers.Marker{Kind: providers.MarkerHistoryID, Value: strconv.FormatUint(s.gen, 10)}
}

func (s *source) record(id string, deleted bool) {
	s.gen++
	s.log = append(s.log, mutation{id: id, deleted: deleted})
}

// lookup resolves an id to a generated index or a written object. Callers
// hold p.mu.
func (p *Provider) lookup(s *source, id string) (int, *written, error) {
	if i, ok := parseID(s.files, id); ok && i < p.cfg.objects {
		if o := s.over[i]; o != nil && o.removed {
			return 0, nil, fmt.Errorf("object %q: %w", id, providers.ErrNotFound)
		}
		return i, nil, nil
	}
	for _, w := range s.written {
		if w.obj.ID == id && !w.removed {
			return -1, w, nil
		}
	}
	return 0, nil, fmt.Errorf("object %q: %w", id, providers.ErrNotFound)
}

// object returns the current metadata of generated object i. Callers hold
// p.mu or accept a racy overlay read under it.
func (p *Provider) object(s *source, i int) providers.Object {
	o := generate(s.seed, s.files, i, p.cfg.epoch)
	if ov := s.over[i]; ov != nil && ov.version != "" {
		o.Version = ov.version
	}
	return o
}

// List implements providers.Provider. Page tokens are "i:N" (the next
// generated index) or "w:N" (the next written object).
func (p *Provider) List(ctx context.Context, req providers.ListRequest) (providers.Page, error) {
	if err := p.enter(ctx); err != nil {
		return providers.Page{}, err
	}
	s, err := p.source(req.SourceRef)
	if err != nil {
		return providers.Page{}, err
	}
	size := providers.ClampPageSize(req.PageSize)
	phase, pos, err := parseToken(req.PageToken)
	if err != nil {
		return providers.Page{}, err
	}
	page := providers.Page{Objects: make([]providers.Object, 0, size)}
	p.mu.Lock()
	defer p.mu.Unlock()
	if phase == 'i' {
		for ; pos < p.cfg.objects && len(page.Objects) < size; pos++ {
			if ov := s.over[pos]; ov != nil && (ov.trashed || ov.removed) {
				continue
			}
			page.Objects = append(page.Objects, p.object(s, pos))
		}
		if pos < p.cfg.objects {
			page.NextPageToken = "i:" + strconv.Itoa(pos)
			return page, nil
		}
		phase, pos = 'w', 0
	}
	for ; pos < len(s.written) && len(page.Objects) < size; pos++ {
		if w := s.written[pos]; !w.trashed && !w.removed {
			page.Objects = append(page.Objects, w.obj)
		}
	}
	if pos < len(s.written) {
		page.NextPageToken = "w:" + strconv.Itoa(pos)
	}
	page.Marker = s.marker()
	return page, nil
}

func parseToken(t string) (byte, int, error) {
	if t == "" {
		return 'i', 0, nil
	}
	if len(t) > 2 && (t[0] == 'i' || t[0] == 'w') && t[1] == ':' {
		if n, err := strconv.Atoi(t[2:]); err == nil && n >= 0 {
			return t[0], n, nil
		}
	}
	return 0, 0, fmt.Errorf("simulated: page token %q: %w", t, providers.ErrInvalidArgument)
}

// Changes implements providers.Provider for history_id markers.
func (p *Provider) Changes(ctx context.Context, req providers.ChangesRequest) (providers.ChangePage, error) {
	if err := p.enter(ctx); err != nil {
		return providers.ChangePage{}, err
	}
	s, err := p.source(req.SourceRef)
	if err != nil {
		return providers.ChangePage{}, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	since, err := strconv.ParseUint(req.Since.Value, 10, 64)
	if req.Since.Kind != providers.MarkerHistoryID || err != nil || since > s.gen {
		return providers.ChangePage{}, fmt.Errorf("simulated: marker %v: %w", req.Since, providers.ErrMarkerExpired)
	}
	pos := int(since)
	if req.PageToken != "" {
		n, err := strconv.Atoi(req.PageToken)
		if err != nil || n < pos || n > len(s.log) {
			return providers.ChangePage{}, fmt.Errorf("simulated: page token %q: %w", req.PageToken, providers.ErrInvalidArgument)
		}
		pos = n
	}
	size := providers.ClampPageSize(req.PageSize)
	var page providers.ChangePage
	for ; pos < len(s.log) && len(page.Changes) < size; pos++ {
		m := s.log[pos]
		c := providers.Change{Type: providers.ChangeDelete, ObjectID: m.id}
		if !m.deleted {
			if o, ok := p.current(s, m.id); ok {
				c = providers.Change{Type: providers.ChangeUpsert, ObjectID: m.id, Object: &o}
			}
		}
		page.Changes = append(page.Changes, c)
	}
	if pos < len(s.log) {
		page.NextPageToken = strconv.Itoa(pos)
	} else {
		page.Marker = s.marker()
	}
	return page, nil
}

// current returns an object's current metadata if it is visible (not
// trashed or removed). Callers hold p.mu.
func (p *Provider) current(s *source, id string) (providers.Object, bool) {
	i, w, err := p.lookup(s, id)
	switch {
	case err != nil:
		return providers.Object{}, false
	case w != nil:
		return w.obj, !w.trashed
	}
	if ov := s.over[i]; ov != nil && ov.trashed {
		return providers.Object{}, false
	}
	return p.object(s, i), true
}

// resolve finds a visible object for an action and applies the
// version_change_after fault. Callers hold p.mu.
func (p *Provider) resolve(s *source, id, expected string) (int, *written, providers.Object, error) {
	i, w, err := p.lookup(s, id)
	if err != nil {
		return 0, nil, providers.Object{}, err
	}
	if w == nil && p.cfg.versionChangeAfter > 0 && p.fetches.Load() >= p.cfg.versionChangeAfter && p.changed.CompareAndSwap(false, true) {
		// The injected change mid-run: the object was edited at the source.
		ov := s.over[i]
		if ov == nil {
			ov = &override{}
			s.over[i] = ov
		}
		s.record(id, false)
		ov.version = "v" + strconv.FormatUint(s.gen+1, 10)
	}
	var o providers.Object
	if w != nil {
		o = w.obj
	} else {
		o = p.object(s, i)
	}
	if expected != "" && o.Version != expected {
		return 0, nil, o, &providers.VersionMismatchError{ObjectID: id, Expected: expected, Actual: o.Version}
	}
	return i, w, o, nil
}
