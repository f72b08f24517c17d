package client

import (
	"context"
	"fmt"
	"iter"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	svcv1 "svc.dev/svc/gen/svc/v1"
)

// All iterates over every item of a list method, following next_cursor page by page until
// the server reports no more. list is a list method of a service client (c.Plans.ListPlans)
// and req its first request (nil: the defaults); req is not modified. The iteration stops at
// the first error, which it yields with a zero item.
//
//	for p, err := range client.All[*svcv1.Plan](ctx, c.Plans.ListPlans, &svcv1.ListPlansRequest{}) {
//		if err != nil { return err }
//		fmt.Println(p.GetPlanId())
//	}
func All[Item proto.Message, Req, Res any](ctx context.Context, list func(context.Context, *connect.Request[Req]) (*connect.Response[Res], error), req *Req) iter.Seq2[Item, error] {
	return func(yield func(Item, error) bool) {
		var zero Item
		if req == nil {
			req = new(Req)
		}
		first, ok := any(req).(proto.Message)
		if !ok {
			yield(zero, fmt.Errorf("client: %T is not a request message", req))
			return
		}
		page := proto.Clone(first)
		pr := page.ProtoReflect()
		cursorField := pr.Descriptor().Fields().ByName("cursor")
		if cursorField == nil {
			yield(zero, fmt.Errorf("client: %s has no cursor field", pr.Descriptor().FullName()))
			return
		}
		for {
			res, err := list(ctx, connect.NewRequest(page.(any).(*Req)))
			if err != nil {
				yield(zero, err)
				return
			}
			rm := any(res.Msg).(proto.Message).ProtoReflect()
			data := rm.Descriptor().Fields().ByName("data")
			next := rm.Descriptor().Fields().ByName("next_cursor")
			if data == nil || next == nil {
				yield(zero, fmt.Errorf("client: %s is not a list response", rm.Descriptor().FullName()))
				return
			}
			items := rm.Get(data).List()
			for i := range items.Len() {
				item, ok := items.Get(i).Message().Interface().(Item)
				if !ok {
					yield(zero, fmt.Errorf("client: %s holds %s, not %T", rm.Descriptor().FullName(), items.Get(i).Message().Descriptor().FullName(), zero))
					return
				}
				if !yield(item, nil) {
					return
				}
			}
			if !rm.Has(next) || rm.Get(next).String() == "" {
				return
			}
			pr.Set(cursorField, protoreflect.ValueOfString(rm.Get(next).String()))
		}
	}
}

// ListPlans iterates over the plans req selects, newest first.
func (c *Client) ListPlans(ctx context.Context, req *svcv1.ListPlansRequest) iter.Seq2[*svcv1.Plan, error] {
	return All[*svcv1.Plan](ctx, c.Plans.ListPlans, req)
}

// ListExecutions iterates over the executions req selects.
func (c *Client) ListExecutions(ctx context.Context, req *svcv1.ListExecutionsRequest) iter.Seq2[*svcv1.Execution, error] {
	return All[*svcv1.Execution](ctx, c.Executions.ListExecutions, req)
}

// ListSources iterates over the caller's connected sources.
func (c *Client) ListSources(ctx context.Context, req *svcv1.ListSourcesRequest) iter.Seq2[*svcv1.Source, error] {
	return All[*svcv1.Source](ctx, c.Sources.ListSources, req)
}

// ListDestinations iterates over the caller's destinations.
func (c *Client) ListDestinations(ctx context.Context, req *svcv1.ListDestinationsRequest) iter.Seq2[*svcv1.Destination, error] {
	return All[*svcv1.Destination](ctx, c.Destinations.ListDestinations, req)
}

// ListVaultObjects iterates over the vault objects req selects.
func (c *Client) ListVaultObjects(ctx context.Context, req *svcv1.ListVaultObjectsRequest) iter.Seq2[*svcv1.VaultObject, error] {
	return All[*svcv1.VaultObject](ctx, c.Vault.ListVaultObjects, req)
}

// ListEvents iterates over the events req selects, newest first.
func (c *Client) ListEvents(ctx context.Context, req *svcv1.ListEventsRequest) iter.Seq2[*svcv1.Event, error] {
	return All[*svcv1.Event](ctx, c.Events.ListEvents, req)
}
