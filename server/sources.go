package server

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/gen/svc/v1/svcv1connect"
	"svc.dev/svc/id"
	"svc.dev/svc/plan"
	"svc.dev/svc/plan/discover"
	"svc.dev/svc/platform"
	"svc.dev/svc/providers"
	"svc.dev/svc/wire"
)

// sourceConfig is how a source is opened. It is stored sealed: it may hold credentials.
type sourceConfig struct {
	Provider  providers.Name   `json:"provider"`
	SourceRef string           `json:"source_ref"`
	Config    providers.Config `json:"config"`
}

const sourceConfigs = "source_configs"

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

// externalAccount names the account at the provider: the source reference, or for a provider
// configured at the root of what it serves (a local folder given as its root) that root, so
// the field is never empty.
func externalAccount(spec SourceSpec) string {
	return cmp.Or(spec.SourceRef, spec.Config["root"], spec.DisplayName, string(spec.Provider))
}

// ConnectSource opens a provider to check it works, records a connected source in the tenant
// with its configuration sealed, and returns it. The connect flow and the seed job call it.
func (s *Server) ConnectSource(ctx context.Context, tenant platform.Tenant, spec SourceSpec) (*svcv1.Source, error) {
	p, err := s.providers.Open(ctx, spec.Provider, spec.Config)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", spec.Provider, err)
	}
	defer providers.CloseProvider(p)
	desc, err := p.Describe(ctx)
	if err != nil {
		return nil, fmt.Errorf("describe %s: %w", spec.Provider, err)
	}
	pn, _ := wire.ParseEnum(svcv1.Provider(0).Descriptor(), string(spec.Provider))
	now := s.cfg.Now().UTC()
	src := &svcv1.Source{
		Id:                id.New("src"),
		Provider:          svcv1.Provider(pn),
		Kind:              spec.Kind,
		ExternalAccountId: externalAccount(spec),
		DisplayName:       spec.DisplayName,
		Status:            svcv1.SourceStatus_SOURCE_STATUS_CONNECTED,
		ConnectedAt:       timestamppb.New(now),
		Simulated:         tenant.Simulated(),
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
	raw, err := json.Marshal(sourceConfig{Provider: spec.Provider, SourceRef: spec.SourceRef, Config: spec.Config})
	if err != nil {
		return nil, err
	}
	key := tenant.String() + "/" + src.Id
	sealed, err := s.sealer.Seal(raw, []byte(key))
	if err != nil {
		return nil, err
	}
	if err := s.db.PutBlob(ctx, sourceConfigs, key, sealed); err != nil {
		return nil, err
	}
	if err := s.sources.Put(ctx, tenant.String(), src.Id, src); err != nil {
		return nil, err
	}
	s.emit(ctx, tenant, evSourceConnected, "/v1/sources", src.Id, map[string]any{"source_id": src.Id, "provider": enumWire(src.Provider), "kind": src.Kind})
	return src, nil
}

func sourceQuota(q providers.Quota) *svcv1.SourceQuota {
	sq := &svcv1.SourceQuota{UsedBytes: q.UsedBytes, TrashBytes: q.TrashBytes, Breakdown: q.Breakdown, ObservedAt: timestamppb.New(q.ObservedAt)}
	if q.LimitBytes > 0 {
		sq.LimitBytes = proto.Int64(q.LimitBytes)
	}
	return sq
}

// openSource returns the provider behind a source and the source's reference at it. Opened
// providers are cached for the server's lifetime.
func (s *Server) openSource(ctx context.Context, tenant platform.Tenant, sourceID string) (providers.Provider, string, error) {
	key := tenant.String() + "/" + sourceID
	s.openMu.Lock()
	defer s.openMu.Unlock()
	if o, ok := s.opened[key]; ok {
		return o.p, o.ref, nil
	}
	sealed, err := s.db.GetBlob(ctx, sourceConfigs, key)
	if err != nil {
		return nil, "", fmt.Errorf("source %s configuration: %w", sourceID, err)
	}
	raw, err := s.sealer.Open(sealed, []byte(key))
	if err != nil {
		return nil, "", err
	}
	var cfg sourceConfig
	if err := json.Unmarshal(raw, &cfg); err != nil {
		return nil, "", fmt.Errorf("source %s configuration: %w", sourceID, err)
	}
	p, err := s.providers.Open(ctx, cfg.Provider, cfg.Config)
	if err != nil {
		return nil, "", fmt.Errorf("open source %s: %w", sourceID, err)
	}
	s.opened[key] = openedSource{p: p, ref: cfg.SourceRef}
	return p, cfg.SourceRef, nil
}

type openedSource struct {
	p   providers.Provider
	ref string
}

// openedSources caches open providers.
type openedSources struct {
	openMu sync.Mutex
	opened map[string]openedSource
}

func (o *openedSources) closeAll() {
	o.openMu.Lock()
	defer o.openMu.Unlock()
	for k, v := range o.opened {
		providers.CloseProvider(v.p)
		delete(o.opened, k)
	}
}

// planSource opens a source for planning: its listing, capabilities and quota.
func (s *Server) planSource(ctx context.Context, tenant platform.Tenant, src *svcv1.Source) (plan.Source, error) {
	p, ref, err := s.openSource(ctx, tenant, src.Id)
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
		Objects:  reauthOnDenied{discover.Objects(p, ref), func() { s.markReauth(context.WithoutCancel(ctx), tenant, src.Id) }}}
	if q, ok := providers.AsQuotaer(p); ok {
		if quota, err := q.Quota(ctx, ref); err == nil {
			ps.Quota = &plan.Quota{UsedBytes: quota.UsedBytes, LimitBytes: quota.LimitBytes}
			src.Quota = sourceQuota(quota)
		}
	}
	return ps, nil
}

// sourceMoved reports whether a source changed since a plan's marker (the plan is stale).
// A marker of kind none cannot tell, and is taken as unmoved.
func (s *Server) sourceMoved(ctx context.Context, tenant platform.Tenant, m *svcv1.SourceMarker) (bool, error) {
	if m.GetKind() == svcv1.SourceMarkerKind_SOURCE_MARKER_KIND_NONE {
		return false, nil
	}
	p, ref, err := s.openSource(ctx, tenant, m.GetSourceId())
	if err != nil {
		return false, err
	}
	since := providers.Marker{Kind: providers.MarkerKind(wire.EnumString(m.GetKind().Descriptor(), m.GetKind().Number())), Value: m.GetValue()}
	pg, err := p.Changes(ctx, providers.ChangesRequest{SourceRef: ref, Since: since, PageSize: 1})
	if errors.Is(err, providers.ErrPermission) {
		s.markReauth(context.WithoutCancel(ctx), tenant, m.GetSourceId())
	}
	if errors.Is(err, providers.ErrMarkerExpired) {
		return true, nil
	}
	if err != nil {
		return false, err
	}
	return len(pg.Changes) > 0 || pg.NextPageToken != "" || (!pg.Marker.IsZero() && pg.Marker != since), nil
}

// sourceInGrant answers 403 for a source outside a connection's grant.
func (c *Caller) sourceInGrant(id string) error {
	if c.Connection != nil && !c.Connection.Grant.AllowsSource(id) {
		return newProblem(http.StatusForbidden, codeForbidden, "The connection's grant does not include source "+id+".")
	}
	return nil
}

func (s *Server) getSource(ctx context.Context, req *svcv1.GetSourceRequest) (*svcv1.Source, error) {
	c := callerFrom(ctx)
	src, err := s.sources.Get(ctx, c.Tenant.String(), req.GetId())
	if err != nil {
		return nil, err
	}
	return src, c.sourceInGrant(src.Id)
}

func (s *Server) listSources(ctx context.Context, req *svcv1.ListSourcesRequest) (*svcv1.ListSourcesResponse, error) {
	after, limit, binding, err := s.pageStart(ctx, svcv1connect.SourceServiceListSourcesProcedure, req)
	if err != nil {
		return nil, err
	}
	c := callerFrom(ctx)
	page, err := s.sources.List(ctx, c.Tenant.String(), after, limit, func(src *svcv1.Source) bool {
		return (req.Status == nil || src.GetStatus() == req.GetStatus()) &&
			(req.Provider == nil || src.GetProvider() == req.GetProvider()) && c.sourceInGrant(src.Id) == nil
	})
	if err != nil {
		return nil, err
	}
	return &svcv1.ListSourcesResponse{Data: nonNil(page.Items), NextCursor: s.nextCursor(binding, page.Last)}, nil
}

// updateSourcePolicy replaces a source's policy (spec #21). A policy without a version gets
// the next revision number.
func (s *Server) updateSourcePolicy(ctx context.Context, req *svcv1.UpdateSourcePolicyRequest) (*svcv1.Source, error) {
	c := callerFrom(ctx)
	// Another tenant's source is not found, whatever the grant; the tenant's own outside the
	// grant is refused.
	if _, err := s.sources.Get(ctx, c.Tenant.String(), req.GetId()); err != nil {
		return nil, err
	}
	if err := c.sourceInGrant(req.GetId()); err != nil {
		return nil, err
	}
	var out *svcv1.Source
	err := s.sources.Update(ctx, c.Tenant.String(), req.GetId(), func(src *svcv1.Source) error {
		pol := proto.Clone(req.GetPolicy()).(*svcv1.SourcePolicy)
		if pol.Version == nil {
			n, _ := strconv.Atoi(src.GetPolicy().GetVersion())
			pol.Version = proto.String(strconv.Itoa(n + 1))
		}
		src.Policy = pol
		out = src
		return nil
	})
	if err == nil {
		s.emit(ctx, c.Tenant, evSourcePolicy, "/v1/sources", out.Id, map[string]any{"source_id": out.Id, "policy_version": out.GetPolicy().GetVersion()})
	}
	return out, err
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

// forgetTenant closes the providers opened for a tenant's sources (its account is erased).
func (o *openedSources) forgetTenant(tenant string) {
	o.openMu.Lock()
	defer o.openMu.Unlock()
	for k, v := range o.opened {
		if strings.HasPrefix(k, tenant+"/") {
			providers.CloseProvider(v.p)
			delete(o.opened, k)
		}
	}
}
