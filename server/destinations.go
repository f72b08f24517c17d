package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"unicode/utf8"

	"google.golang.org/protobuf/proto"

	"svc.dev/svc/execute"
	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/gen/svc/v1/svcv1connect"
	"svc.dev/svc/id"
	"svc.dev/svc/platform"
	"svc.dev/svc/providers"
	"svc.dev/svc/store"
	"svc.dev/svc/wire"
)

// sourceConfig is how a source or destination is opened, stored sealed under "tenant/id" in
// the sourceConfigs bucket; the embedding package reads the same records (svc.Scope.OpenSource).
type sourceConfig struct {
	Provider  providers.Name   `json:"provider"`
	SourceRef string           `json:"source_ref"`
	Config    providers.Config `json:"config"`
}

const sourceConfigs = "source_configs"

// A destination is backed by a provider configuration exactly like a source: a sourceConfig
// sealed under tenant/dst_... in the sourceConfigs bucket, so that openSource opens a
// destination by its id. The spec has no endpoint for destinations; the API makes them from
// the caller's connected sources (docs/destinations.md).

// destinationOrigins records, per tenant/dst_..., the source a destination was made from, so
// that a connection's grant limited to sources reaches only the destinations of its sources.
// Destinations made by AddDestination have no origin.
const destinationOrigins = "destination_origins"

// maxLabelLen bounds a destination's label, in characters (the API's rule, also applied to
// AddDestination).
const maxLabelLen = 80

// DestinationSpec describes a destination for trusted setup code (AddDestination).
type DestinationSpec struct {
	Provider  providers.Name
	SourceRef string
	Config    providers.Config
	Label     string
	// PathTemplate places each object at the destination; empty means
	// execute.DefaultPathTemplate.
	PathTemplate string
}

// AddDestination records a destination in the tenant: it opens the provider to check that it
// can write, then stores the destination and its configuration, sealed. It is the entry point
// for trusted setup code (the dev seed), as ConnectSource is for sources; the destination is
// not a source and no plan over "every connected source" sees it.
func (s *Server) AddDestination(ctx context.Context, tenant platform.Tenant, spec DestinationSpec) (*svcv1.Destination, error) {
	if n := utf8.RuneCountInString(spec.Label); n < 1 || n > maxLabelLen {
		return nil, fmt.Errorf("destination label: must be 1 to %d characters", maxLabelLen)
	}
	template := spec.PathTemplate
	if template == "" {
		template = execute.DefaultPathTemplate
	}
	if err := execute.CheckPathTemplate(template); err != nil {
		return nil, fmt.Errorf("destination path template: %w", err)
	}
	pn, ok := wire.ParseEnum(svcv1.Provider(0).Descriptor(), string(spec.Provider))
	if !ok {
		return nil, fmt.Errorf("destination provider %q: %w", spec.Provider, providers.ErrUnknownProvider)
	}
	p, err := s.providers.Open(ctx, spec.Provider, spec.Config)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", spec.Provider, err)
	}
	defer providers.CloseProvider(p)
	if _, ok := providers.AsWriter(p); !ok {
		return nil, fmt.Errorf("destination %s: cannot write: %w", spec.Provider, providers.ErrUnsupported)
	}
	raw, err := json.Marshal(sourceConfig{Provider: spec.Provider, SourceRef: spec.SourceRef, Config: spec.Config})
	if err != nil {
		return nil, err
	}
	dst := &svcv1.Destination{
		DestinationId:     id.New("dst"),
		Provider:          svcv1.Provider(pn),
		Label:             spec.Label,
		External:          spec.Provider != providers.SvcVault,
		PathTemplate:      proto.String(template),
		MetadataMapping:   map[string]string{},
		PermissionMapping: svcv1.PermissionMapping_PERMISSION_MAPPING_PRESERVE_WHERE_SUPPORTED,
		KnownLossiness:    []string{},
	}
	if err := s.storeDestination(ctx, tenant, dst, raw, ""); err != nil {
		return nil, err
	}
	return dst, nil
}

// storeDestination seals a destination's backing configuration under its own key, records
// its origin source (if any), then stores the resource: a destination that can be read can
// always be opened.
func (s *Server) storeDestination(ctx context.Context, tenant platform.Tenant, dst *svcv1.Destination, rawConfig []byte, origin string) error {
	key := tenant.String() + "/" + dst.DestinationId
	sealed, err := s.sealer.Seal(rawConfig, []byte(key))
	if err != nil {
		return err
	}
	if err := s.db.PutBlob(ctx, sourceConfigs, key, sealed); err != nil {
		return err
	}
	if origin != "" {
		if err := s.db.PutBlob(ctx, destinationOrigins, key, []byte(origin)); err != nil {
			return err
		}
	}
	return s.destinations.Put(ctx, tenant.String(), dst.DestinationId, dst)
}

// openDestination returns a destination of the tenant, the provider it writes to (opened and
// cached like a source's) and the reference within it. A missing destination is an error
// matching platform.ErrNotFound and store.ErrNotFound (404); a provider that cannot write, one
// wrapping providers.ErrUnsupported.
func (s *Server) openDestination(ctx context.Context, tenant platform.Tenant, dstID string) (*svcv1.Destination, providers.Provider, string, error) {
	d, err := s.destinations.Get(ctx, tenant.String(), dstID)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil, "", fmt.Errorf("destination %s: %w: %w", dstID, platform.ErrNotFound, err)
	}
	if err != nil {
		return nil, nil, "", err
	}
	p, ref, err := s.openSource(ctx, tenant, dstID)
	if err != nil {
		return nil, nil, "", fmt.Errorf("open destination %s: %w", dstID, err)
	}
	if _, ok := providers.AsWriter(p); !ok {
		return nil, nil, "", fmt.Errorf("destination %s (%s): cannot write: %w", dstID, enumWire(d.GetProvider()), providers.ErrUnsupported)
	}
	return d, p, ref, nil
}

// createDestination makes a destination from a connected source (POST /v1/destinations): the
// source must be in the caller's grant (403), be one of the tenant's connected sources and have
// a provider that can write (400, path source_id). Its configuration is copied, resealed under
// the destination's own key, so the destination outlives changes to the source record.
func (s *Server) createDestination(ctx context.Context, req *svcv1.CreateDestinationRequest) (*svcv1.Destination, error) {
	c := callerFrom(ctx)
	template := execute.DefaultPathTemplate
	if req.PathTemplate != nil {
		template = req.GetPathTemplate()
		if err := execute.CheckPathTemplate(template); err != nil {
			return nil, invalid("path_template", err.Error())
		}
	}
	if err := c.sourceInGrant(req.GetSourceId()); err != nil {
		return nil, err
	}
	src, err := s.sources.Get(ctx, c.Tenant.String(), req.GetSourceId())
	if errors.Is(err, store.ErrNotFound) {
		// Unknown and another tenant's sources are answered alike.
		return nil, invalid("source_id", "is not a connected source")
	}
	if err != nil {
		return nil, err
	}
	if st := src.GetStatus(); st != svcv1.SourceStatus_SOURCE_STATUS_CONNECTED {
		return nil, invalid("source_id", "is "+enumWire(st)+", not connected; reconnect it first")
	}
	p, _, err := s.openSource(ctx, c.Tenant, src.Id)
	if err != nil {
		return nil, err
	}
	if _, ok := providers.AsWriter(p); !ok {
		return nil, invalid("source_id", "its provider ("+enumWire(src.GetProvider())+") cannot write")
	}
	srcKey := c.Tenant.String() + "/" + src.Id
	sealed, err := s.db.GetBlob(ctx, sourceConfigs, srcKey)
	if err != nil {
		return nil, fmt.Errorf("source %s configuration: %w", src.Id, err)
	}
	raw, err := s.sealer.Open(sealed, []byte(srcKey))
	if err != nil {
		return nil, fmt.Errorf("source %s configuration: %w", src.Id, err)
	}
	dst := &svcv1.Destination{
		DestinationId:     id.New("dst"),
		Provider:          src.GetProvider(),
		Label:             req.GetLabel(),
		External:          true,
		PathTemplate:      proto.String(template),
		MetadataMapping:   maps.Clone(req.GetMetadataMapping()),
		PermissionMapping: svcv1.PermissionMapping_PERMISSION_MAPPING_PRESERVE_WHERE_SUPPORTED,
		KnownLossiness:    []string{},
	}
	if dst.MetadataMapping == nil {
		dst.MetadataMapping = map[string]string{}
	}
	if req.PermissionMapping != nil {
		dst.PermissionMapping = req.GetPermissionMapping()
	}
	if err := s.storeDestination(ctx, c.Tenant, dst, raw, src.Id); err != nil {
		return nil, err
	}
	return dst, nil
}

// reachesDestination reports whether the caller's grant reaches a destination: always,
// unless a connection's grant names sources and the destination was made from another one.
// Destinations without an origin source (trusted setup's) touch no source.
func (s *Server) reachesDestination(ctx context.Context, c *Caller, dstID string) (bool, error) {
	if c.Connection == nil || len(c.Connection.Grant.SourceIDs) == 0 {
		return true, nil
	}
	origin, err := s.db.GetBlob(ctx, destinationOrigins, c.Tenant.String()+"/"+dstID)
	if errors.Is(err, store.ErrNotFound) {
		return true, nil
	}
	if err != nil {
		return false, err
	}
	return c.Connection.Grant.AllowsSource(string(origin)), nil
}

func (s *Server) getDestination(ctx context.Context, req *svcv1.GetDestinationRequest) (*svcv1.Destination, error) {
	return s.grantedDestination(ctx, callerFrom(ctx), req.GetId())
}

// grantedDestination reads a destination of the caller's tenant that the caller's grant
// reaches (403 otherwise): for reading it, and for every request that would write to it (an
// export or migration plan, a restore), so that a grant limited to some sources never writes
// into a destination made from another.
func (s *Server) grantedDestination(ctx context.Context, c *Caller, dstID string) (*svcv1.Destination, error) {
	d, err := s.destinations.Get(ctx, c.Tenant.String(), dstID)
	if err != nil {
		return nil, err
	}
	ok, err := s.reachesDestination(ctx, c, d.DestinationId)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, newProblem(http.StatusForbidden, codeForbidden, "The connection's grant does not include the source of destination "+d.DestinationId+".")
	}
	return d, nil
}

func (s *Server) listDestinations(ctx context.Context, req *svcv1.ListDestinationsRequest) (*svcv1.ListDestinationsResponse, error) {
	after, limit, binding, err := s.pageStart(ctx, svcv1connect.DestinationServiceListDestinationsProcedure, req)
	if err != nil {
		return nil, err
	}
	c := callerFrom(ctx)
	// Under a grant limited to sources, decide which destinations it reaches before listing:
	// the store's filter runs inside its read transaction, which must not open another.
	hidden := map[string]bool{}
	if c.Connection != nil && len(c.Connection.Grant.SourceIDs) > 0 {
		var ids []string
		if err := s.destinations.Scan(ctx, c.Tenant.String(), func(d *svcv1.Destination) bool {
			ids = append(ids, d.DestinationId)
			return true
		}); err != nil {
			return nil, err
		}
		for _, did := range ids {
			ok, err := s.reachesDestination(ctx, c, did)
			if err != nil {
				return nil, err
			}
			hidden[did] = !ok
		}
	}
	page, err := s.destinations.List(ctx, c.Tenant.String(), after, limit, func(d *svcv1.Destination) bool {
		return !hidden[d.DestinationId]
	})
	if err != nil {
		return nil, err
	}
	return &svcv1.ListDestinationsResponse{Data: nonNil(page.Items), NextCursor: s.nextCursor(binding, page.Last)}, nil
}

// engineDestination opens a plan's destination for the engine (svc.Options.Destinations).
func (s *Server) engineDestination(ctx context.Context, t platform.Tenant, dstID string) (providers.Provider, string, error) {
	_, p, ref, err := s.openDestination(ctx, t, dstID)
	return p, ref, err
}
