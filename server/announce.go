package server

import (
	"context"
	"slices"
	"time"

	"google.golang.org/protobuf/types/known/structpb"

	"svc.dev/svc"
	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/id"
	"svc.dev/svc/platform"
	"svc.dev/svc/platform/webhook"
	"svc.dev/svc/server/internal/rpc"
	"svc.dev/svc/storage"
)

// emit records a CloudEvents 1.0 event in the tenant's stream and in the stream of every
// application that reaches the tenant, plus the applications in also (one a change just cut
// off, say), and queues it for their webhooks, all in one transaction (bolt.EventsExtra): an
// event that can be listed is also on its way to every webhook subscribed to it. Test-mode
// events carry svcsimulated. It never fails the operation that emitted it: that change is
// already stored, and an error is logged.
func (s *Server) emit(ctx context.Context, tenant platform.Tenant, typ, source, subject string, data map[string]any, also ...string) {
	s.publish(ctx, tenant, id.New("evt"), s.cfg.Now(), typ, source, subject, data, also...)
}

// publish is emit with the event's id and time given.
func (s *Server) publish(ctx context.Context, tenant platform.Tenant, evID string, at time.Time, typ, source, subject string, data map[string]any, also ...string) {
	ctx = context.WithoutCancel(ctx)
	pe, err := s.prepareEvent(ctx, tenant, evID, at, typ, source, subject, data, also...)
	if err == nil {
		err = s.store.Apply(ctx, pe.extra)
	}
	if err != nil {
		s.log.Error("record event", "event_id", evID, "type", typ, "err", err)
		return
	}
	s.wake(pe)
}

// preparedEvent is an event ready to be written in the transaction of the change it reports
// (bolt.PutWith, bolt.UpdateWith, or on its own with bolt.DB.Apply), then woken (wake).
type preparedEvent struct {
	extra storage.Write
	queue []webhook.QueuedEvent
}

// prepareEvent makes an event: its records in the tenant's stream and in the stream of every
// application that reaches the tenant (and the applications in also), and its queue entries
// for their webhooks. It reads the store, so it runs before the transaction that writes it.
func (s *Server) prepareEvent(ctx context.Context, tenant platform.Tenant, evID string, at time.Time, typ, source, subject string, data map[string]any, also ...string) (preparedEvent, error) {
	if _, err := structpb.NewStruct(data); err != nil {
		s.log.Error("event data", "type", typ, "err", err)
	}
	return s.fanOut(ctx, tenant, svc.NewEvent(tenant, evID, at, typ, source, subject, data), also...)
}

// fanOut prepares a made event for the tenant's stream, the streams of the applications that
// reach the tenant (and those in also), and their webhooks' queues.
func (s *Server) fanOut(ctx context.Context, tenant platform.Tenant, ev *svcv1.Event, also ...string) (preparedEvent, error) {
	apps, err := s.devs.Reaching(ctx, tenant)
	if err != nil {
		s.log.Error("event audience", "type", ev.GetType(), "err", err)
	}
	for _, app := range also {
		if !slices.Contains(apps, app) {
			apps = append(apps, app)
		}
	}
	items := []storage.Item[*svcv1.Event]{{Tenant: tenant.String(), ID: ev.Id, Value: ev}}
	for _, app := range apps {
		items = append(items, storage.Item[*svcv1.Event]{Tenant: rpc.AppStream(app, tenant.Mode), ID: ev.Id, Value: ev})
	}
	var queue []webhook.QueuedEvent
	if s.webhooks != nil && len(apps) > 0 {
		if queue, err = s.webhooks.Queue(ctx, tenant.Mode, ev, apps); err != nil {
			s.log.Error("queue event for webhooks", "event_id", ev.Id, "err", err)
		}
	}
	x, err := s.store.EventsWrite(items, queue)
	return preparedEvent{extra: x, queue: queue}, err
}

// announcer records the embedding package's events as the server records its own: in the
// tenant's stream, the reaching applications' streams and their webhooks' queues.
type announcer struct{ s *Server }

func (a announcer) Announce(ctx context.Context, tenant platform.Tenant, ev *svcv1.Event) (storage.Write, func(), error) {
	pe, err := a.s.fanOut(ctx, tenant, ev)
	return pe.extra, func() { a.s.wake(pe) }, err
}

// wake tells the webhook engine about what a stored event queued.
func (s *Server) wake(pe preparedEvent) {
	if s.webhooks != nil {
		s.webhooks.Wake(pe.queue)
	}
}
