// Package discover bridges providers to plan building: it reads a provider's listing as
// plan.Objects, page by page, converting provider objects to what classification needs. It
// only ever lists.
package discover

import (
	"context"

	"svc.dev/svc/plan"
	"svc.dev/svc/providers"
)

// Listing reads one source of a provider.
type Listing struct {
	p     providers.Provider
	ref   string
	token string
	size  int
}

// Objects returns the listing of source ref at p, in pages of the provider's maximum size.
func Objects(p providers.Provider, ref string) *Listing {
	return &Listing{p: p, ref: ref, size: providers.MaxPageSize}
}

// Next implements plan.Objects.
func (l *Listing) Next(ctx context.Context) (plan.Page, error) {
	pg, err := l.p.List(ctx, providers.ListRequest{SourceRef: l.ref, PageToken: l.token, PageSize: l.size})
	if err != nil {
		return plan.Page{}, err
	}
	out := plan.Page{Objects: make([]plan.Object, len(pg.Objects)), Last: pg.NextPageToken == "",
		Marker: plan.Marker{Kind: string(pg.Marker.Kind), Value: pg.Marker.Value}}
	for i := range pg.Objects {
		out.Objects[i] = Object(&pg.Objects[i])
	}
	l.token = pg.NextPageToken
	return out, nil
}

// Object converts a provider object. A message without a modification time is as old as its
// Date header.
func Object(o *providers.Object) plan.Object {
	po := plan.Object{ID: o.ID, Version: o.Version, Kind: string(o.Kind), Name: o.Name, Path: o.Path, MIMEType: o.MIMEType,
		SizeBytes: o.SizeBytes, SHA256: o.SHA256, Containers: o.Containers, CreatedAt: o.CreatedAt, ModifiedAt: o.ModifiedAt,
		Starred: o.Starred, Shared: o.Shared}
	if m := o.Message; m != nil {
		po.From, po.To, po.Cc, po.Subject, po.ListID = m.From, m.To, m.Cc, m.Subject, m.ListID
		po.ListUnsubscribe, po.ListUnsubscribePost = m.ListUnsubscribe, m.ListUnsubscribePost
		po.ThreadID, po.Snippet, po.Facts = m.ThreadID, m.Snippet, o.Metadata
		if po.ModifiedAt.IsZero() {
			po.ModifiedAt = m.Date
		}
	}
	return po
}
