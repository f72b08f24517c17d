package svc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"unicode/utf8"

	"google.golang.org/protobuf/proto"

	"svc.dev/svc/execute"
	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/id"
	"svc.dev/svc/providers"
	"svc.dev/svc/storage"
	"svc.dev/svc/wire"
)

// A destination is backed by a provider configuration exactly like a source: sealed under
// the tenant and the destination's id, so that OpenSource opens a destination by its id. It
// is not a source: no plan over "every connected source" sees it.

// MaxLabelLen bounds a destination's label, in characters.
const MaxLabelLen = 80

// DestinationSpec describes a destination to add.
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
// can write, then stores the destination and its configuration, sealed.
func (s *Scope) AddDestination(ctx context.Context, spec DestinationSpec) (*svcv1.Destination, error) {
	if n := utf8.RuneCountInString(spec.Label); n < 1 || n > MaxLabelLen {
		return nil, fmt.Errorf("destination label: must be 1 to %d characters", MaxLabelLen)
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
	p, err := s.c.providers.Open(ctx, spec.Provider, spec.Config)
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
	if err := s.storeDestination(ctx, dst, raw, ""); err != nil {
		return nil, err
	}
	return dst, nil
}

// DestinationOptions shape a destination made from a source.
type DestinationOptions struct {
	Label string
	// PathTemplate places each object at the destination; empty means
	// execute.DefaultPathTemplate.
	PathTemplate      string
	MetadataMapping   map[string]string
	PermissionMapping svcv1.PermissionMapping // unspecified: preserve where supported
}

// DestinationFromSource makes a destination from a connected source whose provider can write
// (otherwise CodeInvalidArgument on source_id). Its configuration is copied, resealed under
// the destination's own key, so the destination outlives changes to the source record; the
// source is recorded as its origin.
func (s *Scope) DestinationFromSource(ctx context.Context, sourceID string, o DestinationOptions) (*svcv1.Destination, error) {
	template := o.PathTemplate
	if template == "" {
		template = execute.DefaultPathTemplate
	}
	if err := execute.CheckPathTemplate(template); err != nil {
		return nil, invalid("path_template", err.Error())
	}
	if err := s.reachesSource(sourceID); err != nil {
		return nil, err
	}
	src, err := s.Source(ctx, sourceID)
	if errors.Is(err, storage.ErrNotFound) {
		// Unknown and another tenant's sources are answered alike.
		return nil, invalid("source_id", "is not a connected source")
	}
	if err != nil {
		return nil, err
	}
	if st := src.GetStatus(); st != svcv1.SourceStatus_SOURCE_STATUS_CONNECTED {
		return nil, invalid("source_id", "is "+enumWire(st)+", not connected; reconnect it first")
	}
	p, _, err := s.OpenSource(ctx, src.Id)
	if err != nil {
		return nil, err
	}
	if _, ok := providers.AsWriter(p); !ok {
		return nil, invalid("source_id", "its provider ("+enumWire(src.GetProvider())+") cannot write")
	}
	srcKey := s.key() + "/" + src.Id
	sealed, err := s.c.store.Sources().Config(ctx, s.key(), src.Id)
	if err != nil {
		return nil, fmt.Errorf("source %s configuration: %w", src.Id, err)
	}
	raw, err := s.c.sealer.Open(sealed, []byte(srcKey))
	if err != nil {
		return nil, fmt.Errorf("source %s configuration: %w", src.Id, err)
	}
	dst := &svcv1.Destination{
		DestinationId:     id.New("dst"),
		Provider:          src.GetProvider(),
		Label:             o.Label,
		External:          true,
		PathTemplate:      proto.String(template),
		MetadataMapping:   maps.Clone(o.MetadataMapping),
		PermissionMapping: svcv1.PermissionMapping_PERMISSION_MAPPING_PRESERVE_WHERE_SUPPORTED,
		KnownLossiness:    []string{},
	}
	if dst.MetadataMapping == nil {
		dst.MetadataMapping = map[string]string{}
	}
	if o.PermissionMapping != svcv1.PermissionMapping_PERMISSION_MAPPING_UNSPECIFIED {
		dst.PermissionMapping = o.PermissionMapping
	}
	if err := s.storeDestination(ctx, dst, raw, src.Id); err != nil {
		return nil, err
	}
	return dst, nil
}

// storeDestination seals a destination's backing configuration under its own key, records
// its origin source (if any), then stores the resource: a destination that can be read can
// always be opened.
func (s *Scope) storeDestination(ctx context.Context, dst *svcv1.Destination, rawConfig []byte, origin string) error {
	sealed, err := s.c.sealer.Seal(rawConfig, []byte(s.key()+"/"+dst.DestinationId))
	if err != nil {
		return err
	}
	if err := s.c.store.Sources().PutConfig(ctx, s.key(), dst.DestinationId, sealed); err != nil {
		return err
	}
	if origin != "" {
		if err := s.c.store.Destinations().PutOrigin(ctx, s.key(), dst.DestinationId, origin); err != nil {
			return err
		}
	}
	return s.c.store.Destinations().Put(ctx, s.key(), dst)
}

// Destination returns a destination of the tenant: refused (CodeForbidden) when the scope's
// grant is limited to sources and the destination was made from another one, for reading it
// and for every plan that would write to it (an export, a migration, a restore).
// Destinations without an origin source (trusted setup's) touch no source.
func (s *Scope) Destination(ctx context.Context, id string) (*svcv1.Destination, error) {
	d, err := s.c.store.Destinations().Get(ctx, s.key(), id)
	if err != nil {
		return nil, err
	}
	ok, err := s.reachesDestination(ctx, d.DestinationId)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, refused(CodeForbidden, "The connection's grant does not include the source of destination "+d.DestinationId+".")
	}
	return d, nil
}

// reachesDestination reports whether the scope's grant reaches a destination.
func (s *Scope) reachesDestination(ctx context.Context, id string) (bool, error) {
	if !s.access.limited() {
		return true, nil
	}
	origin, err := s.DestinationOrigin(ctx, id)
	if err != nil || origin == "" {
		return err == nil, err
	}
	return s.access.allowsSource(origin), nil
}

// ListDestinations returns a page of the tenant's destinations the scope reaches, newest
// first, after the destination id after ("": from the newest).
func (s *Scope) ListDestinations(ctx context.Context, after string, limit int) (storage.Page[*svcv1.Destination], error) {
	res, err := s.c.resources()
	if err != nil {
		return storage.Page[*svcv1.Destination]{}, err
	}
	// Under a grant limited to sources, decide which destinations it reaches before listing:
	// the list's filter runs while the store reads, and must not read again.
	hidden := map[string]bool{}
	if s.access.limited() {
		var ids []string
		if err := res.Destinations().Scan(ctx, s.key(), func(d *svcv1.Destination) bool {
			ids = append(ids, d.DestinationId)
			return true
		}); err != nil {
			return storage.Page[*svcv1.Destination]{}, err
		}
		for _, did := range ids {
			ok, err := s.reachesDestination(ctx, did)
			if err != nil {
				return storage.Page[*svcv1.Destination]{}, err
			}
			hidden[did] = !ok
		}
	}
	return res.Destinations().List(ctx, s.key(), after, limit, func(d *svcv1.Destination) bool { return !hidden[d.DestinationId] })
}

// DestinationOrigin returns the source a destination was made from ("" for one added with
// AddDestination).
func (s *Scope) DestinationOrigin(ctx context.Context, id string) (string, error) {
	o, err := s.c.store.Destinations().Origin(ctx, s.key(), id)
	if errors.Is(err, storage.ErrNotFound) {
		return "", nil
	}
	return o, err
}

// OpenDestination returns a destination of the tenant, the provider it writes to (opened and
// cached like a source's) and the reference within it. A missing destination is an error
// wrapping ErrNotFound; a provider that cannot write, one wrapping providers.ErrUnsupported.
func (s *Scope) OpenDestination(ctx context.Context, dstID string) (*svcv1.Destination, providers.Provider, string, error) {
	d, err := s.Destination(ctx, dstID)
	if err != nil {
		return nil, nil, "", fmt.Errorf("destination %s: %w", dstID, err)
	}
	p, ref, err := s.OpenSource(ctx, dstID)
	if err != nil {
		return nil, nil, "", fmt.Errorf("open destination %s: %w", dstID, err)
	}
	if _, ok := providers.AsWriter(p); !ok {
		return nil, nil, "", fmt.Errorf("destination %s (%s): cannot write: %w", dstID, enumWire(d.GetProvider()), providers.ErrUnsupported)
	}
	return d, p, ref, nil
}
