package platformapi

import (
	"context"
	"errors"
	"net/http"
	"slices"

	"google.golang.org/protobuf/types/known/timestamppb"

	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/gen/svc/v1/svcv1connect"
	"svc.dev/svc/platform"
	"svc.dev/svc/platform/webhook"
	"svc.dev/svc/server/internal/rpc"
)

// ownWebhook returns a webhook of the calling key's application; another application's is 404.
func (a *API) ownWebhook(ctx context.Context, id string) (*webhook.Endpoint, error) {
	ep, err := a.Webhooks.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	if k := rpc.From(ctx).Key; ep.AppID != k.AppID || !keyReachesMode(k, ep.Mode) {
		return nil, platform.ErrNotFound
	}
	return ep, nil
}

// keyReachesMode reports whether a key may see and change state of mode: a test key only
// test-mode state; a live key both (docs/api.md, "Live mode guarded").
func keyReachesMode(k *platform.APIKey, m platform.Mode) bool {
	return k.Mode == platform.ModeLive || m == platform.ModeTest
}

func modeOf(m svcv1.WebhookMode) platform.Mode {
	if m == svcv1.WebhookMode_WEBHOOK_MODE_LIVE {
		return platform.ModeLive
	}
	return platform.ModeTest
}

// webhookError maps the engine's field errors to validation problems.
func webhookError(err error) error {
	var fe *webhook.FieldError
	if errors.As(err, &fe) {
		return rpc.Invalid(fe.Field, fe.Err.Error())
	}
	return err
}

func (a *API) createWebhook(ctx context.Context, req *svcv1.CreateWebhookRequest) (*svcv1.Webhook, error) {
	c := rpc.From(ctx)
	if !keyReachesMode(c.Key, modeOf(req.GetMode())) {
		return nil, rpc.NewProblem(http.StatusForbidden, rpc.CodeForbidden, "A test key manages only test-mode webhooks; use a live key for live ones.")
	}
	ep, secret, err := a.Webhooks.Create(ctx, c.Key.AppID, webhook.Params{URL: req.GetUrl(), EventTypes: req.GetEventTypes(), Mode: modeOf(req.GetMode())})
	if err != nil {
		return nil, webhookError(err)
	}
	a.Audit.Change(ctx, c.Key.AppID, "webhook.created", ep.ID, map[string]any{"url": ep.URL, "mode": string(ep.Mode)})
	return ep.Proto(secret), nil
}

func (a *API) listWebhooks(ctx context.Context, req *svcv1.ListWebhooksRequest) (*svcv1.ListWebhooksResponse, error) {
	after, limit, binding, err := a.Pager.Start(ctx, svcv1connect.WebhookServiceListWebhooksProcedure, req)
	if err != nil {
		return nil, err
	}
	k := rpc.From(ctx).Key
	eps, err := a.Webhooks.List(ctx, k.AppID)
	if err != nil {
		return nil, err
	}
	eps = slices.DeleteFunc(eps, func(ep *webhook.Endpoint) bool { return !keyReachesMode(k, ep.Mode) })
	data, next := rpc.NewestFirst(a.Pager, eps, func(ep *webhook.Endpoint) string { return ep.ID },
		func(ep *webhook.Endpoint) *svcv1.Webhook { return ep.Proto("") }, after, limit, binding)
	return &svcv1.ListWebhooksResponse{Data: data, NextCursor: next}, nil
}

func (a *API) getWebhook(ctx context.Context, req *svcv1.WebhookRequest) (*svcv1.Webhook, error) {
	ep, err := a.ownWebhook(ctx, req.GetId())
	if err != nil {
		return nil, err
	}
	return ep.Proto(""), nil
}

func (a *API) updateWebhook(ctx context.Context, req *svcv1.UpdateWebhookRequest) (*svcv1.Webhook, error) {
	if _, err := a.ownWebhook(ctx, req.GetId()); err != nil {
		return nil, err
	}
	u := webhook.Update{URL: req.Url}
	if len(req.GetEventTypes()) > 0 {
		u.EventTypes = req.GetEventTypes()
	}
	if req.Status != nil {
		st := webhook.Status(rpc.EnumWire(req.GetStatus()))
		u.Status = &st
	}
	ep, err := a.Webhooks.Update(ctx, req.GetId(), u)
	if err != nil {
		return nil, webhookError(err)
	}
	a.Audit.Change(ctx, ep.AppID, "webhook.updated", ep.ID, nil)
	return ep.Proto(""), nil
}

func (a *API) deleteWebhook(ctx context.Context, req *svcv1.WebhookRequest) (*svcv1.Webhook, error) {
	ep, err := a.ownWebhook(ctx, req.GetId())
	if err != nil {
		return nil, err
	}
	if err := a.Webhooks.Delete(ctx, ep.ID); err != nil {
		return nil, err
	}
	a.Audit.Change(ctx, ep.AppID, "webhook.deleted", ep.ID, nil)
	return ep.Proto(""), nil
}

func (a *API) rotateWebhookSecret(ctx context.Context, req *svcv1.WebhookRequest) (*svcv1.Webhook, error) {
	if _, err := a.ownWebhook(ctx, req.GetId()); err != nil {
		return nil, err
	}
	ep, secret, err := a.Webhooks.RotateSecret(ctx, req.GetId())
	if err != nil {
		return nil, err
	}
	a.Audit.Change(ctx, ep.AppID, "webhook.secret_rotated", ep.ID, nil)
	return ep.Proto(secret), nil
}

func deliveryProto(d *webhook.Delivery) *svcv1.WebhookDelivery {
	out := &svcv1.WebhookDelivery{Id: d.ID, WebhookId: d.WebhookID, EventIds: d.EventIDs, Status: string(d.Status),
		LastResponseStatus: int32(d.LastResponseStatus), LastError: d.LastError, CreatedAt: timestamppb.New(d.CreatedAt),
		UpdatedAt: timestamppb.New(d.UpdatedAt), Attempts: []*svcv1.WebhookAttempt{}}
	if out.EventIds == nil {
		out.EventIds = []string{}
	}
	if d.NextAttemptAt != nil {
		out.NextAttemptAt = timestamppb.New(*d.NextAttemptAt)
	}
	for _, a := range d.Attempts {
		out.Attempts = append(out.Attempts, &svcv1.WebhookAttempt{At: timestamppb.New(a.At), ResponseStatus: int32(a.ResponseStatus),
			Error: a.Error, DurationMs: a.DurationMillis})
	}
	return out
}

func (a *API) listDeliveries(ctx context.Context, req *svcv1.ListDeliveriesRequest) (*svcv1.ListDeliveriesResponse, error) {
	if _, err := a.ownWebhook(ctx, req.GetId()); err != nil {
		return nil, err
	}
	after, limit, binding, err := a.Pager.Start(ctx, svcv1connect.WebhookServiceListDeliveriesProcedure, req)
	if err != nil {
		return nil, err
	}
	ds, err := a.Webhooks.Deliveries(ctx, req.GetId(), after, limit+1)
	if err != nil {
		return nil, err
	}
	out := &svcv1.ListDeliveriesResponse{Data: []*svcv1.WebhookDelivery{}}
	for i, d := range ds {
		if i == limit {
			out.NextCursor = a.Pager.Next(binding, ds[i-1].ID)
			break
		}
		out.Data = append(out.Data, deliveryProto(d))
	}
	return out, nil
}

func (a *API) sendTestEvent(ctx context.Context, req *svcv1.WebhookRequest) (*svcv1.WebhookDelivery, error) {
	if _, err := a.ownWebhook(ctx, req.GetId()); err != nil {
		return nil, err
	}
	d, err := a.Webhooks.SendTest(ctx, req.GetId())
	if err != nil {
		return nil, err
	}
	return deliveryProto(d), nil
}
