package svc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"svc.dev/svc/creator"
	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/mail"
	"svc.dev/svc/providers"
	"svc.dev/svc/storage"
	"svc.dev/svc/wire"
)

// Creator revenue (package creator) on the layer: a tenant's revenue sources, the reconcile
// job, the items and anomalies it keeps. A creator's sources are the tenant's own: a scope
// limited to some sources (a connection's grant) reaches none of them, since revenue concerns
// the whole account; an inbox source's mail source must be in the scope.

// creatorService is the domain's service with what the layer gives it (the mail of inbox
// sources, read through their providers).
func (s *Scope) creatorService() (*creator.Service, creator.Store, error) {
	if s.c.hosted == nil {
		return nil, nil, fmt.Errorf("creator revenue: the store does not keep it (storage.Hosted): %w", ErrUnsupported)
	}
	if s.access.limited() {
		return nil, nil, refused(CodeForbidden, "The connection's grant is limited to sources; creator revenue concerns the whole account.")
	}
	d := s.c.opts.Creator
	d.Mail = scopeMail{s}
	return &creator.Service{Deps: d, Now: s.c.now}, creatorStore{s}, nil
}

// CreateCreatorSource checks a revenue source's credential with its platform (a refused one
// is an error naming the field; nothing is stored) and stores it, credentials sealed.
func (s *Scope) CreateCreatorSource(ctx context.Context, req creator.CreateRequest) (*creator.Source, error) {
	svc, st, err := s.creatorService()
	if err != nil {
		return nil, err
	}
	if req.Kind == creator.KindInbox && req.SourceID != "" {
		if _, err := s.Source(ctx, req.SourceID); errors.Is(err, storage.ErrNotFound) {
			return nil, invalid("source_id", "is not a connected source")
		} else if err != nil {
			return nil, err
		}
	}
	if err := s.c.registerCreatorTenant(ctx, s.key()); err != nil {
		return nil, err
	}
	src, err := svc.CreateSource(ctx, st, req)
	if err != nil {
		if ce := creatorError(err); ce != err {
			return nil, ce
		}
		// The platform could not be asked (the network, its outage): a provider problem.
		return nil, fmt.Errorf("check creator source: %w: %w", providers.ErrTransient, err)
	}
	src.Credentials = creator.Credentials{}
	return src, nil
}

// ConnectCreatorInbox makes a connected mail source a revenue source of kind inbox (payout,
// statement and remittance mail, sponsor invoices), labelled label; when one already reads that
// mail source, it is returned instead. The next reconcile reads the mail.
func (s *Scope) ConnectCreatorInbox(ctx context.Context, mailSourceID, label string) (*creator.Source, error) {
	srcs, err := s.CreatorSources(ctx)
	if err != nil {
		return nil, err
	}
	for _, src := range srcs {
		if src.Kind == creator.KindInbox && src.MailSourceID == mailSourceID {
			return src, nil
		}
	}
	return s.CreateCreatorSource(ctx, creator.CreateRequest{Kind: creator.KindInbox, Label: label, SourceID: mailSourceID})
}

// CreatorSources lists the tenant's revenue sources, without credentials.
func (s *Scope) CreatorSources(ctx context.Context) ([]*creator.Source, error) {
	svc, st, err := s.creatorService()
	if err != nil {
		return nil, err
	}
	return svc.Sources(ctx, st)
}

// CreatorSource reads one revenue source, without credentials.
func (s *Scope) CreatorSource(ctx context.Context, id string) (*creator.Source, error) {
	svc, st, err := s.creatorService()
	if err != nil {
		return nil, err
	}
	return svc.Source(ctx, st, id)
}

// DeleteCreatorSource removes a revenue source, its uploads, and its items and anomalies.
func (s *Scope) DeleteCreatorSource(ctx context.Context, id string) error {
	svc, st, err := s.creatorService()
	if err != nil {
		return err
	}
	return svc.DeleteSource(ctx, st, id) // ErrNotFound for a source the tenant does not have
}

// UploadStatement keeps a CSV statement of a statement source when every row is good; a bad
// one is refused whole (CodeInvalidArgument naming each bad row) and changes nothing.
func (s *Scope) UploadStatement(ctx context.Context, sourceID, name string, data []byte) error {
	svc, st, err := s.creatorService()
	if err != nil {
		return err
	}
	return creatorError(svc.UploadStatement(ctx, st, sourceID, name, data))
}

// ReconcileCreator collects every revenue source and reconciles (the body of a reconcile
// job): the items and anomalies are stored, anomalies opened and resolved are announced.
func (s *Scope) ReconcileCreator(ctx context.Context, progress func(int)) (*creator.SyncReport, error) {
	svc, st, err := s.creatorService()
	if err != nil {
		return nil, err
	}
	if err := s.c.registerCreatorTenant(ctx, s.key()); err != nil { // sources made before the registry was
		return nil, err
	}
	rep, err := svc.Reconcile(ctx, st, s.c.now(), progress)
	if err != nil {
		return nil, err
	}
	for _, a := range rep.Opened {
		s.emit(ctx, creator.EventAnomalyOpened, "/v1/creator/anomalies", a.ID, map[string]any{"anomaly_id": a.ID, "kind": string(a.Kind), "detail": a.Detail})
	}
	for _, a := range rep.Resolved {
		s.emit(ctx, creator.EventAnomalyResolved, "/v1/creator/anomalies", a.ID, map[string]any{"anomaly_id": a.ID, "kind": string(a.Kind), "resolution": a.Resolution})
	}
	return rep, nil
}

// RevenueItems lists the tenant's revenue items (filter: a source, a state).
func (s *Scope) RevenueItems(ctx context.Context, f creator.ItemFilter) ([]*svcv1.RevenueItem, error) {
	svc, st, err := s.creatorService()
	if err != nil {
		return nil, err
	}
	items, err := svc.Items(ctx, st, f)
	if err != nil {
		return nil, err
	}
	out := make([]*svcv1.RevenueItem, 0, len(items))
	for _, it := range items {
		p := &svcv1.RevenueItem{}
		if err := toProtoLenient(it, p); err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}

// RevenueItem reads one revenue item.
func (s *Scope) RevenueItem(ctx context.Context, id string) (*svcv1.RevenueItem, error) {
	svc, st, err := s.creatorService()
	if err != nil {
		return nil, err
	}
	it, err := svc.Item(ctx, st, id)
	if err != nil {
		return nil, err
	}
	p := &svcv1.RevenueItem{}
	return p, toProtoLenient(it, p)
}

// Anomalies lists the tenant's anomalies (status "": all).
func (s *Scope) Anomalies(ctx context.Context, status creator.Status) ([]*svcv1.Anomaly, error) {
	svc, st, err := s.creatorService()
	if err != nil {
		return nil, err
	}
	as, err := svc.Anomalies(ctx, st, status)
	if err != nil {
		return nil, err
	}
	out := make([]*svcv1.Anomaly, 0, len(as))
	for _, a := range as {
		p := &svcv1.Anomaly{}
		if err := toProtoLenient(a, p); err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}

// Anomaly reads one anomaly; DismissAnomaly and ReopenAnomaly change its status.
func (s *Scope) Anomaly(ctx context.Context, id string) (*svcv1.Anomaly, error) {
	return s.anomaly(ctx, id, (*creator.Service).Anomaly)
}

// DismissAnomaly records that the user says an anomaly is not one.
func (s *Scope) DismissAnomaly(ctx context.Context, id string) (*svcv1.Anomaly, error) {
	a, err := s.anomaly(ctx, id, (*creator.Service).Dismiss)
	if err == nil {
		s.emit(ctx, "svc.creator.anomaly.dismissed", "/v1/creator/anomalies", id, map[string]any{"anomaly_id": id})
	}
	return a, err
}

// ReopenAnomaly opens a dismissed anomaly again.
func (s *Scope) ReopenAnomaly(ctx context.Context, id string) (*svcv1.Anomaly, error) {
	return s.anomaly(ctx, id, (*creator.Service).Reopen)
}

func (s *Scope) anomaly(ctx context.Context, id string, op func(*creator.Service, context.Context, creator.Store, string) (*creator.Anomaly, error)) (*svcv1.Anomaly, error) {
	svc, st, err := s.creatorService()
	if err != nil {
		return nil, err
	}
	a, err := op(svc, ctx, st, id)
	if err != nil {
		return nil, err
	}
	p := &svcv1.Anomaly{}
	return p, toProtoLenient(a, p)
}

// creatorError is a creator refusal in the layer's terms.
func creatorError(err error) error {
	var ve *creator.ValidationError
	var ce *creator.CredentialError
	var se *creator.StatementError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &ve):
		return invalid(ve.Field, ve.Reason)
	case errors.As(err, &ce):
		return invalid("credentials."+ce.Field, "was refused by the platform: "+ce.Reason)
	case errors.As(err, &se):
		return invalid("csv", strings.TrimPrefix(se.Error(), "statement "))
	}
	return err
}

// toProtoLenient is a domain value as the API's message, through their one JSON (the spec's
// names), leaving out the members the message does not have (the domain's extra detail).
func toProtoLenient(v any, m proto.Message) error {
	raw, err := json.Marshal(v)
	if err != nil {
		return err
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil {
		return err
	}
	fields := m.ProtoReflect().Descriptor().Fields()
	for k := range obj {
		if fields.ByJSONName(k) == nil && fields.ByName(protoreflect.Name(k)) == nil {
			delete(obj, k)
		}
	}
	raw, err = json.Marshal(obj)
	if err != nil {
		return err
	}
	if err := wire.Unmarshal(raw, m); err != nil {
		return fmt.Errorf("%T as the API's: %w", v, err)
	}
	return nil
}

// creatorStore keeps a tenant's creator revenue in the store's blobs: its sources (sealed:
// they hold credentials), each statement source's uploads, and the last reconciliation.
type creatorStore struct{ s *Scope }

type storedCreatorSource struct {
	Source      *creator.Source     `json:"source"`
	Credentials creator.Credentials `json:"credentials"`
}

func (st creatorStore) blobs() storage.Blobs { return st.s.c.hosted.CreatorState() }

func (st creatorStore) aad() []byte { return []byte(st.s.key() + "/creator/sources") }

func (st creatorStore) load(ctx context.Context) ([]storedCreatorSource, error) {
	sealed, err := st.blobs().Get(ctx, st.s.key(), "sources")
	if errors.Is(err, storage.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	raw, err := st.s.c.sealer.Open(sealed, st.aad())
	if err != nil {
		return nil, fmt.Errorf("creator sources: %w", err)
	}
	var out []storedCreatorSource
	return out, json.Unmarshal(raw, &out)
}

func (st creatorStore) save(ctx context.Context, srcs []storedCreatorSource) error {
	raw, err := json.Marshal(srcs)
	if err != nil {
		return err
	}
	sealed, err := st.s.c.sealer.Seal(raw, st.aad())
	if err != nil {
		return err
	}
	return st.blobs().Put(ctx, st.s.key(), "sources", sealed)
}

func (st creatorStore) PutSource(ctx context.Context, src *creator.Source) error {
	srcs, err := st.load(ctx)
	if err != nil {
		return err
	}
	c := *src
	entry := storedCreatorSource{Source: &c, Credentials: src.Credentials}
	for i, x := range srcs {
		if x.Source.ID == src.ID {
			srcs[i] = entry
			return st.save(ctx, srcs)
		}
	}
	return st.save(ctx, append(srcs, entry))
}

func (st creatorStore) Source(ctx context.Context, id string) (*creator.Source, error) {
	srcs, err := st.load(ctx)
	if err != nil {
		return nil, err
	}
	for _, x := range srcs {
		if x.Source.ID == id {
			c := *x.Source
			c.Credentials = x.Credentials
			return &c, nil
		}
	}
	return nil, fmt.Errorf("creator source %s: %w", id, creator.ErrNotFound)
}

func (st creatorStore) Sources(ctx context.Context) ([]*creator.Source, error) {
	srcs, err := st.load(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]*creator.Source, 0, len(srcs))
	for _, x := range srcs {
		c := *x.Source
		c.Credentials = x.Credentials
		out = append(out, &c)
	}
	return out, nil
}

func (st creatorStore) DeleteSource(ctx context.Context, id string) error {
	srcs, err := st.load(ctx)
	if err != nil {
		return err
	}
	for i, x := range srcs {
		if x.Source.ID == id {
			if err := st.blobs().Put(ctx, st.s.key(), "uploads/"+id, []byte("[]")); err != nil {
				return err
			}
			return st.save(ctx, append(srcs[:i:i], srcs[i+1:]...))
		}
	}
	return fmt.Errorf("creator source %s: %w", id, creator.ErrNotFound)
}

func (st creatorStore) PutUpload(ctx context.Context, sourceID string, u creator.Upload) error {
	ups, err := st.Uploads(ctx, sourceID)
	if err != nil {
		return err
	}
	replaced := false
	for i, x := range ups {
		if x.Name == u.Name {
			ups[i], replaced = u, true
		}
	}
	if !replaced {
		ups = append(ups, u)
	}
	return putJSON(ctx, st.blobs(), st.s.key(), "uploads/"+sourceID, ups)
}

func (st creatorStore) Uploads(ctx context.Context, sourceID string) ([]creator.Upload, error) {
	var ups []creator.Upload
	_, err := getJSON(ctx, st.blobs(), st.s.key(), "uploads/"+sourceID, &ups)
	return ups, err
}

func (st creatorStore) Result(ctx context.Context) (*creator.Result, error) {
	var r creator.Result
	_, err := getJSON(ctx, st.blobs(), st.s.key(), "result", &r)
	return &r, err
}

func (st creatorStore) SaveResult(ctx context.Context, r *creator.Result) error {
	return putJSON(ctx, st.blobs(), st.s.key(), "result", r)
}

func (st creatorStore) PutAnomaly(ctx context.Context, a *creator.Anomaly) error {
	r, err := st.Result(ctx)
	if err != nil {
		return err
	}
	for i, x := range r.Anomalies {
		if x.ID == a.ID {
			r.Anomalies[i] = a
			return st.SaveResult(ctx, r)
		}
	}
	return fmt.Errorf("anomaly %s: %w", a.ID, creator.ErrNotFound)
}

// scopeMail reads an inbox source's mail through its provider (creator.MailReader).
type scopeMail struct{ s *Scope }

func (m scopeMail) Messages(ctx context.Context, sourceID string) ([]*mail.Document, error) {
	p, ref, err := m.s.OpenSource(ctx, sourceID)
	if err != nil {
		return nil, err
	}
	var out []*mail.Document
	req := providers.ListRequest{SourceRef: ref}
	for {
		page, err := p.List(ctx, req)
		if err != nil {
			return nil, fmt.Errorf("list %s: %w", sourceID, err)
		}
		for _, o := range page.Objects {
			if o.Kind != providers.KindMessage {
				continue
			}
			c, err := p.Fetch(ctx, providers.FetchRequest{SourceRef: ref, ObjectID: o.ID})
			if err != nil {
				continue // one unreadable message does not stop the others
			}
			d, err := mail.ReadDocument(c.Body, nil)
			c.Body.Close()
			if err == nil {
				out = append(out, d)
			}
		}
		if page.NextPageToken == "" {
			return out, nil
		}
		req.PageToken = page.NextPageToken
	}
}

// The tenants with revenue sources are kept in a registry (a blob of the creator state under a
// key no tenant has), so that a host can reconcile them on a schedule without reading every
// tenant: a tenant is added when it creates a source or reconciles, and dropped by
// CreatorTenants once it has no source left.
const (
	creatorRegistry    = "svc" // not a tenant: those are "test:..." and "live:..."
	creatorRegistryKey = "creator/tenants"
)

// creatorRegistryMu serializes the registry's read-modify-write within the process.
var creatorRegistryMu sync.Mutex

func (c *core) registerCreatorTenant(ctx context.Context, tenant string) error {
	return c.editCreatorRegistry(ctx, func(tenants []string) ([]string, error) {
		if slices.Contains(tenants, tenant) {
			return tenants, nil
		}
		return append(tenants, tenant), nil
	})
}

// forgetCreatorTenant drops a tenant from the registry (its account is erased).
func (c *core) forgetCreatorTenant(ctx context.Context, tenant string) error {
	return c.editCreatorRegistry(ctx, func(tenants []string) ([]string, error) {
		return slices.DeleteFunc(tenants, func(t string) bool { return t == tenant }), nil
	})
}

// editCreatorRegistry reads the registry, lets edit change it, and stores what edit returns
// when it differs, under creatorRegistryMu.
func (c *core) editCreatorRegistry(ctx context.Context, edit func([]string) ([]string, error)) error {
	creatorRegistryMu.Lock()
	defer creatorRegistryMu.Unlock()
	var tenants []string
	if _, err := getJSON(ctx, c.hosted.CreatorState(), creatorRegistry, creatorRegistryKey, &tenants); err != nil {
		return fmt.Errorf("creator registry: %w", err)
	}
	edited, err := edit(slices.Clone(tenants))
	if err != nil || slices.Equal(edited, tenants) {
		return err
	}
	return putJSON(ctx, c.hosted.CreatorState(), creatorRegistry, creatorRegistryKey, edited)
}

// CreatorTenants returns the tenants that have revenue sources, for a host that reconciles
// them on a schedule (each with Tenant(t).ReconcileCreator, as a reconcile job); tenants found
// with no source left are dropped from the registry.
func (sv *Instance) CreatorTenants(ctx context.Context) ([]Tenant, error) {
	if sv.core.hosted == nil {
		return nil, nil
	}
	var out []Tenant
	err := sv.core.editCreatorRegistry(ctx, func(tenants []string) ([]string, error) {
		var kept []string
		for _, ts := range tenants {
			t, err := parseTenant(ts)
			if err != nil {
				continue
			}
			srcs, err := creatorStore{sv.Tenant(t)}.Sources(ctx)
			if err != nil {
				return nil, err
			}
			if len(srcs) > 0 {
				out = append(out, t)
				kept = append(kept, ts)
			}
		}
		return kept, nil
	})
	return out, err
}
