package svc

import (
	"context"
	"crypto/sha256"
	"time"

	"github.com/oklog/ulid/v2"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/id"
	"svc.dev/svc/platform/event"
	"svc.dev/svc/receipt"
	"svc.dev/svc/storage"
	"svc.dev/svc/wire"
)

// Event types this package announces: names of the one catalogue, platform/event
// (docs/webhooks.md lists it).
const (
	EventPlanCreated        = event.PlanCreated
	EventPlanAuthorized     = event.PlanAuthorized
	EventPlanRejected       = event.PlanRejected
	EventPlanCancelled      = event.PlanCancelled
	EventPlanStale          = event.PlanStale
	EventPlanExpired        = event.PlanExpired
	EventExecutionStarted   = event.ExecutionStarted
	EventExecutionCancelled = event.ExecutionCancelRequested
	EventSourceConnected    = event.SourceConnected
	EventSourcePolicy       = event.SourcePolicyUpdated
	EventReceiptCreated     = event.ReceiptCreated
)

// Announcer records the events of domain changes. Announce returns the Write that stores ev
// (in the tenant's stream, and wherever else the host sends it) in the transaction of the
// change it reports, and a function to call once that transaction committed (nil: none).
// It reads the store, so it is called before the change's transaction, never inside it.
type Announcer interface {
	Announce(ctx context.Context, tenant Tenant, ev *svcv1.Event) (storage.Write, func(), error)
}

// Charger meters a finished execution's usage, exactly once however often it is asked
// (a finish is redone after a crash), and returns what the receipt lists as its charges.
type Charger interface {
	Charge(ctx context.Context, p *svcv1.Plan, x *svcv1.Execution, objs []receipt.Object) ([]receipt.Charge, error)
}

// streamAnnouncer records events in the tenant's own stream only (an embedder's default).
type streamAnnouncer struct{ events storage.Events }

func (a streamAnnouncer) Announce(_ context.Context, tenant Tenant, ev *svcv1.Event) (storage.Write, func(), error) {
	w, err := a.events.Write(ev, tenant.String())
	return w, nil, err
}

func (c *core) announcer() Announcer {
	if c.opts.Announcer != nil {
		return c.opts.Announcer
	}
	return streamAnnouncer{c.store.Events()}
}

// NewEvent makes a CloudEvents 1.0 event of tenant. Test-mode events carry svcsimulated.
func NewEvent(tenant Tenant, evID string, at time.Time, typ, source, subject string, data map[string]any) *svcv1.Event {
	d, err := structpb.NewStruct(data)
	if err != nil {
		d = &structpb.Struct{}
	}
	return &svcv1.Event{Specversion: "1.0", Id: evID, Source: source, Type: typ, Time: timestamppb.New(at),
		Subject: subject, Datacontenttype: "application/json", Data: d, Svcsimulated: tenant.Simulated()}
}

// pending is an announced event: its write, and what to do once it is stored.
type pending struct {
	write storage.Write
	done  func()
}

func (p pending) wake() {
	if p.done != nil {
		p.done()
	}
}

// prepare announces an event of the scope's tenant with a new id, now.
func (s *Scope) prepare(ctx context.Context, typ, source, subject string, data map[string]any) (pending, error) {
	return s.prepareAt(ctx, id.New("evt"), s.c.now(), typ, source, subject, data)
}

func (s *Scope) prepareAt(ctx context.Context, evID string, at time.Time, typ, source, subject string, data map[string]any) (pending, error) {
	w, done, err := s.c.announcer().Announce(context.WithoutCancel(ctx), s.t, NewEvent(s.t, evID, at, typ, source, subject, data))
	return pending{w, done}, err
}

// emit records an event on its own. It never fails the change it reports (already stored):
// an error is logged.
func (s *Scope) emit(ctx context.Context, typ, source, subject string, data map[string]any) {
	p, err := s.prepare(ctx, typ, source, subject, data)
	if err == nil {
		err = s.c.store.Apply(context.WithoutCancel(ctx), p.write)
	}
	if err != nil {
		s.c.log.Error("record event", "type", typ, "err", err)
		return
	}
	p.wake()
}

// derivedEventID is the id of an event that may be published again after a crash (the end of
// an execution): a ULID whose time is at, the moment the event reports, and whose random part
// comes from key, so publishing it again stores and queues the same event, not a second one.
func derivedEventID(key string, at time.Time) string {
	sum := sha256.Sum256([]byte("svc/event/v1\x00" + key))
	var u ulid.ULID
	if err := u.SetTime(ulid.Timestamp(at)); err != nil {
		return id.NewAt("evt", at)
	}
	if err := u.SetEntropy(sum[:10]); err != nil {
		return id.NewAt("evt", at)
	}
	return "evt_" + u.String()
}

// PlanEventData is the data of a plan's events: its id, state, intent, hash and size.
func PlanEventData(p *svcv1.Plan) map[string]any {
	return map[string]any{"plan_id": p.GetPlanId(), "state": enumWire(p.GetState()), "intent": enumWire(p.GetIntent()),
		"hash": p.GetHash(), "object_count": float64(p.GetProjection().GetObjectCount())}
}

// enumWire is an enum value's wire string ("authorized").
func enumWire(e protoreflect.Enum) string { return wire.EnumString(e.Descriptor(), e.Number()) }
