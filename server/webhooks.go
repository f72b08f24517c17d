package server

import (
	"context"
	"errors"
	"net/http"
	"slices"

	"google.golang.org/protobuf/types/known/timestamppb"

	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/gen/svc/v1/svcv1connect"
	"svc.dev/svc/platform"
	"svc.dev/svc/platform/event"
	"svc.dev/svc/platform/webhook"
	"svc.dev/svc/server/internal/rpc"
)

// newWebhooks starts the delivery engine on the server's store.
func (s *Server) newWebhooks(ctx context.Context) (*webhook.Engine, error) {
	return webhook.New(ctx, s.store.Webhooks(), webhook.Options{
		Sealer: s.sealer,
		Dev:    s.cfg.Dev,
		Now:    s.cfg.Now,
		Logger: s.log,
		// Live deliveries are metered by the store, in the transaction that records their
		// success (store.Webhooks.UpdateDelivery).
		OnDisabled: func(ep *webhook.Endpoint) {
			app, err := s.devs.Application(context.Background(), ep.AppID)
			if err != nil {
				return
			}
			s.emit(context.Background(), platform.Tenant{Owner: app.OrgID, Mode: ep.Mode}, event.WebhookDisabled, "/v1/webhooks", ep.ID,
				map[string]any{"webhook_id": ep.ID, "reason": ep.DisabledReason})
		},
	})
}

// ownWebhook returns a webhook of the calling key's application; another application's is 404.
func (s *Server) ownWebhook(ctx context.Context, id string) (*webhook.Endpoint, error) {
	ep, err := s.webhooks.Get(ctx, id)
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

func (s *Server) createWebhook(ctx context.Context, req *svcv1.CreateWebhookRequest) (*svcv1.Webhook, error) {
	c := rpc.From(ctx)
	if !keyReachesMode(c.Key, modeOf(req.GetMode())) {
		return nil, rpc.NewProblem(http.StatusForbidden, rpc.CodeForbidden, "A test key manages only test-mode webhooks; use a live key for live ones.")
	}
	ep, secret, err := s.webhooks.Create(ctx, c.Key.AppID, webhook.Params{URL: req.GetUrl(), EventTypes: req.GetEventTypes(), Mode: modeOf(req.GetMode())})
	if err != nil {
		return nil, webhookError(err)
	}
	s.auditChange(ctx, c.Key.AppID, "webhook.created", ep.ID, map[string]any{"url": ep.URL, "mode": string(ep.Mode)})
	return ep.Proto(secret), nil
}

func (s *Server) listWebhooks(ctx context.Context, req *svcv1.ListWebhooksRequest) (*svcv1.ListWebhooksResponse, error) {
	after, limit, binding, err := s.pager.Start(ctx, svcv1connect.WebhookServiceListWebhooksProcedure, req)
	if err != nil {
		return nil, err
	}
	k := rpc.From(ctx).Key
	eps, err := s.webhooks.List(ctx, k.AppID)
	if err != nil {
		return nil, err
	}
	eps = slices.DeleteFunc(eps, func(ep *webhook.Endpoint) bool { return !keyReachesMode(k, ep.Mode) })
	out := &svcv1.ListWebhooksResponse{Data: []*svcv1.Webhook{}}
	started := after == ""
	for i := len(eps) - 1; i >= 0; i-- { // newest first
		ep := eps[i]
		if !started {
			started = ep.ID == after
			continue
		}
		if len(out.Data) == limit {
			out.NextCursor = s.pager.Next(binding, out.Data[len(out.Data)-1].Id)
			break
		}
		out.Data = append(out.Data, ep.Proto(""))
	}
	return out, nil
}

func (s *Server) getWebhook(ctx context.Context, req *svcv1.WebhookRequest) (*svcv1.Webhook, error) {
	ep, err := s.ownWebhook(ctx, req.GetId())
	if err != nil {
		return nil, err
	}
	return ep.Proto(""), nil
}

func (s *Server) updateWebhook(ctx context.Context, req *svcv1.UpdateWebhookRequest) (*svcv1.Webhook, error) {
	if _, err := s.ownWebhook(ctx, req.GetId()); err != nil {
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
	ep, err := s.webhooks.Update(ctx, req.GetId(), u)
	if err != nil {
		return nil, webhookError(err)
	}
	s.auditChange(ctx, ep.AppID, "webhook.updated", ep.ID, nil)
	return ep.Proto(""), nil
}

func (s *Server) deleteWebhook(ctx context.Context, req *svcv1.WebhookRequest) (*svcv1.Webhook, error) {
	ep, err := s.ownWebhook(ctx, req.GetId())
	if err != nil {
		return nil, err
	}
	if err := s.webhooks.Delete(ctx, ep.ID); err != nil {
		return nil, err
	}
	s.auditChange(ctx, ep.AppID, "webhook.deleted", ep.ID, nil)
	return ep.Proto(""), nil
}

func (s *Server) rotateWebhookSecret(ctx context.Context, req *svcv1.WebhookRequest) (*svcv1.Webhook, error) {
	if _, err := s.ownWebhook(ctx, req.GetId()); err != nil {
		return nil, err
	}
	ep, secret, err := s.webhooks.RotateSecret(ctx, req.GetId())
	if err != nil {
		return nil, err
	}
	s.auditChange(ctx, ep.AppID, "webhook.secret_rotated", ep.ID, nil)
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

func (s *Server) listDeliveries(ctx context.Context, req *svcv1.ListDeliveriesRequest) (*svcv1.ListDeliveriesResponse, error) {
	if _, err := s.ownWebhook(ctx, req.GetId()); err != nil {
		return nil, err
	}
	after, limit, binding, err := s.pager.Start(ctx, svcv1connect.WebhookServiceListDeliveriesProcedure, req)
	if err != nil {
		return nil, err
	}
	ds, err := s.webhooks.Deliveries(ctx, req.GetId(), after, limit+1)
	if err != nil {
		return nil, err
	}
	out := &svcv1.ListDeliveriesResponse{Data: []*svcv1.WebhookDelivery{}}
	for i, d := range ds {
		if i == limit {
			out.NextCursor = s.pager.Next(binding, ds[i-1].ID)
			break
		}
		out.Data = append(out.Data, deliveryProto(d))
	}
	return out, nil
}

func (s *Server) sendTestEvent(ctx context.Context, req *svcv1.WebhookRequest) (*svcv1.WebhookDelivery, error) {
	if _, err := s.ownWebhook(ctx, req.GetId()); err != nil {
		return nil, err
	}
	d, err := s.webhooks.SendTest(ctx, req.GetId())
	if err != nil {
		return nil, err
	}
	return deliveryProto(d), nil
}
