package svc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/id"
	"svc.dev/svc/intel"
	"svc.dev/svc/plan"
	"svc.dev/svc/platform/event"
	"svc.dev/svc/providers"
	"svc.dev/svc/storage"
	"svc.dev/svc/wire"
)

// IntelScanReport says what a scan of a tenant's mail found.
type IntelScanReport struct {
	Sources  int // mail sources scanned
	Messages int // messages read (skipped ones included)
	Skipped  int // messages that could not be read, each with a reason in the scan's log
	Meters   int // meters stored (new or updated)
	Trials   int // trials stored (new or updated)
}

// ScanIntel reads the tenant's connected mail sources the scope reaches (sources of kind
// "mail") with the intel detectors and stores the meters and trials found: one per service,
// updated in place by a later scan (their ids are derived from the tenant and the service).
// Each source is read from its delta marker on (the whole source the first time); what the
// detectors keep of earlier mail is stored between scans. New meters and trials are announced
// (svc.meter.detected, svc.trial.detected), changed meters too (svc.meter.updated). A user's
// decisions and actions (decision, remindAt, action, a limit) are kept across scans.
func (s *Scope) ScanIntel(ctx context.Context) (IntelScanReport, error) {
	var rep IntelScanReport
	res, err := s.c.resources()
	if err != nil {
		return rep, err
	}
	srcs, err := s.Sources(ctx)
	if err != nil {
		return rep, err
	}
	store := intelStore{s}
	var result intel.Result
	for _, src := range srcs {
		if src.GetKind() != "mail" || src.GetStatus() != svcv1.SourceStatus_SOURCE_STATUS_CONNECTED {
			continue
		}
		p, ref, err := s.OpenSource(ctx, src.Id)
		if err != nil {
			return rep, err
		}
		since, err := store.marker(ctx, src.Id)
		if err != nil {
			return rep, err
		}
		var next providers.Marker
		r, stats, err := intel.ScanIncremental(ctx, store, &intel.Options{Namespace: s.key(), SourceID: src.Id}, s.c.now(),
			func(sc *intel.Scanner) error {
				var err error
				next, err = intel.ScanSource(ctx, p, ref, since, sc)
				if errors.Is(err, providers.ErrMarkerExpired) {
					next, err = intel.ScanSource(ctx, p, ref, providers.Marker{}, sc) // read it all again
				}
				return err
			})
		if err != nil {
			return rep, fmt.Errorf("scan source %s: %w", src.Id, err)
		}
		if err := store.setMarker(ctx, src.Id, next); err != nil {
			return rep, err
		}
		rep.Sources++
		rep.Messages += stats.Messages
		rep.Skipped += stats.Skipped
		result.Meters = append(result.Meters, r.Meters...)
		result.Trials = append(result.Trials, r.Trials...)
	}
	for _, m := range result.Meters {
		stored, err := res.Meters().Get(ctx, s.key(), m.ID)
		isNew := errors.Is(err, storage.ErrNotFound)
		if err != nil && !isNew {
			return rep, err
		}
		pm, err := meterProto(m)
		if err != nil {
			return rep, err
		}
		if !isNew { // what the user chose stays
			pm.Action, pm.Explanation = stored.GetAction(), stored.Explanation
		}
		if err := res.Meters().Put(ctx, s.key(), pm.GetId(), pm); err != nil {
			return rep, err
		}
		rep.Meters++
		typ := event.MeterUpdated
		if isNew {
			typ = event.MeterDetected
		}
		s.emit(ctx, typ, "/v1/intel/meters", pm.GetId(), map[string]any{"meter_id": pm.GetId(), "service": pm.GetService(), "trap_type": enumWire(pm.GetTrapType())})
	}
	for _, t := range result.Trials {
		stored, err := res.Trials().Get(ctx, s.key(), t.ID)
		isNew := errors.Is(err, storage.ErrNotFound)
		if err != nil && !isNew {
			return rep, err
		}
		pt, err := trialProto(t)
		if err != nil {
			return rep, err
		}
		if !isNew {
			pt.Decision, pt.RemindAt = stored.GetDecision(), stored.GetRemindAt()
		}
		if err := res.Trials().Put(ctx, s.key(), pt.GetId(), pt); err != nil {
			return rep, err
		}
		// What a stop decision acts on (the message and its List-Unsubscribe) is not a field
		// of the API's trial: it is kept beside it.
		if err := putJSON(ctx, s.c.hosted.IntelState(), s.key(), trialStopKey(pt.GetId()), t.Unsubscribe); err != nil {
			return rep, err
		}
		rep.Trials++
		if isNew {
			s.emit(ctx, event.TrialDetected, "/v1/intel/trials", pt.GetId(), map[string]any{"trial_id": pt.GetId(), "service": pt.GetService()})
		}
	}
	return rep, nil
}

// ListMeters returns a page of the tenant's meters, newest first. Meters concern the mailbox
// as a whole: a scope limited to some sources lists those found in them only.
func (s *Scope) ListMeters(ctx context.Context, after string, limit int) (storage.Page[*svcv1.Meter], error) {
	res, err := s.c.resources()
	if err != nil {
		return storage.Page[*svcv1.Meter]{}, err
	}
	return res.Meters().List(ctx, s.key(), after, limit, func(m *svcv1.Meter) bool { return s.reachesEvidence(m.GetEvidence()) })
}

// Meter returns a meter of the tenant.
func (s *Scope) Meter(ctx context.Context, id string) (*svcv1.Meter, error) {
	res, err := s.c.resources()
	if err != nil {
		return nil, err
	}
	m, err := res.Meters().Get(ctx, s.key(), id)
	if err != nil {
		return nil, err
	}
	if !s.reachesEvidence(m.GetEvidence()) {
		return nil, refused(CodeForbidden, "The connection's grant does not include the sources of this meter's evidence.")
	}
	return m, nil
}

// ActOnMeter records the user's action on a meter (watch, set_limit with limitCents, explain,
// ignore, intervene). An intervention svc has no mechanism for (mail shows no way to change a
// subscription) is refused with CodeInvalidState.
func (s *Scope) ActOnMeter(ctx context.Context, id string, action svcv1.MeterAction, limitCents *int64) (*svcv1.Meter, error) {
	res, err := s.c.resources()
	if err != nil {
		return nil, err
	}
	m, err := s.Meter(ctx, id)
	if err != nil {
		return nil, err
	}
	var im intel.Meter
	if err := fromProto(m, &im); err != nil {
		return nil, err
	}
	acted, err := intel.Act(im, intel.Action(enumWire(action)), limitCents, s.c.now())
	switch {
	case errors.Is(err, intel.ErrNoMechanism):
		return nil, refused(CodeInvalidState, "svc has no way to intervene on this service from its mail: change the subscription at the service, or set a limit to be told.")
	case err != nil:
		return nil, invalid("action", err.Error())
	}
	out, err := meterProto(acted)
	if err != nil {
		return nil, err
	}
	if err := res.Meters().Put(ctx, s.key(), out.GetId(), out); err != nil {
		return nil, err
	}
	s.emit(ctx, event.MeterActionTaken, "/v1/intel/meters", out.GetId(), map[string]any{"meter_id": out.GetId(), "action": enumWire(action)})
	return out, nil
}

// ListTrials returns a page of the tenant's trials, newest first.
func (s *Scope) ListTrials(ctx context.Context, after string, limit int) (storage.Page[*svcv1.Trial], error) {
	res, err := s.c.resources()
	if err != nil {
		return storage.Page[*svcv1.Trial]{}, err
	}
	return res.Trials().List(ctx, s.key(), after, limit, func(t *svcv1.Trial) bool { return s.reachesEvidence(t.GetEvidence()) })
}

// Trial returns a trial of the tenant.
func (s *Scope) Trial(ctx context.Context, id string) (*svcv1.Trial, error) {
	res, err := s.c.resources()
	if err != nil {
		return nil, err
	}
	t, err := res.Trials().Get(ctx, s.key(), id)
	if err != nil {
		return nil, err
	}
	if !s.reachesEvidence(t.GetEvidence()) {
		return nil, refused(CodeForbidden, "The connection's grant does not include the sources of this trial's evidence.")
	}
	return t, nil
}

// TrialOutcome is what a decision on a trial leads to.
type TrialOutcome struct {
	Trial *svcv1.Trial
	// Action is what svc will do: "none" (keep), "remind" (an event at remindAt), "unsubscribe"
	// (stop: a plan of intent unsubscribe holding the trial's message, whose sender supports
	// RFC 8058 one-click), "instructions" (stop where svc cannot act: the plan excludes the
	// message with unsupported_capability and says what the user must do, as Instructions does).
	Action string
	// PlanID is the stop decision's plan (intent unsubscribe), stored like any other: it is
	// authorized and executed through the plan endpoints.
	PlanID string
	// Instructions is what the user must do themself to end the trial (for stop): a one-click
	// unsubscribe stops the service's mail, not its billing.
	Instructions string
}

// DecideTrial records the user's decision on a trial: keep, stop or remind (at remindAt). Stop
// builds and stores a plan of intent unsubscribe (TrialOutcome.PlanID): when the service's
// latest trial mail offers RFC 8058 one-click unsubscribe, the plan holds that message with the
// unsubscribe action; otherwise it holds nothing and excludes the message with
// unsupported_capability, its detail saying what the user must do. Nothing is recorded when
// the plan cannot be built.
func (s *Scope) DecideTrial(ctx context.Context, id string, d svcv1.TrialDecision, remindAt time.Time) (TrialOutcome, error) {
	res, err := s.c.resources()
	if err != nil {
		return TrialOutcome{}, err
	}
	t, err := s.Trial(ctx, id)
	if err != nil {
		return TrialOutcome{}, err
	}
	var it intel.Trial
	if err := fromProto(t, &it); err != nil {
		return TrialOutcome{}, err
	}
	if _, err := getJSON(ctx, s.c.hosted.IntelState(), s.key(), trialStopKey(id), &it.Unsubscribe); err != nil {
		return TrialOutcome{}, err
	}
	out, err := intel.Decide(it, intel.Decision(enumWire(d)), remindAt, s.c.now())
	if err != nil {
		return TrialOutcome{}, invalid("decision", err.Error())
	}
	o := TrialOutcome{Action: "none"}
	if d == svcv1.TrialDecision_TRIAL_DECISION_REMIND {
		o.Action = "remind"
	}
	if out.Stop != nil {
		p, err := s.trialStopPlan(ctx, out.Trial, out.Stop)
		if err != nil {
			return TrialOutcome{}, err
		}
		o.PlanID, o.Instructions = p.PlanId, intel.CancelInstructions(out.Trial)
		o.Action = "instructions"
		if len(p.GetObjects()) > 0 {
			o.Action = "unsubscribe"
		} else if ex := p.GetExcluded(); len(ex) > 0 {
			o.Instructions = ex[0].GetDetail()
		}
	}
	pt, err := trialProto(out.Trial)
	if err != nil {
		return TrialOutcome{}, err
	}
	if err := res.Trials().Put(ctx, s.key(), pt.GetId(), pt); err != nil {
		return TrialOutcome{}, err
	}
	o.Trial = pt
	data := map[string]any{"trial_id": pt.GetId(), "decision": enumWire(d), "action": o.Action}
	if o.PlanID != "" {
		data["plan_id"] = o.PlanID
	}
	s.emit(ctx, event.TrialDecided, "/v1/intel/trials", pt.GetId(), data)
	return o, nil
}

// trialStopKey is where the intel state keeps what a stop decision on a trial acts on.
func trialStopKey(trialID string) string { return "trialstop/" + trialID }

// trialStopPlan builds and stores the plan of a stop decision, of intent unsubscribe, like a
// restore plan: made here rather than by listing the source, over the one message the trial's
// mail named. The message is fetched (a read) to check that it is still there and still offers
// one-click unsubscribe; the execution fetches it again against the version planned.
func (s *Scope) trialStopPlan(ctx context.Context, t intel.Trial, sp *intel.StopPlan) (*svcv1.Plan, error) {
	u := t.Unsubscribe
	if u.SourceID == "" || u.Object == "" {
		return nil, refused(CodeInvalidState, "svc does not know which message of this trial to act on yet: scan the mail again (POST /v1/jobs of kind scan), then decide.")
	}
	if err := s.reachesSource(u.SourceID); err != nil {
		return nil, err
	}
	src, err := s.Source(ctx, u.SourceID)
	if err != nil {
		return nil, err
	}
	detail := ""
	if sp.Excluded != nil {
		detail = sp.Excluded.Detail
	}
	var obj *svcv1.PlanObject
	if sp.OneClick != nil {
		prov, ref, err := s.OpenSource(ctx, src.Id)
		if err != nil {
			return nil, err
		}
		c, err := prov.Fetch(ctx, providers.FetchRequest{SourceRef: ref, ObjectID: u.Object})
		switch {
		case errors.Is(err, providers.ErrNotFound):
			detail = fmt.Sprintf("the message of %s that offered one-click unsubscribe is no longer in the mailbox; %s", t.Service, intel.CancelInstructions(t))
		case err != nil:
			return nil, fmt.Errorf("read the trial's message %s: %w", u.Object, err)
		default:
			c.Body.Close()
			meta := c.Object
			target, ok := "", false
			if meta.Message != nil {
				target, ok = plan.OneClickTarget(meta.Message.ListUnsubscribe, meta.Message.ListUnsubscribePost)
			}
			if !ok {
				detail = fmt.Sprintf("%s's message no longer offers one-click unsubscribe (RFC 8058); %s", t.Service, intel.CancelInstructions(t))
				break
			}
			obj = &svcv1.PlanObject{AssetId: plan.AssetID(s.key(), src.Id, u.Object), SourceId: src.Id, Provider: src.Provider,
				ProviderObjectId: u.Object, ExpectedSizeBytes: meta.SizeBytes, StorageClass: svcv1.StorageClass_STORAGE_CLASS_REVIEW,
				StorageClassReason: fmt.Sprintf("the trial of %s: unsubscribing at %s stops its mail; to stop its billing, %s", t.Service, target, intel.CancelInstructions(t)),
				Actions:            []svcv1.PlanAction{svcv1.PlanAction_PLAN_ACTION_UNSUBSCRIBE}}
			if meta.Version != "" {
				obj.ExpectedVersion = proto.String(meta.Version)
			}
		}
	}
	now := s.c.now().UTC().Truncate(time.Millisecond)
	p := &svcv1.Plan{
		PlanId: id.NewAt("pln", now), PlanVersion: plan.Version, TenantId: s.key(), UserId: s.t.Owner, Actor: s.actorOr(nil),
		Intent: svcv1.PlanIntent_PLAN_INTENT_UNSUBSCRIBE, Simulated: s.t.Simulated(),
		OperationClasses: []svcv1.OperationClass{svcv1.OperationClass_OPERATION_CLASS_DISCOVER},
		CreatedAt:        timestamppb.New(now), ExpiresAt: timestamppb.New(now.Add(plan.DefaultTTL)),
		SourceMarkers: []*svcv1.SourceMarker{{Provider: src.Provider, SourceId: src.Id, Kind: svcv1.SourceMarkerKind_SOURCE_MARKER_KIND_NONE,
			Value: "trial " + t.ID, ObservedAt: timestamppb.New(now)}},
		Objects:    []*svcv1.PlanObject{},
		Excluded:   []*svcv1.Exclusion{},
		Projection: &svcv1.Projection{ProjectedQuota: []*svcv1.ProjectedQuota{}},
		State:      svcv1.PlanState_PLAN_STATE_VALIDATED,
	}
	if obj != nil {
		p.Objects = append(p.Objects, obj)
		p.Projection.ObjectCount = 1
		p.OperationClasses = append(p.OperationClasses, svcv1.OperationClass_OPERATION_CLASS_AUTOMATE)
	} else {
		p.Excluded = append(p.Excluded, &svcv1.Exclusion{AssetId: plan.AssetID(s.key(), src.Id, u.Object),
			Reason: svcv1.ExclusionReason_EXCLUSION_REASON_UNSUPPORTED_CAPABILITY, Detail: detail})
	}
	plan.Canonicalize(p)
	p.Policy = plan.Decide(p, plan.Decision{SourceStatus: map[string]svcv1.SourceStatus{src.Id: src.GetStatus()}, Grant: s.grantOr(plan.Grant{})})
	if p.Policy.GetDecision() == svcv1.PolicyDecision_POLICY_DECISION_DENY {
		p.State = svcv1.PlanState_PLAN_STATE_REJECTED
	}
	if p.Hash, err = plan.Hash(p); err != nil {
		return nil, err
	}
	if err := s.PutPlan(ctx, p); err != nil {
		return nil, err
	}
	return p, nil
}

// reachesEvidence reports whether a scope limited to some sources reaches every source a
// meter's or trial's evidence comes from.
func (s *Scope) reachesEvidence(ev []*svcv1.Evidence) bool {
	if !s.access.limited() {
		return true
	}
	for _, e := range ev {
		if id := e.GetSourceId(); id != "" && !s.access.allowsSource(id) {
			return false
		}
	}
	return true
}

// meterProto is a detector's meter as the API's, through their one JSON (the spec's names).
func meterProto(m intel.Meter) (*svcv1.Meter, error) {
	out := &svcv1.Meter{}
	return out, toProto(m, out)
}

func trialProto(t intel.Trial) (*svcv1.Trial, error) {
	out := &svcv1.Trial{}
	return out, toProto(t, out)
}

func toProto(v any, m proto.Message) error {
	raw, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if err := wire.Unmarshal(raw, m); err != nil {
		return fmt.Errorf("intel %T as the API's: %w", v, err)
	}
	return nil
}

func fromProto(m proto.Message, v any) error {
	raw, err := wire.Marshal(m)
	if err != nil {
		return err
	}
	return json.Unmarshal(raw, v)
}

// intelStore keeps the detectors' state of a tenant between scans: the observations (per
// namespace) and each source's delta marker.
type intelStore struct{ s *Scope }

func (st intelStore) LoadObservations(ctx context.Context, namespace string) ([]intel.Observation, error) {
	var obs []intel.Observation
	_, err := getJSON(ctx, st.s.c.hosted.IntelState(), st.s.key(), "observations/"+namespace, &obs)
	return obs, err
}

func (st intelStore) SaveObservations(ctx context.Context, namespace string, obs []intel.Observation) error {
	return putJSON(ctx, st.s.c.hosted.IntelState(), st.s.key(), "observations/"+namespace, obs)
}

func (st intelStore) marker(ctx context.Context, sourceID string) (providers.Marker, error) {
	var m providers.Marker
	_, err := getJSON(ctx, st.s.c.hosted.IntelState(), st.s.key(), "marker/"+sourceID, &m)
	return m, err
}

func (st intelStore) setMarker(ctx context.Context, sourceID string, m providers.Marker) error {
	return putJSON(ctx, st.s.c.hosted.IntelState(), st.s.key(), "marker/"+sourceID, m)
}

// getJSON decodes the blob of key into v and reports whether there was one (none leaves v as
// it is, and is no error).
func getJSON(ctx context.Context, b storage.Blobs, tenant, key string, v any) (bool, error) {
	raw, err := b.Get(ctx, tenant, key)
	if errors.Is(err, storage.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return true, json.Unmarshal(raw, v)
}

// putJSON stores v, encoded, as the blob of key.
func putJSON(ctx context.Context, b storage.Blobs, tenant, key string, v any) error {
	raw, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return b.Put(ctx, tenant, key, raw)
}

// FireTrialReminders announces every trial whose reminder is due (decision remind, remind_at
// passed) with svc.trial.reminder, once: the reminder is then cleared from the trial. Reminders
// are stored with the trial, so they survive restarts; a host calls this every minute or so.
func (sv *Instance) FireTrialReminders(ctx context.Context) (int, error) {
	res, err := sv.core.resources()
	if err != nil {
		return 0, err
	}
	now := sv.core.now()
	type due struct{ tenant, id string }
	var list []due
	err = res.Trials().ScanAll(ctx, func(tenant, id string, t *svcv1.Trial) bool {
		if t.GetDecision() == svcv1.TrialDecision_TRIAL_DECISION_REMIND && t.GetRemindAt() != nil && !t.GetRemindAt().AsTime().After(now) {
			list = append(list, due{tenant, id})
		}
		return true
	})
	if err != nil {
		return 0, err
	}
	fired := 0
	for _, d := range list {
		tn, err := parseTenant(d.tenant)
		if err != nil {
			continue
		}
		var at time.Time
		err = res.Trials().Update(ctx, d.tenant, d.id, func(t *svcv1.Trial) error {
			if t.GetRemindAt() == nil {
				return errAlreadyFired
			}
			at = t.GetRemindAt().AsTime()
			t.RemindAt = nil
			return nil
		})
		if errors.Is(err, errAlreadyFired) {
			continue
		}
		if err != nil {
			return fired, err
		}
		sv.Tenant(tn).emit(ctx, event.TrialReminder, "/v1/intel/trials", d.id,
			map[string]any{"trial_id": d.id, "remind_at": at.UTC().Format(time.RFC3339)})
		fired++
	}
	return fired, nil
}

var errAlreadyFired = errors.New("reminder already fired")
