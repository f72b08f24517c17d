package creator

import (
	"bytes"
	"context"
	"fmt"
	"sort"
	"time"

	"svc.dev/svc/id"
)

// ErrNotFound is returned by a Store for an id it does not hold: id.ErrNotFound, svc's one "no
// such record".
var ErrNotFound = id.ErrNotFound

// Store is what creator revenue keeps, bound by the caller to one tenant. Implementations must
// make SaveResult atomic: a reader sees the former result or the new one, never a mix.
type Store interface {
	PutSource(ctx context.Context, s *Source) error
	// Source returns a source with its credentials (the caller unseals them); ErrNotFound when absent.
	Source(ctx context.Context, id string) (*Source, error)
	Sources(ctx context.Context) ([]*Source, error)
	DeleteSource(ctx context.Context, id string) error

	// PutUpload keeps an accepted statement upload of a source (a second upload of the same
	// name replaces the first).
	PutUpload(ctx context.Context, sourceID string, u Upload) error
	Uploads(ctx context.Context, sourceID string) ([]Upload, error)

	// Result is the last reconciliation (empty, not an error, before the first).
	Result(ctx context.Context) (*Result, error)
	SaveResult(ctx context.Context, r *Result) error
	// PutAnomaly replaces one anomaly of the last result (dismiss, reopen).
	PutAnomaly(ctx context.Context, a *Anomaly) error
}

// Service is creator revenue's domain API for the service layer: sources, uploads, the
// reconcile job, reads, dismiss and reopen. It holds no state of its own.
type Service struct {
	Deps Deps
	Now  func() time.Time // default time.Now
}

func (s *Service) now() time.Time {
	if s.Now != nil {
		return s.Now().UTC()
	}
	return time.Now().UTC()
}

// CreateSource validates a request, checks the credential with the platform (a refused one is
// a *CredentialError, and nothing is stored) and stores the connected source.
func (s *Service) CreateSource(ctx context.Context, st Store, req CreateRequest) (*Source, error) {
	src, err := NewSource(req, s.now())
	if err != nil {
		return nil, err
	}
	if err := Check(ctx, src, s.deps(st)); err != nil {
		return nil, err
	}
	src.Status = "connected"
	if err := st.PutSource(ctx, src); err != nil {
		return nil, fmt.Errorf("store creator source: %w", err)
	}
	return src, nil
}

func (s *Service) deps(st Store) Deps {
	d := s.Deps
	if d.Uploads == nil {
		d.Uploads = st.Uploads
	}
	return d
}

// UploadStatement checks one CSV statement (or terms file) for a statement source and keeps it
// when every row is good. A bad upload returns a *StatementError naming each bad row and changes
// nothing: the items already reconciled stay as they are until the next reconcile, which does
// not see the refused file.
func (s *Service) UploadStatement(ctx context.Context, st Store, sourceID, name string, data []byte) error {
	src, err := st.Source(ctx, sourceID)
	if err != nil {
		return err
	}
	if src.Kind != KindStatement {
		return &ValidationError{"source", fmt.Sprintf("%s is a %s source; statements are uploaded to statement sources", sourceID, src.Kind)}
	}
	// Currencies already established by this source's accepted uploads.
	known := map[string]string{}
	ups, err := st.Uploads(ctx, sourceID)
	if err != nil {
		return err
	}
	for _, u := range ups {
		if u.Name == name || isTermsFile(u.Name) {
			continue
		}
		if l, err := ParseStatement(bytes.NewReader(u.Data), StatementOptions{Path: u.Name}); err == nil {
			for _, a := range l.Activity {
				known[a.Stream] = a.Currency
			}
		}
	}
	opts := StatementOptions{Path: name, SourceID: sourceID, Known: known, ObservedAt: s.now()}
	if isTermsFile(name) {
		_, err = ParseTerms(bytes.NewReader(data), opts)
	} else {
		_, err = ParseStatement(bytes.NewReader(data), opts)
	}
	if err != nil {
		return err
	}
	return st.PutUpload(ctx, sourceID, Upload{Name: name, Data: append([]byte(nil), data...), UploadedAt: s.now()})
}

// SyncReport is what a reconcile job did: the new result, the anomalies it opened (each an
// svc.creator.anomaly.opened event), and what could not be read.
type SyncReport struct {
	Result   *Result
	Opened   []*Anomaly
	Resolved []*Anomaly
	Problems []string
}

// Reconcile is the body of a `reconcile` job: it collects every source, reconciles against the
// former result (dismissals kept, explained anomalies resolved) and saves the new result.
// progress, when set, is called with 0..100. A source that fails to collect is reported in
// Problems and its former items are kept as they were.
func (s *Service) Reconcile(ctx context.Context, st Store, asOf time.Time, progress func(int)) (*SyncReport, error) {
	if asOf.IsZero() {
		asOf = s.now()
	}
	if progress == nil {
		progress = func(int) {}
	}
	srcs, err := st.Sources(ctx)
	if err != nil {
		return nil, err
	}
	sort.Slice(srcs, func(i, j int) bool { return srcs[i].ID < srcs[j].ID })
	prev, err := st.Result(ctx)
	if err != nil {
		return nil, err
	}
	led := &Ledger{}
	failed := map[string]bool{}
	rep := &SyncReport{}
	d := s.deps(st)
	for i, src := range srcs {
		c, err := NewConnector(src, d)
		if err == nil {
			var l *Ledger
			if l, err = c.Collect(ctx, time.Time{}); err == nil {
				led.Add(l)
			}
		}
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			failed[src.ID] = true
			rep.Problems = append(rep.Problems, fmt.Sprintf("%s (%s): %v", src.ID, src.Kind, err))
		}
		progress(10 + 80*(i+1)/max(1, len(srcs)))
	}
	rep.Problems = append(rep.Problems, led.Problems...)
	res := Reconcile(led, Options{AsOf: asOf, Home: d.Home, Previous: prev})
	if prev != nil {
		// A failed source's former items and anomalies stay: no evidence is not evidence of absence.
		have := map[string]bool{}
		for _, it := range res.Items {
			have[it.ID] = true
		}
		for _, it := range prev.Items {
			if failed[it.CreatorSourceID] && !have[it.ID] {
				res.Items = append(res.Items, it)
			}
		}
		prevA := map[string]*Anomaly{}
		for _, a := range prev.Anomalies {
			prevA[a.ID] = a
		}
		kept := res.Anomalies[:0]
		for _, a := range res.Anomalies {
			if o := prevA[a.ID]; o != nil && failed[a.CreatorSourceID] {
				a = o // not resolved by a source that could not be read
			}
			kept = append(kept, a)
		}
		res.Anomalies = kept
	}
	// Items and anomalies of deleted sources do not come back as resolved.
	live := map[string]bool{"": true}
	for _, src := range srcs {
		live[src.ID] = true
	}
	keptA := res.Anomalies[:0]
	for _, a := range res.Anomalies {
		if live[a.CreatorSourceID] {
			keptA = append(keptA, a)
		}
	}
	res.Anomalies = keptA
	old := map[string]Status{}
	if prev != nil {
		for _, a := range prev.Anomalies {
			old[a.ID] = a.Status
		}
	}
	for _, a := range res.Anomalies {
		if st, ok := old[a.ID]; a.Status == StatusOpen && (!ok || st != StatusOpen) {
			rep.Opened = append(rep.Opened, a)
		}
		if st, ok := old[a.ID]; ok && st == StatusOpen && a.Status == StatusResolved {
			rep.Resolved = append(rep.Resolved, a)
		}
	}
	if err := st.SaveResult(ctx, res); err != nil {
		return nil, fmt.Errorf("save creator result: %w", err)
	}
	progress(100)
	rep.Result = res
	return rep, nil
}

// ItemFilter selects items (GET /v1/creator/items).
type ItemFilter struct {
	CreatorSourceID string
	State           ItemState
}

// Items lists the last result's items, by id.
func (s *Service) Items(ctx context.Context, st Store, f ItemFilter) ([]*Item, error) {
	r, err := st.Result(ctx)
	if err != nil || r == nil {
		return nil, err
	}
	var out []*Item
	for _, it := range r.Items {
		if (f.CreatorSourceID == "" || it.CreatorSourceID == f.CreatorSourceID) && (f.State == "" || it.State == f.State) {
			out = append(out, it)
		}
	}
	return out, nil
}

// Item reads one item; ErrNotFound when absent.
func (s *Service) Item(ctx context.Context, st Store, id string) (*Item, error) {
	its, err := s.Items(ctx, st, ItemFilter{})
	if err != nil {
		return nil, err
	}
	for _, it := range its {
		if it.ID == id {
			return it, nil
		}
	}
	return nil, ErrNotFound
}

// Anomalies lists the last result's anomalies with a status ("" for all), by id.
func (s *Service) Anomalies(ctx context.Context, st Store, status Status) ([]*Anomaly, error) {
	r, err := st.Result(ctx)
	if err != nil || r == nil {
		return nil, err
	}
	var out []*Anomaly
	for _, a := range r.Anomalies {
		if status == "" || a.Status == status {
			out = append(out, a)
		}
	}
	return out, nil
}

// Anomaly reads one anomaly; ErrNotFound when absent.
func (s *Service) Anomaly(ctx context.Context, st Store, id string) (*Anomaly, error) {
	as, err := s.Anomalies(ctx, st, "")
	if err != nil {
		return nil, err
	}
	for _, a := range as {
		if a.ID == id {
			return a, nil
		}
	}
	return nil, ErrNotFound
}

// Dismiss records the user's dismissal (POST /v1/creator/anomalies/{id}/dismiss); it stays
// dismissed when later reconciles find it again. Dismissing a dismissed anomaly changes nothing.
func (s *Service) Dismiss(ctx context.Context, st Store, id string) (*Anomaly, error) {
	a, err := s.Anomaly(ctx, st, id)
	if err != nil {
		return nil, err
	}
	if a.Status == StatusDismissed {
		return a, nil
	}
	Dismiss(a, s.now())
	return a, st.PutAnomaly(ctx, a)
}

// Reopen undoes a dismissal: the anomaly is open again.
func (s *Service) Reopen(ctx context.Context, st Store, id string) (*Anomaly, error) {
	a, err := s.Anomaly(ctx, st, id)
	if err != nil {
		return nil, err
	}
	if a.Status == StatusOpen {
		return a, nil
	}
	Reopen(a)
	return a, st.PutAnomaly(ctx, a)
}

// MemStore is a Store in memory, for tests and the scan command.
type MemStore struct {
	sources map[string]*Source
	uploads map[string][]Upload
	result  *Result
}

// NewMemStore returns an empty MemStore.
func NewMemStore() *MemStore {
	return &MemStore{sources: map[string]*Source{}, uploads: map[string][]Upload{}}
}

// PutSource implements Store.
func (m *MemStore) PutSource(_ context.Context, s *Source) error {
	c := *s
	m.sources[s.ID] = &c
	return nil
}

// Source implements Store.
func (m *MemStore) Source(_ context.Context, id string) (*Source, error) {
	s := m.sources[id]
	if s == nil {
		return nil, ErrNotFound
	}
	c := *s
	return &c, nil
}

// Sources implements Store.
func (m *MemStore) Sources(context.Context) ([]*Source, error) {
	var out []*Source
	for _, s := range m.sources {
		c := *s
		out = append(out, &c)
	}
	return out, nil
}

// DeleteSource implements Store.
func (m *MemStore) DeleteSource(_ context.Context, id string) error {
	if m.sources[id] == nil {
		return ErrNotFound
	}
	delete(m.sources, id)
	delete(m.uploads, id)
	return nil
}

// PutUpload implements Store.
func (m *MemStore) PutUpload(_ context.Context, sourceID string, u Upload) error {
	ups := m.uploads[sourceID]
	for i := range ups {
		if ups[i].Name == u.Name {
			ups[i] = u
			return nil
		}
	}
	m.uploads[sourceID] = append(ups, u)
	return nil
}

// Uploads implements Store.
func (m *MemStore) Uploads(_ context.Context, sourceID string) ([]Upload, error) {
	return append([]Upload(nil), m.uploads[sourceID]...), nil
}

// Result implements Store.
func (m *MemStore) Result(context.Context) (*Result, error) {
	if m.result == nil {
		return &Result{}, nil
	}
	return m.result, nil
}

// SaveResult implements Store.
func (m *MemStore) SaveResult(_ context.Context, r *Result) error { m.result = r; return nil }

// PutAnomaly implements Store.
func (m *MemStore) PutAnomaly(_ context.Context, a *Anomaly) error {
	if m.result == nil {
		return ErrNotFound
	}
	for i, x := range m.result.Anomalies {
		if x.ID == a.ID {
			m.result.Anomalies[i] = a
			return nil
		}
	}
	return ErrNotFound
}

// The events a reconcile gives rise to (CloudEvents types; data: the anomaly or the counts).
const (
	EventAnomalyOpened   = "svc.creator.anomaly.opened"
	EventAnomalyResolved = "svc.creator.anomaly.resolved"
	EventReconciled      = "svc.creator.reconciled"
)

// Source reads one source without its credentials; ErrNotFound when absent.
func (s *Service) Source(ctx context.Context, st Store, id string) (*Source, error) {
	src, err := st.Source(ctx, id)
	if err != nil {
		return nil, err
	}
	src.Credentials = Credentials{}
	return src, nil
}

// Sources lists the sources, by id, without their credentials.
func (s *Service) Sources(ctx context.Context, st Store) ([]*Source, error) {
	srcs, err := st.Sources(ctx)
	if err != nil {
		return nil, err
	}
	sort.Slice(srcs, func(i, j int) bool { return srcs[i].ID < srcs[j].ID })
	for _, src := range srcs {
		src.Credentials = Credentials{}
	}
	return srcs, nil
}

// DeleteSource removes a source, its uploads, and its items and anomalies from the last result
// (they are not "resolved": their evidence was withdrawn).
func (s *Service) DeleteSource(ctx context.Context, st Store, id string) error {
	if err := st.DeleteSource(ctx, id); err != nil {
		return err
	}
	r, err := st.Result(ctx)
	if err != nil || r == nil {
		return err
	}
	out := &Result{}
	for _, it := range r.Items {
		if it.CreatorSourceID != id {
			out.Items = append(out.Items, it)
		}
	}
	for _, a := range r.Anomalies {
		if a.CreatorSourceID != id {
			out.Anomalies = append(out.Anomalies, a)
		}
	}
	return st.SaveResult(ctx, out)
}
