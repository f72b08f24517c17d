package intel

import (
	"context"
	"errors"
	"fmt"

	"svc.dev/svc/providers"
)

// ScanSource scans a connected mail source through its provider, so that every mail connector
// (the simulated mailbox, local folders, vendor connectors) feeds the same detectors. With a
// zero since it lists the whole source; otherwise it reads the changes since that marker (an
// incremental scan). Each message's evidence ref is its Message-ID; its source ref is the
// provider's object id. A message that cannot be fetched or read is skipped with its reason;
// the scan goes on. It returns the marker to pass next time.
func ScanSource(ctx context.Context, p providers.Provider, sourceRef string, since providers.Marker, s *Scanner) (providers.Marker, error) {
	scan := func(o providers.Object) error {
		if o.Kind != providers.KindMessage {
			return nil
		}
		c, err := p.Fetch(ctx, providers.FetchRequest{SourceRef: sourceRef, ObjectID: o.ID})
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			s.Skip(o.ID, fmt.Errorf("fetch: %w", err))
			return nil
		}
		defer c.Body.Close()
		s.Scan(o.ID, c.Body)
		return nil
	}
	if since.IsZero() {
		req := providers.ListRequest{SourceRef: sourceRef}
		for {
			page, err := p.List(ctx, req)
			if err != nil {
				return providers.Marker{}, fmt.Errorf("intel: list %s: %w", sourceRef, err)
			}
			for _, o := range page.Objects {
				if err := scan(o); err != nil {
					return providers.Marker{}, err
				}
			}
			if page.NextPageToken == "" {
				return page.Marker, nil
			}
			req.PageToken = page.NextPageToken
		}
	}
	req := providers.ChangesRequest{SourceRef: sourceRef, Since: since}
	for {
		page, err := p.Changes(ctx, req)
		if err != nil {
			return providers.Marker{}, fmt.Errorf("intel: changes of %s: %w", sourceRef, err)
		}
		for _, ch := range page.Changes {
			if ch.Type != providers.ChangeUpsert || ch.Object == nil {
				continue
			}
			if err := scan(*ch.Object); err != nil {
				return providers.Marker{}, err
			}
		}
		if page.NextPageToken == "" {
			if page.Marker.IsZero() {
				return since, errors.New("intel: provider returned no marker")
			}
			return page.Marker, nil
		}
		req.PageToken = page.NextPageToken
	}
}
