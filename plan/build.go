package plan

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/timestamppb"

	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/id"
	"svc.dev/svc/mail"
	"svc.dev/svc/wire"
)

// Version is the plan format version (planVersion).
const Version = "1"

// DefaultTTL is how long a plan stays valid for authorization and execution.
const DefaultTTL = 24 * time.Hour

// ErrInvalid is returned when a build request cannot make a plan (an intent that needs a
// destination without one, no sources, ...). The message says why.
var ErrInvalid = errors.New("invalid plan request")

// Request is what to plan.
type Request struct {
	// Budget bounds what building the plan may take; zero fields are the defaults.
	Budget           Budget
	TenantID, UserID string
	Actor            *svcv1.Actor
	Simulated        bool
	Intent           svcv1.PlanIntent
	Sources          []Source
	// Policy, when set, replaces every source's own policy for this plan.
	Policy *svcv1.SourcePolicy
	// Destination is required for export and migrate.
	Destination          *svcv1.Destination
	PreservationRequired bool
	Grant                Grant
	Billing              *Billing
	Now                  time.Time
	TTL                  time.Duration // default DefaultTTL
}

// candidate is an object on its way into the plan.
type candidate struct {
	obj      *svcv1.PlanObject
	modified int64 // unix nanoseconds, for duplicate handling
	src      int
	unsub    bool // has List-Unsubscribe
	oneClick bool // ... with an RFC 8058 one-click target

	// For messages: what the mailbox's evidence settles (markConversations), as keys of the
	// correspondents graph.
	message bool
	kind    mailKind
	owner   bool // the class comes from the owner's rules (policy, starred, shared, age, size)
	sent    bool // the owner's own: in a sent folder, or from the account's address
	from    uint64
	thread  uint64 // the thread's root id
	reply   uint64 // the id it answers (In-Reply-To, else the last of References)
	// For a stranger's person-like mail: its first recipients and its junk signals, which
	// decide once the owner's addresses are known.
	to      [2]uint64
	junk    uint8
	junkWhy string

	seq    int32 // position in the listing, across sources
	repeat bool  // the provider listed this object before (an id listed twice)

	// For unsolicited mail the rules left undecided: its words' buckets in the per-mailbox
	// junk model (keys[mk0:mk0+mkN]), judged once the listing ends.
	model bool
	mkN   uint8
	mk0   int32
}

// Build makes a plan. It reads each source's listing to the end, one page at a time, and never
// changes provider state. The plan is validated, or rejected when the policy decision is deny.
func Build(ctx context.Context, req Request) (*svcv1.Plan, error) {
	if len(req.Sources) == 0 {
		return nil, fmt.Errorf("%w: no sources", ErrInvalid)
	}
	switch req.Intent {
	case svcv1.PlanIntent_PLAN_INTENT_RESTORE:
		return nil, fmt.Errorf("%w: restore plans start from the vault (POST /v1/vault/objects/{id}/restore)", ErrInvalid)
	case svcv1.PlanIntent_PLAN_INTENT_EXPORT, svcv1.PlanIntent_PLAN_INTENT_MIGRATE:
		if req.Destination == nil {
			return nil, fmt.Errorf("%w: intent %s needs a destination", ErrInvalid, enumString(req.Intent))
		}
	}
	now := req.Now.UTC().Truncate(time.Millisecond)
	ttl := cmp.Or(req.TTL, DefaultTTL)
	p := &svcv1.Plan{
		PlanId:               id.NewAt("pln", now),
		PlanVersion:          Version,
		TenantId:             req.TenantID,
		UserId:               req.UserID,
		Actor:                req.Actor,
		Intent:               req.Intent,
		Simulated:            req.Simulated,
		CreatedAt:            timestamppb.New(now),
		ExpiresAt:            timestamppb.New(now.Add(ttl)),
		Destination:          req.Destination,
		PreservationRequired: req.PreservationRequired,
		Projection:           &svcv1.Projection{},
		Objects:              []*svcv1.PlanObject{},
		Excluded:             []*svcv1.Exclusion{},
	}
	rules := make([]rules, len(req.Sources))
	reasons := map[string]string{} // interned: a million objects share a few hundred reasons
	intern := func(s string) string {
		if v, ok := reasons[s]; ok {
			return v
		}
		reasons[s] = s
		return s
	}
	var cands []candidate
	var exSeq []int32               // each exclusion's position in the listing
	copies := map[copyKey][]int32{} // groups of copies: by Message-ID for mail, else by content
	graph := newCorrespondents(req.Sources)
	var model *junkModel // made at the first message
	var modelKeysArena, keyScratch []uint32
	budget := req.Budget.withDefaults()
	spent := spending{start: time.Now()}
	lctx, cancel := context.WithTimeout(ctx, budget.MaxDuration)
	defer cancel()
	for si := range req.Sources {
		src := &req.Sources[si]
		pol := src.Policy
		if req.Policy != nil {
			pol = req.Policy
		}
		rules[si] = resolve(pol)
		r := &rules[si]
		marker := Marker{Kind: "none"}
		for {
			page, err := src.Objects.Next(lctx)
			if err != nil {
				if ctx.Err() == nil && lctx.Err() != nil {
					return nil, &BudgetError{Budget: BudgetTime, Limit: int64(budget.MaxDuration / time.Second), SourceID: src.ID}
				}
				return nil, fmt.Errorf("list source %s: %w", src.ID, err)
			}
			if page.Marker.Kind != "" {
				marker = page.Marker
			}
			if err := spent.add(page.Objects, budget, src.ID); err != nil {
				return nil, err
			}
			for i := range page.Objects {
				o := &page.Objects[i]
				asset := AssetID(req.TenantID, src.ID, o.ID)
				seq := spent.seq()
				if o.Kind == "message" {
					graph.listed(o)
				}
				sent := graph.sentByOwner(o)
				if sent {
					graph.sent(o) // excluded or not: the owner's mail says whom they know
				}
				if reason, detail := r.exclusion(o, now); reason != 0 {
					p.Excluded = append(p.Excluded, &svcv1.Exclusion{AssetId: asset, Reason: reason, Detail: detail})
					exSeq = append(exSeq, seq)
					continue
				}
				class, why, v, owner := r.classify(o, now)
				po := &svcv1.PlanObject{
					AssetId:            asset,
					SourceId:           src.ID,
					Provider:           src.Provider,
					ProviderObjectId:   o.ID,
					ExpectedSizeBytes:  o.SizeBytes,
					StorageClass:       class,
					StorageClassReason: intern(why),
				}
				if o.Version != "" {
					po.ExpectedVersion = proto.String(o.Version)
				}
				if o.SHA256 != "" {
					po.ExpectedSha256 = proto.String(o.SHA256)
				}
				if k, ok := graph.copyOf(o); ok {
					copies[k] = append(copies[k], int32(len(cands)))
				}
				modified := o.ModifiedAt
				if modified.IsZero() {
					modified = o.CreatedAt
				}
				_, oneClick := OneClickTarget(o.ListUnsubscribe, o.ListUnsubscribePost)
				c := candidate{obj: po, modified: modified.UnixNano(), src: si, unsub: o.ListUnsubscribe != "", oneClick: oneClick,
					kind: v.kind, owner: owner, seq: seq}
				if o.Kind == "message" && v.judged {
					if model == nil {
						model = newJunkModel()
					}
					subj, text := r.scratch[:v.nSubj:v.nSubj], r.scratch[v.nSubj:]
					keyScratch = modelKeys(keyScratch[:0], o, subj, text, domainOf(address(o.From)))
					switch {
					case v.said:
						model.learn(keyScratch, true)
					case sent || v.kind == mailConversation || v.kind == mailTransactional:
						model.learn(keyScratch, false)
					case !owner && !v.list && v.trans == 0 && len(modelKeysArena) < maxModelJudged*maxModelKeys &&
						(v.kind == mailStranger || v.kind == mailConflict || (v.kind == mailUnknown && v.unsolicited)):
						c.model, c.mk0, c.mkN = true, int32(len(modelKeysArena)), uint8(len(keyScratch))
						modelKeysArena = append(modelKeysArena, keyScratch...)
					}
				}
				if o.Kind == "message" {
					c.message, c.sent = true, sent
					c.from, c.thread, c.reply = graph.key(address(o.From)), graph.idKey(o.ThreadID), graph.idKey(o.Facts[mail.FactInReplyTo])
					if v.kind == mailStranger {
						c.to, c.junk, c.junkWhy = graph.firstRecipients(o), uint8(min(v.junk, 255)), intern(v.junkWhy)
					}
				}
				cands = append(cands, c)
			}
			if page.Last {
				break
			}
		}
		mk, ok := wire.ParseEnum(svcv1.SourceMarkerKind(0).Descriptor(), marker.Kind)
		if !ok {
			return nil, fmt.Errorf("source %s: unknown marker kind %q", src.ID, marker.Kind)
		}
		p.SourceMarkers = append(p.SourceMarkers, &svcv1.SourceMarker{Provider: src.Provider, SourceId: src.ID,
			Kind: svcv1.SourceMarkerKind(mk), Value: marker.Value, ObservedAt: timestamppb.New(now)})
	}
	p.Excluded = markRepeats(cands, p.Excluded, exSeq)
	markConversations(cands, graph, intern)
	if model != nil && model.ready() {
		judgeByModel(cands, model, modelKeysArena, intern)
	}
	markDuplicates(cands, copies, rules)

	removed := make([]int64, len(req.Sources))
	ops := map[svcv1.OperationClass]bool{svcv1.OperationClass_OPERATION_CLASS_DISCOVER: true}
	for i := range cands {
		c := &cands[i]
		if c.repeat {
			continue
		}
		src := &req.Sources[c.src]
		acts, reason, detail := actionsFor(req, &rules[c.src], src, c)
		switch {
		case reason != 0:
			p.Excluded = append(p.Excluded, &svcv1.Exclusion{AssetId: c.obj.AssetId, Reason: reason, Detail: detail})
			continue
		case acts == nil:
			continue // not part of this intent (unsubscribe plans hold subscriptions only)
		}
		c.obj.Actions = acts
		c.obj.PreservationElected = slices.Contains(acts, svcv1.PlanAction_PLAN_ACTION_PRESERVE)
		p.Objects = append(p.Objects, c.obj)
		project(p.Projection, c.obj, removed, c.src, ops)
	}
	if req.Billing != nil {
		ops[svcv1.OperationClass_OPERATION_CLASS_BILLABLE_EXECUTE] = true
	}
	for op := range ops {
		p.OperationClasses = append(p.OperationClasses, op)
	}
	slices.Sort(p.OperationClasses)
	p.Projection.ProjectedReclaimBytes = p.Projection.BytesToRemove
	p.Projection.ProjectedQuota = []*svcv1.ProjectedQuota{}
	for si := range req.Sources {
		if q := req.Sources[si].Quota; q != nil {
			pq := &svcv1.ProjectedQuota{SourceId: req.Sources[si].ID, UsedBytesAfter: max(0, q.UsedBytes-removed[si])}
			if q.LimitBytes > 0 {
				pq.LimitBytes = proto.Int64(q.LimitBytes)
				pq.PercentAfter = proto.Float64(math.Round(float64(pq.UsedBytesAfter)*10000/float64(q.LimitBytes)) / 100)
			}
			p.Projection.ProjectedQuota = append(p.Projection.ProjectedQuota, pq)
		}
	}
	if req.Billing != nil {
		p.Meter = Estimate(p.Projection, req.Billing)
	}
	Canonicalize(p)
	compact(p.Objects)
	status := make(map[string]svcv1.SourceStatus, len(req.Sources))
	for _, s := range req.Sources {
		status[s.ID] = s.Status
	}
	p.Policy = Decide(p, Decision{SourceStatus: status, Grant: req.Grant, Billing: req.Billing})
	p.State = svcv1.PlanState_PLAN_STATE_VALIDATED
	if p.Policy.GetDecision() == svcv1.PolicyDecision_POLICY_DECISION_DENY {
		p.State = svcv1.PlanState_PLAN_STATE_REJECTED
	}
	h, err := Hash(p)
	if err != nil {
		return nil, err
	}
	p.Hash = h
	return p, nil
}

// markDuplicates turns all but one object of each group of copies into duplicates (or, with
// duplicateHandling review, every member into review): the same message delivered twice (the
// same Message-ID from the same sender, across folders and sources, whatever headers the copies
// gained on the way) or the same content (SHA-256). Objects the owner's rules preserve or
// protect, and preserved (transactional) mail, keep their class; a preserved or protected
// member is the one kept. A conversation's extra copies are duplicates: one copy stays.
func markDuplicates(cands []candidate, copies map[copyKey][]int32, rules []rules) {
	kept := func(c *candidate) bool {
		return c.obj.StorageClass == svcv1.StorageClass_STORAGE_CLASS_PRESERVE || (c.owner && c.obj.StorageClass == svcv1.StorageClass_STORAGE_CLASS_PROTECTED_BY_RULE)
	}
	for key, group := range copies {
		group = slices.DeleteFunc(group, func(i int32) bool { return cands[i].repeat })
		if len(group) < 2 {
			continue
		}
		// The copy kept: among the preserved or protected members when there are any (the
		// owner's sent copy first), else among all, the newest or oldest as the policy says.
		pool := group
		if i := slices.IndexFunc(group, func(i int32) bool { return cands[i].sent }); i >= 0 {
			pool = group[i : i+1]
		} else if p := slices.DeleteFunc(slices.Clone(group), func(i int32) bool {
			sc := cands[i].obj.StorageClass
			return sc != svcv1.StorageClass_STORAGE_CLASS_PRESERVE && sc != svcv1.StorageClass_STORAGE_CLASS_PROTECTED_BY_RULE
		}); len(p) > 0 {
			pool = p
		}
		keep := pool[0]
		for _, i := range pool[1:] {
			a, b := &cands[i], &cands[keep]
			newer := a.modified > b.modified || (a.modified == b.modified && a.obj.AssetId < b.obj.AssetId)
			older := a.modified < b.modified || (a.modified == b.modified && a.obj.AssetId < b.obj.AssetId)
			if (rules[a.src].duplicates == svcv1.DuplicateHandling_DUPLICATE_HANDLING_KEEP_OLDEST && older) ||
				(rules[a.src].duplicates != svcv1.DuplicateHandling_DUPLICATE_HANDLING_KEEP_OLDEST && newer) {
				keep = i
			}
		}
		why := "another copy of the same content (SHA-256) is kept"
		if key.message {
			why = "another copy of the same message (Message-ID) is kept"
		}
		for _, i := range group {
			c := &cands[i]
			if kept(c) {
				continue
			}
			switch {
			case rules[c.src].duplicates == svcv1.DuplicateHandling_DUPLICATE_HANDLING_REVIEW:
				c.obj.StorageClass = svcv1.StorageClass_STORAGE_CLASS_REVIEW
				c.obj.StorageClassReason = "one of several copies (duplicateHandling review)"
			case i != keep:
				c.obj.StorageClass = svcv1.StorageClass_STORAGE_CLASS_DUPLICATE
				c.obj.StorageClassReason = why
			}
		}
	}
}

var (
	preserve = svcv1.PlanAction_PLAN_ACTION_PRESERVE
	trash    = svcv1.PlanAction_PLAN_ACTION_TRASH
	copyTo   = svcv1.PlanAction_PLAN_ACTION_COPY
	moveTo   = svcv1.PlanAction_PLAN_ACTION_MOVE
	unsub    = svcv1.PlanAction_PLAN_ACTION_UNSUBSCRIBE
	noop     = svcv1.PlanAction_PLAN_ACTION_NOOP
)

// actionsFor chooses an object's actions for the intent, or an exclusion when the provider
// cannot do what the intent needs. nil actions without a reason leave the object out.
func actionsFor(req Request, r *rules, src *Source, c *candidate) ([]svcv1.PlanAction, svcv1.ExclusionReason, string) {
	class := c.obj.StorageClass
	vaultAll := r.preservation == svcv1.PreservationMode_PRESERVATION_MODE_VAULT_ALL
	keepCopy := vaultAll || class == svcv1.StorageClass_STORAGE_CLASS_PRESERVE
	switch req.Intent {
	case svcv1.PlanIntent_PLAN_INTENT_RESCUE:
		return []svcv1.PlanAction{preserve}, 0, ""
	case svcv1.PlanIntent_PLAN_INTENT_EXPORT:
		if keepCopy {
			return []svcv1.PlanAction{preserve, copyTo}, 0, ""
		}
		return []svcv1.PlanAction{copyTo}, 0, ""
	case svcv1.PlanIntent_PLAN_INTENT_MIGRATE:
		if !src.CanTrash {
			return nil, svcv1.ExclusionReason_EXCLUSION_REASON_UNSUPPORTED_CAPABILITY, "the provider cannot remove the original after the move"
		}
		if keepCopy || req.PreservationRequired {
			return []svcv1.PlanAction{preserve, moveTo}, 0, ""
		}
		return []svcv1.PlanAction{moveTo}, 0, ""
	case svcv1.PlanIntent_PLAN_INTENT_UNSUBSCRIBE:
		if class == svcv1.StorageClass_STORAGE_CLASS_PROMOTIONAL && c.unsub {
			if !c.oneClick {
				return nil, svcv1.ExclusionReason_EXCLUSION_REASON_UNSUPPORTED_CAPABILITY,
					"the sender offers no one-click unsubscribe (RFC 8058: an https List-Unsubscribe with List-Unsubscribe-Post); unsubscribe by hand"
			}
			return []svcv1.PlanAction{unsub}, 0, ""
		}
		return nil, 0, ""
	}
	// svc (clean-up) and simulation.
	if r.removable(class) && r.sourceAction == svcv1.SourceAction_SOURCE_ACTION_TRASH {
		if !src.CanTrash {
			return nil, svcv1.ExclusionReason_EXCLUSION_REASON_UNSUPPORTED_CAPABILITY, "the provider cannot trash objects"
		}
		if keepCopy || req.PreservationRequired {
			return []svcv1.PlanAction{preserve, trash}, 0, ""
		}
		return []svcv1.PlanAction{trash}, 0, ""
	}
	if keepCopy {
		return []svcv1.PlanAction{preserve}, 0, ""
	}
	return []svcv1.PlanAction{noop}, 0, ""
}

// project adds an object to the projection and the operation classes.
func project(pr *svcv1.Projection, o *svcv1.PlanObject, removed []int64, src int, ops map[svcv1.OperationClass]bool) {
	pr.ObjectCount++
	for _, a := range o.Actions {
		switch a {
		case preserve:
			pr.BytesToPreserve += o.ExpectedSizeBytes
			ops[svcv1.OperationClass_OPERATION_CLASS_PRESERVE] = true
		case trash:
			pr.BytesToRemove += o.ExpectedSizeBytes
			removed[src] += o.ExpectedSizeBytes
			ops[svcv1.OperationClass_OPERATION_CLASS_REMOVE] = true
		case copyTo:
			pr.BytesToTransfer += o.ExpectedSizeBytes
			ops[svcv1.OperationClass_OPERATION_CLASS_WRITE] = true
		case moveTo:
			pr.BytesToTransfer += o.ExpectedSizeBytes
			pr.BytesToRemove += o.ExpectedSizeBytes
			removed[src] += o.ExpectedSizeBytes
			ops[svcv1.OperationClass_OPERATION_CLASS_MIGRATE] = true
		case unsub:
			ops[svcv1.OperationClass_OPERATION_CLASS_AUTOMATE] = true
		}
	}
}

// Canonicalize puts a plan's arrays in their canonical order: objects and excluded by
// assetId, source markers by provider then sourceId, operation classes in enumeration order.
func Canonicalize(p *svcv1.Plan) {
	slices.SortFunc(p.Objects, func(a, b *svcv1.PlanObject) int { return cmp.Compare(a.AssetId, b.AssetId) })
	slices.SortFunc(p.Excluded, func(a, b *svcv1.Exclusion) int { return cmp.Compare(a.AssetId, b.AssetId) })
	slices.SortFunc(p.SourceMarkers, func(a, b *svcv1.SourceMarker) int {
		return cmp.Or(cmp.Compare(enumString(a.Provider), enumString(b.Provider)), cmp.Compare(a.SourceId, b.SourceId))
	})
	slices.Sort(p.OperationClasses)
}

// enumString is an enum value's wire string.
func enumString(e protoreflect.Enum) string { return wire.EnumString(e.Descriptor(), e.Number()) }
