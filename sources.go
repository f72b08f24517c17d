package svc

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/id"
	"svc.dev/svc/plan"
	"svc.dev/svc/plan/discover"
	"svc.dev/svc/plan/spamc"
	"svc.dev/svc/platform/event"
	"svc.dev/svc/providers"
	"svc.dev/svc/storage"
	"svc.dev/svc/wire"
)

// EventSourceReauthRequired is announced when a source's provider refused its credentials.
const EventSourceReauthRequired = event.SourceReauthRequired

// SourceSpec describes a source to connect.
type SourceSpec struct {
	Provider    providers.Name
	SourceRef   string
	Config      providers.Config
	Kind        string // mail, files, bucket, folder, ...
	DisplayName string
	Email       string
	// ConnectionID and ApplicationID record the connection the source came through, if any.
	ConnectionID, ApplicationID string
}

// sourceConfig is how a source is opened. It is stored sealed: it may hold credentials.
type sourceConfig struct {
	Provider  providers.Name   `json:"provider"`
	SourceRef string           `json:"source_ref"`
	Config    providers.Config `json:"config"`
}

// externalAccount names the account at the provider: the source reference, or for a provider
// configured at the root of what it serves (a local folder given as its root) that root, so
// the field is never empty.
func externalAccount(spec SourceSpec) string {
	return cmp.Or(spec.SourceRef, spec.Config["root"], spec.DisplayName, string(spec.Provider))
}

// ConnectSource opens a provider to check it works, records a connected source in the tenant
// with its configuration sealed, and returns it.
func (s *Scope) ConnectSource(ctx context.Context, spec SourceSpec) (*svcv1.Source, error) {
	c := s.c
	p, err := c.providers.Open(ctx, spec.Provider, spec.Config)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", spec.Provider, err)
	}
	defer providers.CloseProvider(p)
	desc, err := p.Describe(ctx)
	if err != nil {
		return nil, fmt.Errorf("describe %s: %w", spec.Provider, err)
	}
	pn, _ := wire.ParseEnum(svcv1.Provider(0).Descriptor(), string(spec.Provider))
	now := c.now().UTC()
	src := &svcv1.Source{
		Id:                id.New("src"),
		Provider:          svcv1.Provider(pn),
		Kind:              spec.Kind,
		ExternalAccountId: externalAccount(spec),
		DisplayName:       spec.DisplayName,
		Status:            svcv1.SourceStatus_SOURCE_STATUS_CONNECTED,
		ConnectedAt:       timestamppb.New(now),
		Simulated:         s.t.Simulated(),
		Policy:            &svcv1.SourcePolicy{},
		GrantedScopes:     []string{},
	}
	if spec.Email != "" {
		src.Email = proto.String(spec.Email)
	}
	if spec.ConnectionID != "" {
		src.ConnectionId = proto.String(spec.ConnectionID)
		src.ConnectedViaApplicationId = proto.String(spec.ApplicationID)
	}
	for _, op := range desc.OperationClasses {
		n, _ := wire.ParseEnum(svcv1.OperationClass(0).Descriptor(), string(op))
		src.GrantedOperations = append(src.GrantedOperations, svcv1.OperationClass(n))
	}
	if q, ok := providers.AsQuotaer(p); ok {
		if quota, err := q.Quota(ctx, spec.SourceRef); err == nil {
			src.Quota = sourceQuota(quota)
		}
	}
	if err := s.sealSourceConfig(ctx, src.Id, spec.Provider, spec.SourceRef, spec.Config); err != nil {
		return nil, err
	}
	if err := c.store.Sources().Put(ctx, s.key(), src); err != nil {
		return nil, err
	}
	s.emit(ctx, EventSourceConnected, "/v1/sources", src.Id, map[string]any{"source_id": src.Id, "provider": enumWire(src.Provider), "kind": src.Kind})
	return src, nil
}

// sealSourceConfig stores how to open the source or destination id (its provider, reference
// and configuration), sealed under the tenant and id.
func (s *Scope) sealSourceConfig(ctx context.Context, id string, provider providers.Name, ref string, cfg providers.Config) error {
	s.c.configMu.Lock()
	defer s.c.configMu.Unlock()
	return s.sealSourceConfigLocked(ctx, id, provider, ref, cfg)
}

// sealSourceConfigLocked is sealSourceConfig under configMu.
func (s *Scope) sealSourceConfigLocked(ctx context.Context, id string, provider providers.Name, ref string, cfg providers.Config) error {
	raw, err := json.Marshal(sourceConfig{Provider: provider, SourceRef: ref, Config: cfg})
	if err != nil {
		return err
	}
	sealed, err := s.c.sealer.Seal(raw, []byte(s.key()+"/"+id))
	if err != nil {
		return err
	}
	return s.c.store.Sources().PutConfig(ctx, s.key(), id, sealed)
}

func sourceQuota(q providers.Quota) *svcv1.SourceQuota {
	sq := &svcv1.SourceQuota{UsedBytes: q.UsedBytes, TrashBytes: q.TrashBytes, Breakdown: q.Breakdown, ObservedAt: timestamppb.New(q.ObservedAt)}
	if q.LimitBytes > 0 {
		sq.LimitBytes = proto.Int64(q.LimitBytes)
	}
	return sq
}

// Source returns a source of the tenant: another tenant's is not found, the tenant's own
// outside the scope's grant is refused (CodeForbidden).
func (s *Scope) Source(ctx context.Context, id string) (*svcv1.Source, error) {
	src, err := s.c.store.Sources().Get(ctx, s.key(), id)
	if err != nil {
		return nil, err
	}
	return src, s.reachesSource(src.Id)
}

// Sources returns the tenant's sources the scope reaches, oldest first.
func (s *Scope) Sources(ctx context.Context) ([]*svcv1.Source, error) {
	var out []*svcv1.Source
	err := s.c.store.Sources().Scan(ctx, s.key(), func(src *svcv1.Source) bool {
		if s.reachesSource(src.Id) == nil {
			out = append(out, src)
		}
		return true
	})
	return out, err
}

// SourceFilter selects sources in ListSources; zero fields select all.
type SourceFilter struct {
	Status   *svcv1.SourceStatus
	Provider *svcv1.Provider
}

// ListSources returns a page of the tenant's sources the scope reaches, newest first, after
// the source id after ("": from the newest).
func (s *Scope) ListSources(ctx context.Context, f SourceFilter, after string, limit int) (storage.Page[*svcv1.Source], error) {
	res, err := s.c.resources()
	if err != nil {
		return storage.Page[*svcv1.Source]{}, err
	}
	return res.Sources().List(ctx, s.key(), after, limit, func(src *svcv1.Source) bool {
		return (f.Status == nil || src.GetStatus() == *f.Status) &&
			(f.Provider == nil || src.GetProvider() == *f.Provider) && s.reachesSource(src.Id) == nil
	})
}

// UpdateSourcePolicy replaces a source's policy; a policy without a version gets the next
// revision number.
func (s *Scope) UpdateSourcePolicy(ctx context.Context, id string, policy *svcv1.SourcePolicy) (*svcv1.Source, error) {
	if _, err := s.Source(ctx, id); err != nil {
		return nil, err
	}
	var out *svcv1.Source
	err := s.c.store.Sources().Update(ctx, s.key(), id, func(src *svcv1.Source) error {
		pol := proto.Clone(policy).(*svcv1.SourcePolicy)
		if pol.Version == nil {
			n, _ := strconv.Atoi(src.GetPolicy().GetVersion())
			pol.Version = proto.String(strconv.Itoa(n + 1))
		}
		src.Policy = pol
		out = src
		return nil
	})
	if err == nil {
		s.emit(ctx, EventSourcePolicy, "/v1/sources", out.Id, map[string]any{"source_id": out.Id, "policy_version": out.GetPolicy().GetVersion()})
	}
	return out, err
}

// OpenSource returns the provider behind a source (or destination) and its reference at it.
// Opened providers are cached until Close (or ForgetSource); a slow provider's open holds up
// only the opens of the same source, never another tenant's (providers.Instances).
func (s *Scope) OpenSource(ctx context.Context, sourceID string) (providers.Provider, string, error) {
	c := s.c
	key := s.key() + "/" + sourceID
	p, ref, err := c.opened.Get(ctx, key, func(ctx context.Context) (providers.Provider, any, error) {
		cfg, err := s.sourceConfig(ctx, sourceID)
		if err != nil {
			return nil, nil, err
		}
		p, err := c.providers.Open(ctx, cfg.Provider, cfg.Config)
		if err != nil {
			return nil, nil, fmt.Errorf("open source %s: %w", sourceID, err)
		}
		s.keepCredentials(p, sourceID, cfg.Config)
		return p, cfg.SourceRef, nil
	})
	if err != nil {
		return nil, "", err
	}
	r, _ := ref.(string)
	return p, r, nil
}

// sourceConfig reads how to open a source (or destination): its sealed provider, reference
// and configuration.
func (s *Scope) sourceConfig(ctx context.Context, sourceID string) (sourceConfig, error) {
	var cfg sourceConfig
	sealed, err := s.c.store.Sources().Config(ctx, s.key(), sourceID)
	if err != nil {
		return cfg, fmt.Errorf("source %s configuration: %w", sourceID, err)
	}
	raw, err := s.c.sealer.Open(sealed, []byte(s.key()+"/"+sourceID))
	if err != nil {
		return cfg, err
	}
	if err := json.Unmarshal(raw, &cfg); err != nil {
		return cfg, fmt.Errorf("source %s configuration: %w", sourceID, err)
	}
	return cfg, nil
}

// ReconfigureSource replaces the configuration a source's provider opens with (new
// credentials, a moved endpoint), keeping its provider and reference at it: the provider is
// opened with cfg first, so a configuration that does not work changes nothing; then the
// source's sealed configuration is replaced and its opened provider dropped.
func (s *Scope) ReconfigureSource(ctx context.Context, sourceID string, cfg providers.Config) error {
	if _, err := s.Source(ctx, sourceID); err != nil {
		return err
	}
	old, err := s.sourceConfig(ctx, sourceID)
	if err != nil {
		return err
	}
	p, err := s.c.providers.Open(ctx, old.Provider, cfg)
	if err != nil {
		return fmt.Errorf("open %s: %w", old.Provider, err)
	}
	providers.CloseProvider(p)
	if err := s.sealSourceConfig(ctx, sourceID, old.Provider, old.SourceRef, cfg); err != nil {
		return err
	}
	s.ForgetSource(sourceID)
	return nil
}

// ForgetSource closes the provider opened for a source, if any: the next use opens it again.
func (s *Scope) ForgetSource(sourceID string) { s.c.opened.Forget(s.key() + "/" + sourceID) }

// ForgetTenant closes the providers opened for the tenant's sources and removes its search
// index from the disk (its account is erased): the index holds its mail's words.
func (s *Scope) ForgetTenant() {
	s.c.opened.ForgetPrefix(s.key() + "/")
	// The index applies what the feed holds first, so that nothing of the tenant is indexed
	// again once its index is dropped.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := s.c.search.sync(ctx); err != nil {
		s.c.log.Error("catch up the search index", "tenant", s.key(), "err", err)
	}
	if err := s.c.search.index.Drop(s.key()); err != nil {
		s.c.log.Error("erase the search index", "tenant", s.key(), "err", err)
	}
}

func (c *core) closeSources() { c.opened.Close() }

// MarkReauth marks a source reauth_required (its provider refused its credentials), closes
// its provider, and announces the change once.
func (s *Scope) MarkReauth(ctx context.Context, sourceID string) error {
	var src *svcv1.Source
	changed := false
	err := s.c.store.Sources().Update(ctx, s.key(), sourceID, func(x *svcv1.Source) error {
		switch x.GetStatus() {
		case svcv1.SourceStatus_SOURCE_STATUS_CONNECTED, svcv1.SourceStatus_SOURCE_STATUS_ERROR, svcv1.SourceStatus_SOURCE_STATUS_PENDING:
			x.Status, changed = svcv1.SourceStatus_SOURCE_STATUS_REAUTH_REQUIRED, true
		}
		src = x
		return nil
	})
	if err != nil {
		return err
	}
	s.ForgetSource(sourceID)
	if changed {
		s.emit(ctx, EventSourceReauthRequired, "/v1/sources", sourceID, map[string]any{
			"source_id": sourceID, "provider": enumWire(src.GetProvider()), "status": "reauth_required"})
	}
	return nil
}

func (s *Scope) markReauth(ctx context.Context, sourceID string) {
	if s.c.opts.OnReauth != nil {
		s.c.opts.OnReauth(ctx, s.t, sourceID)
		return
	}
	if err := s.MarkReauth(ctx, sourceID); err != nil {
		s.c.log.Error("mark source reauth_required", "source_id", sourceID, "err", err)
	}
}

// planSource opens a source for planning: its listing, capabilities and quota (which it
// records in src).
func (s *Scope) planSource(ctx context.Context, src *svcv1.Source) (plan.Source, error) {
	p, ref, err := s.OpenSource(ctx, src.Id)
	if err != nil {
		return plan.Source{}, err
	}
	desc, err := p.Describe(ctx)
	if err != nil {
		return plan.Source{}, err
	}
	ps := plan.Source{ID: src.Id, Provider: src.Provider, Status: src.Status, Policy: src.Policy,
		CanTrash: slices.Contains(desc.Capabilities, providers.CapTrash),
		CanWrite: slices.Contains(desc.Capabilities, providers.CapWrite),
		Objects:  reauthOnDenied{discover.Objects(p, ref), func() { s.markReauth(context.WithoutCancel(ctx), src.Id) }}}
	if jf := s.c.opts.JunkFilter; jf != nil {
		l := spamc.Objects(ps.Objects, func(ctx context.Context, id string) (io.ReadCloser, error) {
			c, err := p.Fetch(ctx, providers.FetchRequest{SourceRef: ref, ObjectID: id})
			if err != nil {
				return nil, err
			}
			return c.Body, nil
		}, jf)
		l.Deadline = time.Now().Add(plan.DefaultMaxDuration / 2) // the rest of the time budget is the listing's
		ps.Objects = l
	}
	if e := src.GetEmail(); e != "" {
		ps.Addresses = []string{e} // mail from the account's address is the owner's (docs/plans.md)
	}
	if q, ok := providers.AsQuotaer(p); ok {
		if quota, err := q.Quota(ctx, ref); err == nil {
			ps.Quota = &plan.Quota{UsedBytes: quota.UsedBytes, LimitBytes: quota.LimitBytes}
			src.Quota = sourceQuota(quota)
		}
	}
	return ps, nil
}

// maxStaleChanges bounds how many changes (and maxStaleChanges/MaxPageSize pages) sourceMoved
// reads to tell whether a plan's own objects moved; past it the plan is taken as stale (a
// source that busy is re-planned).
const maxStaleChanges = 50_000

// sourceMoved reports whether a source changed since a plan's marker in a way that touches
// the plan's own objects (the plan is stale): one of them deleted or trashed, or reported at
// another version than the plan expects. Changes to other objects (new mail arriving in a
// live mailbox, another file edited) leave the plan as it is: the execution acts only on the
// plan's objects, each checked against its expected version again as it is acted on. A
// provider that cannot compute a delta (ErrMarkerExpired: the snapshot hashes of local
// folders, buckets and the vault) cannot tell, and the plan is stale. A marker of kind none
// cannot tell either, and is taken as unmoved. expected maps the plan's provider object ids
// for this source to their expected versions ("" for any).
func (s *Scope) sourceMoved(ctx context.Context, m *svcv1.SourceMarker, expected map[string]string) (bool, error) {
	if m.GetKind() == svcv1.SourceMarkerKind_SOURCE_MARKER_KIND_NONE {
		return false, nil
	}
	p, ref, err := s.OpenSource(ctx, m.GetSourceId())
	if err != nil {
		return false, err
	}
	since := providers.Marker{Kind: providers.MarkerKind(wire.EnumString(m.GetKind().Descriptor(), m.GetKind().Number())), Value: m.GetValue()}
	req := providers.ChangesRequest{SourceRef: ref, Since: since, PageSize: providers.MaxPageSize}
	for seen, pages := 0, 0; ; pages++ {
		pg, err := p.Changes(ctx, req)
		if errors.Is(err, providers.ErrPermission) {
			s.markReauth(context.WithoutCancel(ctx), m.GetSourceId())
		}
		if errors.Is(err, providers.ErrMarkerExpired) {
			return true, nil
		}
		if err != nil {
			return false, err
		}
		if touchesPlan(pg.Changes, expected) {
			return true, nil
		}
		if seen += len(pg.Changes); seen > maxStaleChanges || pages > maxStaleChanges/providers.MaxPageSize {
			return true, nil // too much to read through (or a provider paging without end)
		}
		if pg.NextPageToken == "" {
			return false, nil
		}
		req.PageToken = pg.NextPageToken
	}
}

// touchesPlan reports whether a change deletes one of a plan's objects or moves its version
// from the expected one.
func touchesPlan(changes []providers.Change, expected map[string]string) bool {
	for _, c := range changes {
		want, ok := expected[c.ObjectID]
		if !ok {
			continue
		}
		if c.Type != providers.ChangeUpsert || c.Object == nil || want != "" && c.Object.Version != want {
			return true
		}
	}
	return false
}

// reauthOnDenied marks a source reauth_required when its provider refuses the listing (an
// expired or revoked token): the user must reconnect it.
type reauthOnDenied struct {
	plan.Objects
	mark func()
}

func (r reauthOnDenied) Next(ctx context.Context) (plan.Page, error) {
	pg, err := r.Objects.Next(ctx)
	if errors.Is(err, providers.ErrPermission) {
		r.mark()
	}
	return pg, err
}
