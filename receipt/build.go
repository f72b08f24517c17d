package receipt

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/id"
	"svc.dev/svc/wire"
)

// Version is the receiptVersion this package writes and verifies.
const Version = "1"

// Status is what an execution did to one object, as a receipt says it.
type Status = svcv1.ReceiptObjectStatus

// Object statuses.
const (
	// Completed: every action on the object succeeded.
	Completed = svcv1.ReceiptObjectStatus_RECEIPT_OBJECT_STATUS_COMPLETED
	// Partial: some actions succeeded and some did not (preserved, but the trash failed).
	Partial = svcv1.ReceiptObjectStatus_RECEIPT_OBJECT_STATUS_PARTIAL
	// Failed: the object's actions failed; nothing the receipt counts was done to it.
	Failed = svcv1.ReceiptObjectStatus_RECEIPT_OBJECT_STATUS_FAILED
	// Skipped: the object was not acted on (its version moved, the execution was cancelled).
	Skipped = svcv1.ReceiptObjectStatus_RECEIPT_OBJECT_STATUS_SKIPPED
)

// Input is the outcome of one execution, as the execution engine knows it at the end. FromPlan
// fills the part that comes from the executed plan. Strings left empty where the receipt has a
// nullable field are written as null.
type Input struct {
	// ReceiptID is the receipt's rcp_ id. Empty: Build makes one. An engine that may build the
	// receipt again after a crash should keep the id in its journal and pass it, so that the
	// execution has one receipt id.
	ReceiptID   string
	ExecutionID string // exe_ id
	PlanID      string // pln_ id
	// PlanHash is the hash of the plan the execution ran: the authorization's
	// planHashAtAuthorization.
	PlanHash string
	// TenantRef names the tenant the execution ran in (the plan's tenantId).
	TenantRef string
	// Actor is who ran the execution; its delegatingUserId is also written at the top level.
	Actor         *svcv1.Actor
	Authorization Authorization
	Intent        svcv1.PlanIntent
	Simulated     bool

	// Objects are the per-object results, in any order (the receipt sorts them by assetId).
	// Each asset appears once.
	Objects []Object

	// Before and After are the sources' quotas observed before and after the execution.
	Before, After []Quota
	// MeasuredReclaimBytes, when set, is written as is. When nil it is measured from Before
	// and After: the sum over sources of usedBytes before minus after (at least 0), when every
	// source in Before has usedBytes in both; otherwise null.
	MeasuredReclaimBytes *int64

	Charges []Charge

	StartedAt, FinishedAt time.Time

	Restoration Restoration

	// Errors are execution-level errors (the execution's errors), in any order: the receipt
	// writes them sorted, without empty strings and duplicates.
	Errors []string
}

// Authorization is what the execution ran under.
type Authorization struct {
	ActionDecisionID          string // required
	GrantID                   string // the connection's grant, for developer keys
	CommercialAuthorizationID string
	PolicyVersion             string // required
	RateCardVersion           string
}

// Object is what the execution did to one object of the plan.
type Object struct {
	AssetID          string
	ProviderObjectID string
	// Actions are the plan's actions for the object, in the plan's order.
	Actions []svcv1.PlanAction
	Status  Status
	// Preserved: a vault copy was committed (stored, re-read and verified) by this execution
	// or found committed already; VaultObjectID and VaultSHA256 must be set. Counts Bytes
	// toward bytesPreserved.
	Preserved bool
	// Removed: the object was trashed, removed or moved away at the source. Counts Bytes
	// toward bytesRemoved.
	Removed bool
	// Transferred: the content was written to a destination (copy, move, restore). Counts
	// Bytes toward bytesTransferred.
	Transferred bool

	VaultObjectID    string
	VaultSHA256      string // lowercase hex
	ProviderResultID string // the provider's id for the trash/remove/write result
	Bytes            int64  // the object's size
	// Error says what went wrong; required for Failed and Partial, the reason for Skipped.
	Error string
	// Restorable: the object can be brought back (from the vault or the provider's trash).
	Restorable bool
}

// Quota is one source's storage use observed before or after the execution.
type Quota struct {
	SourceID   string
	Provider   svcv1.Provider
	UsedBytes  *int64
	LimitBytes *int64
	ObservedAt time.Time
}

// Charge is one metered usage charge of the execution.
type Charge struct {
	Meter        string
	Quantity     float64
	Unit         string
	Cents        int64
	UsageEventID string
}

// Restoration is how the execution can be undone. Whether it can (restoration.capable) is not
// an input: it is true exactly when some object is Restorable. Until and Method are written
// only then.
type Restoration struct {
	Until  *time.Time
	Method string // vault_to_original, vault_to_destination, provider_untrash, or a list of them joined by ","
}

// FromPlan returns an Input with the fields that come from the executed plan filled: plan id
// and authorized hash, tenant, actor, authorization (decision, grant, policy and rate card
// versions), intent and simulated. The engine adds ids, results, quotas, charges and times.
func FromPlan(p *svcv1.Plan) Input {
	in := Input{
		PlanID:    p.GetPlanId(),
		PlanHash:  p.GetHash(),
		TenantRef: p.GetTenantId(),
		Actor:     p.GetActor(),
		Intent:    p.GetIntent(),
		Simulated: p.GetSimulated(),
		Authorization: Authorization{
			GrantID:         p.GetActor().GetGrantId(),
			PolicyVersion:   p.GetPolicy().GetPolicyVersion(),
			RateCardVersion: p.GetMeter().GetRateCardVersion(),
		},
	}
	if a := p.GetAuthorization(); a != nil {
		in.PlanHash = a.GetPlanHashAtAuthorization()
		in.Authorization.ActionDecisionID = a.GetActionDecisionId()
		in.Authorization.CommercialAuthorizationID = a.GetCommercialAuthorizationId()
	}
	return in
}

// Build returns the unsigned receipt of in: every field of the spec filled, arrays in
// canonical order (objects by assetId, quotas by provider then sourceId, charges by meter then
// usageEventId, errors sorted), attempted/completed/failed and the byte totals derived from the
// objects. hash and signature are left empty (Sign fills them).
//
// Counters: attempted is the number of objects not Skipped; completed and failed count
// Completed and Failed objects (so attempted - completed - failed objects are Partial).
func Build(in *Input) (*svcv1.Receipt, error) {
	if err := check(in); err != nil {
		return nil, err
	}
	r := &svcv1.Receipt{
		ReceiptVersion:   Version,
		ReceiptId:        in.ReceiptID,
		ExecutionId:      in.ExecutionID,
		PlanId:           in.PlanID,
		PlanHash:         clean(in.PlanHash),
		TenantRef:        clean(in.TenantRef),
		Actor:            proto.Clone(in.Actor).(*svcv1.Actor),
		DelegatingUserId: in.Actor.DelegatingUserId,
		Authorization: &svcv1.ReceiptAuthorization{
			ActionDecisionId:          clean(in.Authorization.ActionDecisionID),
			GrantId:                   nullable(in.Authorization.GrantID),
			CommercialAuthorizationId: nullable(in.Authorization.CommercialAuthorizationID),
			PolicyVersion:             clean(in.Authorization.PolicyVersion),
			RateCardVersion:           nullable(in.Authorization.RateCardVersion),
		},
		Intent:      wire.EnumString(in.Intent.Descriptor(), in.Intent.Number()),
		Simulated:   in.Simulated,
		Objects:     make([]*svcv1.ReceiptObject, len(in.Objects)),
		Before:      quotas(in.Before),
		After:       quotas(in.After),
		Charges:     make([]*svcv1.Charge, len(in.Charges)),
		StartedAt:   timestamppb.New(in.StartedAt),
		FinishedAt:  timestamppb.New(in.FinishedAt),
		Restoration: &svcv1.Restoration{},
		Errors:      []string{},
	}
	if r.ReceiptId == "" {
		r.ReceiptId = id.NewAt("rcp", in.FinishedAt)
	}
	for i := range in.Objects {
		o := &in.Objects[i]
		ro := &svcv1.ReceiptObject{
			AssetId:          clean(o.AssetID),
			ProviderObjectId: clean(o.ProviderObjectID),
			Actions:          make([]string, len(o.Actions)),
			Status:           o.Status,
			VaultObjectId:    nullable(o.VaultObjectID),
			VaultSha256:      nullable(o.VaultSHA256),
			ProviderResultId: nullable(o.ProviderResultID),
			Bytes:            o.Bytes,
			Error:            nullable(o.Error),
			Restorable:       o.Restorable,
		}
		for j, a := range o.Actions {
			ro.Actions[j] = wire.EnumString(a.Descriptor(), a.Number())
		}
		r.Objects[i] = ro
		if o.Status != Skipped {
			r.Attempted++
		}
		switch o.Status {
		case Completed:
			r.Completed++
		case Failed:
			r.Failed++
		}
		if o.Preserved {
			r.BytesPreserved += o.Bytes
		}
		if o.Removed {
			r.BytesRemoved += o.Bytes
		}
		if o.Transferred {
			r.BytesTransferred += o.Bytes
		}
		if o.Restorable {
			r.Restoration.Capable = true
		}
	}
	slices.SortFunc(r.Objects, func(a, b *svcv1.ReceiptObject) int { return cmp.Compare(a.AssetId, b.AssetId) })
	for i, c := range in.Charges {
		r.Charges[i] = &svcv1.Charge{Meter: clean(c.Meter), Quantity: c.Quantity, Unit: clean(c.Unit), Cents: c.Cents, UsageEventId: clean(c.UsageEventID)}
	}
	slices.SortFunc(r.Charges, func(a, b *svcv1.Charge) int {
		return cmp.Or(cmp.Compare(a.Meter, b.Meter), cmp.Compare(a.UsageEventId, b.UsageEventId))
	})
	if in.MeasuredReclaimBytes != nil {
		r.MeasuredReclaimBytes = proto.Int64(*in.MeasuredReclaimBytes)
	} else {
		r.MeasuredReclaimBytes = measuredReclaim(in.Before, in.After)
	}
	if r.Restoration.Capable {
		if in.Restoration.Until != nil {
			r.Restoration.Until = timestamppb.New(*in.Restoration.Until)
		}
		r.Restoration.Method = nullable(in.Restoration.Method)
	}
	for _, e := range in.Errors {
		if e != "" {
			r.Errors = append(r.Errors, clean(e))
		}
	}
	slices.Sort(r.Errors)
	r.Errors = slices.Compact(r.Errors)
	return r, nil
}

func nullable(s string) *string {
	if s == "" {
		return nil
	}
	s = clean(s)
	return &s
}

// clean makes s valid UTF-8, as protobuf strings must be, replacing bad bytes with U+FFFD as
// the wire format writes them (so the hash does not change).
func clean(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		b.WriteRune(r) // utf8.RuneError (U+FFFD) for each bad byte
		i += n
	}
	return b.String()
}

func quotas(qs []Quota) []*svcv1.QuotaSnapshot {
	out := make([]*svcv1.QuotaSnapshot, len(qs))
	for i, q := range qs {
		out[i] = &svcv1.QuotaSnapshot{SourceId: clean(q.SourceID), Provider: q.Provider, ObservedAt: timestamppb.New(q.ObservedAt)}
		if q.UsedBytes != nil {
			out[i].UsedBytes = proto.Int64(*q.UsedBytes)
		}
		if q.LimitBytes != nil {
			out[i].LimitBytes = proto.Int64(*q.LimitBytes)
		}
	}
	slices.SortFunc(out, func(a, b *svcv1.QuotaSnapshot) int {
		return cmp.Or(cmp.Compare(providerName(a.Provider), providerName(b.Provider)), cmp.Compare(a.SourceId, b.SourceId))
	})
	return out
}

func providerName(p svcv1.Provider) string { return wire.EnumString(p.Descriptor(), p.Number()) }

// measuredReclaim is the sum over Before's sources of usedBytes before minus after, at least
// 0, or nil when some source lacks a usedBytes on either side (or there are no sources).
func measuredReclaim(before, after []Quota) *int64 {
	if len(before) == 0 {
		return nil
	}
	type key struct {
		p svcv1.Provider
		s string
	}
	afterUsed := map[key]*int64{}
	for _, q := range after {
		afterUsed[key{q.Provider, q.SourceID}] = q.UsedBytes
	}
	var sum int64
	for _, q := range before {
		a := afterUsed[key{q.Provider, q.SourceID}]
		if q.UsedBytes == nil || a == nil {
			return nil
		}
		sum += *q.UsedBytes - *a
	}
	return proto.Int64(max(sum, 0))
}

// maxSafe is the largest integer a JSON number (an IEEE double) holds exactly.
const maxSafe = 1<<53 - 1

func check(in *Input) error {
	bad := func(field, format string, args ...any) error {
		return fmt.Errorf("%w: %s: %s", ErrInvalidInput, field, fmt.Sprintf(format, args...))
	}
	if in.ReceiptID != "" && !id.Valid("rcp", in.ReceiptID) {
		return bad("receiptId", "%q is not an rcp_ id", in.ReceiptID)
	}
	if !id.Valid("exe", in.ExecutionID) {
		return bad("executionId", "%q is not an exe_ id", in.ExecutionID)
	}
	if !id.Valid("pln", in.PlanID) {
		return bad("planId", "%q is not a pln_ id", in.PlanID)
	}
	if in.PlanHash == "" {
		return bad("planHash", "missing")
	}
	if in.TenantRef == "" {
		return bad("tenantRef", "missing")
	}
	if in.Actor == nil || in.Actor.PrincipalId == "" || wire.EnumString(in.Actor.Type.Descriptor(), in.Actor.Type.Number()) == "" {
		return bad("actor", "missing, or without type or principalId")
	}
	if in.Authorization.ActionDecisionID == "" {
		return bad("authorization.actionDecisionId", "missing")
	}
	if in.Authorization.PolicyVersion == "" {
		return bad("authorization.policyVersion", "missing")
	}
	if wire.EnumString(in.Intent.Descriptor(), in.Intent.Number()) == "" {
		return bad("intent", "unset or unknown (%d)", in.Intent)
	}
	if in.StartedAt.IsZero() || in.FinishedAt.IsZero() {
		return bad("startedAt", "startedAt and finishedAt are required")
	}
	if in.FinishedAt.Before(in.StartedAt) {
		return bad("finishedAt", "before startedAt")
	}
	seen := make(map[string]bool, len(in.Objects))
	for i := range in.Objects {
		o := &in.Objects[i]
		f := fmt.Sprintf("objects[%d]", i)
		switch {
		case o.AssetID == "":
			return bad(f+".assetId", "missing")
		case seen[o.AssetID]:
			return bad(f+".assetId", "%s appears twice", o.AssetID)
		case o.ProviderObjectID == "":
			return bad(f+".providerObjectId", "missing")
		case len(o.Actions) == 0:
			return bad(f+".actions", "at least one action is required")
		case o.Status < Completed || o.Status > Skipped:
			return bad(f+".status", "unset or unknown (%d)", o.Status)
		case o.Bytes < 0 || o.Bytes > maxSafe:
			return bad(f+".bytes", "%d is out of range", o.Bytes)
		case o.VaultSHA256 != "" && !isSHA256(o.VaultSHA256):
			return bad(f+".vaultSha256", "%q is not a lowercase hex SHA-256", o.VaultSHA256)
		case o.Preserved && (o.VaultObjectID == "" || o.VaultSHA256 == ""):
			return bad(f+".vaultObjectId", "a preserved object needs its vault object id and SHA-256")
		case o.Status == Skipped && (o.Preserved || o.Removed || o.Transferred):
			return bad(f+".status", "a skipped object cannot have been preserved, removed or transferred")
		case (o.Status == Failed || o.Status == Partial) && o.Error == "":
			return bad(f+".error", "a failed or partial object must say what went wrong")
		}
		seen[o.AssetID] = true
		for j, a := range o.Actions {
			if wire.EnumString(a.Descriptor(), a.Number()) == "" {
				return bad(fmt.Sprintf("%s.actions[%d]", f, j), "unset or unknown (%d)", a)
			}
		}
	}
	for _, side := range []struct {
		name string
		qs   []Quota
	}{{"before", in.Before}, {"after", in.After}} {
		name, qs := side.name, side.qs
		type key struct {
			p svcv1.Provider
			s string
		}
		dup := map[key]bool{}
		for i, q := range qs {
			f := fmt.Sprintf("%s[%d]", name, i)
			switch {
			case q.SourceID == "":
				return bad(f+".sourceId", "missing")
			case providerName(q.Provider) == "":
				return bad(f+".provider", "unset or unknown (%d)", q.Provider)
			case q.UsedBytes != nil && (*q.UsedBytes < 0 || *q.UsedBytes > maxSafe):
				return bad(f+".usedBytes", "%d is out of range", *q.UsedBytes)
			case q.LimitBytes != nil && (*q.LimitBytes < 0 || *q.LimitBytes > maxSafe):
				return bad(f+".limitBytes", "%d is out of range", *q.LimitBytes)
			case q.ObservedAt.IsZero():
				return bad(f+".observedAt", "missing")
			case dup[key{q.Provider, q.SourceID}]:
				return bad(f+".sourceId", "%s appears twice", q.SourceID)
			}
			dup[key{q.Provider, q.SourceID}] = true
		}
	}
	if m := in.MeasuredReclaimBytes; m != nil && (*m < 0 || *m > maxSafe) {
		return bad("measuredReclaimBytes", "%d is out of range", *m)
	}
	for i, c := range in.Charges {
		f := fmt.Sprintf("charges[%d]", i)
		switch {
		case c.Meter == "":
			return bad(f+".meter", "missing")
		case c.Unit == "":
			return bad(f+".unit", "missing")
		case c.UsageEventID == "":
			return bad(f+".usageEventId", "missing")
		case c.Quantity < 0 || math.IsNaN(c.Quantity) || math.IsInf(c.Quantity, 0):
			return bad(f+".quantity", "%v is not a non-negative number", c.Quantity)
		case c.Cents < 0 || c.Cents > maxSafe:
			return bad(f+".cents", "%d is out of range", c.Cents)
		}
	}
	return nil
}

func isSHA256(s string) bool {
	if len(s) != 64 {
		return false
	}
	for i := range len(s) {
		if c := s[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}
