package graph

import (
	"context"
	"fmt"
	"net/http"

	"svc.dev/svc/providers"
)

// Page is one page of a Graph collection.
type Page[T any] struct {
	Value     []T    `json:"value"`
	NextLink  string `json:"@odata.nextLink"`
	DeltaLink string `json:"@odata.deltaLink"`
}

// Cursor is a position in a Graph listing that svc's page tokens carry: the
// link of the vendor's page (a path under the endpoint) and how many of its
// items were already handed out. Graph's page sizes are hints, so a vendor
// page may be larger than the page svc was asked for; the cursor lets svc
// hand it out in pieces without keeping it.
type Cursor struct {
	Link string `json:"l"`
	Skip int    `json:"s,omitempty"`
}

// Step reads the vendor page at cur and returns up to n of its items from
// cur.Skip, and either the cursor of what follows (done false) or, at the
// end of the listing, its @odata.deltaLink as a path (done true).
func Step[T any](ctx context.Context, c *Client, hdr http.Header, cur Cursor, n int) (items []T, next Cursor, done bool, deltaLink string, err error) {
	var page Page[T]
	if _, err := c.Do(ctx, http.MethodGet, cur.Link, hdr, nil, &page); err != nil {
		return nil, Cursor{}, false, "", err
	}
	if cur.Skip > len(page.Value) {
		return nil, Cursor{}, false, "", fmt.Errorf("graph: page token past its page: %w", providers.ErrInvalidArgument)
	}
	end := min(len(page.Value), cur.Skip+n)
	items = page.Value[cur.Skip:end]
	switch {
	case end < len(page.Value):
		return items, Cursor{Link: cur.Link, Skip: end}, false, "", nil
	case page.NextLink != "":
		rel, ok := c.Relative(page.NextLink)
		if !ok {
			return nil, Cursor{}, false, "", fmt.Errorf("graph: nextLink outside the endpoint: %w", providers.ErrTransient)
		}
		return items, Cursor{Link: rel}, false, "", nil
	}
	rel, ok := c.Relative(page.DeltaLink)
	if page.DeltaLink != "" && !ok {
		return nil, Cursor{}, false, "", fmt.Errorf("graph: deltaLink outside the endpoint: %w", providers.ErrTransient)
	}
	return items, Cursor{}, true, rel, nil
}
