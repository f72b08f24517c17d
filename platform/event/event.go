package event

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/id"
)

// Plans (source /v1/plans, subject pln_).
const (
	// PlanCreated: a plan was built from a source listing (state draft or validated).
	PlanCreated = "svc.plan.created"
	// PlanAuthorized: a plan's hash was authorized; it can be executed.
	PlanAuthorized = "svc.plan.authorized"
	// PlanRejected: a plan was rejected by policy or by an approver.
	PlanRejected = "svc.plan.rejected"
	// PlanCancelled: a plan was cancelled before it ran.
	PlanCancelled = "svc.plan.cancelled"
	// PlanStale: a provider revision marker or an object's expected version moved; the plan
	// needs rebuilding and fresh authorization.
	PlanStale = "svc.plan.stale"
	// PlanExpired: an authorized plan was not executed in time.
	PlanExpired = "svc.plan.expired"
	// PlanExecuted: every object of the plan was acted on.
	PlanExecuted = "svc.plan.executed"
	// PlanPartiallyExecuted: the plan's execution ended with some objects skipped or failed.
	PlanPartiallyExecuted = "svc.plan.partially_executed"
)

// Executions (source /v1/executions, subject exe_).
const (
	// ExecutionStarted: an execution left the queue and is acting on assets.
	ExecutionStarted = "svc.execution.started"
	// ExecutionCancelRequested: cancellation was asked for; the execution stops after the
	// steps in flight (svc.execution.cancelled follows).
	ExecutionCancelRequested = "svc.execution.cancel_requested"
	// ExecutionCompleted: every asset reached its final state; a receipt follows.
	ExecutionCompleted = "svc.execution.completed"
	// ExecutionPartiallyCompleted: the execution ended with some assets skipped or failed.
	ExecutionPartiallyCompleted = "svc.execution.partially_completed"
	// ExecutionFailed: the execution stopped on an error; a receipt records what was done.
	ExecutionFailed = "svc.execution.failed"
	// ExecutionCancelled: the execution stopped after a cancellation.
	ExecutionCancelled = "svc.execution.cancelled"
)

// Receipts (source /v1/receipts, subject rcp_).
const (
	// ReceiptCreated: an execution's signed receipt is available at GET /v1/receipts/{id}.
	ReceiptCreated = "svc.receipt.created"
)

// Jobs (source /v1/jobs, subject job_).
const (
	// JobStarted: a job (scan, export, reconcile, index, migration, deletion, seed) is running.
	JobStarted = "svc.job.started"
	// JobSucceeded: a job finished; its result is on the job (the account export is awaited
	// this way).
	JobSucceeded = "svc.job.succeeded"
	// JobFailed: a job ended with an error.
	JobFailed = "svc.job.failed"
	// JobCancelled: a job was cancelled.
	JobCancelled = "svc.job.cancelled"
)

// Sources (source /v1/sources, subject src_).
const (
	// SourceConnected: a provider account was connected (or reconnected after reauth).
	SourceConnected = "svc.source.connected"
	// SourceReauthRequired: the provider refused the stored credentials; the user must
	// reconnect before plans or executions can use the source.
	SourceReauthRequired = "svc.source.reauth_required"
	// SourceRevoked: access was revoked at the provider or by the user.
	SourceRevoked = "svc.source.revoked"
	// SourceDisconnected: the source was disconnected from svc.
	SourceDisconnected = "svc.source.disconnected"
	// SourcePolicyUpdated: the source's policy changed (PUT /v1/sources/{id}/policy).
	SourcePolicyUpdated = "svc.source.policy_updated"
)

// Vault (source /v1/vault/objects, subject vlt_).
const (
	// VaultObjectCommitted: content was stored, re-read and its SHA-256 verified.
	VaultObjectCommitted = "svc.vault.object.committed"
	// VaultObjectCorrupt: a stored object failed verification.
	VaultObjectCorrupt = "svc.vault.object.corrupt"
	// VaultObjectDeleted: a vault object was deleted.
	VaultObjectDeleted = "svc.vault.object.deleted"
)

// Meters, billing-trap detection (source /v1/intel/meters, subject mtr_).
const (
	// MeterDetected: a new billing trap was detected from evidence.
	MeterDetected = "svc.meter.detected"
	// MeterUpdated: a meter's usage, cost projection or evidence changed.
	MeterUpdated = "svc.meter.updated"
	// MeterThresholdProjected: the projected period cost will cross the next threshold
	// (projectedThresholdAt).
	MeterThresholdProjected = "svc.meter.threshold_projected"
	// MeterActionTaken: an action (watch, set_limit, explain, ignore, intervene) was recorded.
	MeterActionTaken = "svc.meter.action_taken"
)

// Trials (source /v1/intel/trials, subject trl_).
const (
	// TrialDetected: a trial subscription was found.
	TrialDetected = "svc.trial.detected"
	// TrialEndingSoon: a trial converts to a paid plan soon and no decision was made.
	TrialEndingSoon = "svc.trial.ending_soon"
	// TrialDecided: a keep, stop or remind decision was recorded.
	TrialDecided = "svc.trial.decided"
	// TrialReminder: a reminder asked for with remind_at is due.
	TrialReminder = "svc.trial.reminder"
)

// Creator revenue anomalies (source /v1/creator/anomalies, subject ano_).
const (
	// CreatorAnomalyDetected: a longitudinal anomaly (late payout, fee change, ...) was opened.
	CreatorAnomalyDetected = "svc.creator.anomaly.detected"
	// CreatorAnomalyResolved: an anomaly was resolved.
	CreatorAnomalyResolved = "svc.creator.anomaly.resolved"
	// CreatorAnomalyDismissed: an anomaly was dismissed.
	CreatorAnomalyDismissed = "svc.creator.anomaly.dismissed"
)

// Usage and the spending ceiling, live mode only (source /v1/usage, subject the app_ or org_
// whose usage it is).
const (
	// UsageCeilingApproaching: month-to-date spend passed 80% of the spending ceiling.
	UsageCeilingApproaching = "svc.usage.ceiling_approaching"
	// UsageCeilingReached: month-to-date spend reached the ceiling; billable operations are
	// refused until it is raised (ceiling_increase) or the month ends.
	UsageCeilingReached = "svc.usage.ceiling_reached"
	// UsageCeilingChanged: the ceiling was changed (PUT /v1/authorization/ceiling).
	UsageCeilingChanged = "svc.usage.ceiling_changed"
)

// Connections (source /v1/connections, subject cxn_).
const (
	// ConnectionCreated: an end user approved a connect session; the connection and its
	// grant exist.
	ConnectionCreated = "svc.connection.created"
	// ConnectionRevoked: the end user or the application revoked the connection.
	ConnectionRevoked = "svc.connection.revoked"
)

// Webhooks (source /v1/webhooks, subject whk_).
const (
	// WebhookTest: sent by POST /v1/webhooks/{id}/test to that webhook only, whatever its
	// event_types.
	WebhookTest = "svc.webhook.test"
	// WebhookDisabled: a webhook was disabled because its deliveries failed for 3 days (the
	// disabled webhook itself does not receive it; the application's other webhooks and
	// GET /v1/events do).
	WebhookDisabled = "svc.webhook.disabled"
)

// Info describes one event type.
type Info struct {
	Type string
	// Source is the event's CloudEvents source: the API path of the collection the subject
	// belongs to ("/v1/plans").
	Source string
	// SubjectPrefix is the id prefix of the subject ("pln"), or "" when several kinds of id
	// can be the subject.
	SubjectPrefix string
	// Family groups types for documentation ("Plans").
	Family string
	// Description says when the event is emitted.
	Description string
}

var catalogue = []Info{
	{PlanCreated, "/v1/plans", "pln", "Plans", "a plan was built from a source listing (state draft or validated)"},
	{PlanAuthorized, "/v1/plans", "pln", "Plans", "a plan's hash was authorized; it can be executed"},
	{PlanRejected, "/v1/plans", "pln", "Plans", "a plan was rejected by policy or by an approver"},
	{PlanCancelled, "/v1/plans", "pln", "Plans", "a plan was cancelled before it ran"},
	{PlanStale, "/v1/plans", "pln", "Plans", "a provider revision marker or expected version moved; rebuild and authorize again"},
	{PlanExpired, "/v1/plans", "pln", "Plans", "an authorized plan was not executed in time"},
	{PlanExecuted, "/v1/plans", "pln", "Plans", "every object of the plan was acted on"},
	{PlanPartiallyExecuted, "/v1/plans", "pln", "Plans", "the plan's execution ended with some objects skipped or failed"},

	{ExecutionStarted, "/v1/executions", "exe", "Executions", "an execution left the queue and is acting on assets"},
	{ExecutionCancelRequested, "/v1/executions", "exe", "Executions", "cancellation was asked for; svc.execution.cancelled follows"},
	{ExecutionCompleted, "/v1/executions", "exe", "Executions", "every asset reached its final state; a receipt follows"},
	{ExecutionPartiallyCompleted, "/v1/executions", "exe", "Executions", "the execution ended with some assets skipped or failed"},
	{ExecutionFailed, "/v1/executions", "exe", "Executions", "the execution stopped on an error"},
	{ExecutionCancelled, "/v1/executions", "exe", "Executions", "the execution stopped after a cancellation"},

	{ReceiptCreated, "/v1/receipts", "rcp", "Receipts", "an execution's signed receipt is available"},

	{JobStarted, "/v1/jobs", "job", "Jobs", "a job is running"},
	{JobSucceeded, "/v1/jobs", "job", "Jobs", "a job finished (the account export is awaited this way)"},
	{JobFailed, "/v1/jobs", "job", "Jobs", "a job ended with an error"},
	{JobCancelled, "/v1/jobs", "job", "Jobs", "a job was cancelled"},

	{SourceConnected, "/v1/sources", "src", "Sources", "a provider account was connected or reconnected"},
	{SourceReauthRequired, "/v1/sources", "src", "Sources", "the provider refused the stored credentials; the user must reconnect"},
	{SourceRevoked, "/v1/sources", "src", "Sources", "access was revoked at the provider or by the user"},
	{SourceDisconnected, "/v1/sources", "src", "Sources", "the source was disconnected from svc"},
	{SourcePolicyUpdated, "/v1/sources", "src", "Sources", "the source's policy changed"},

	{VaultObjectCommitted, "/v1/vault/objects", "vlt", "Vault", "content was stored, re-read and its SHA-256 verified"},
	{VaultObjectCorrupt, "/v1/vault/objects", "vlt", "Vault", "a stored object failed verification"},
	{VaultObjectDeleted, "/v1/vault/objects", "vlt", "Vault", "a vault object was deleted"},

	{MeterDetected, "/v1/intel/meters", "mtr", "Meters", "a new billing trap was detected from evidence"},
	{MeterUpdated, "/v1/intel/meters", "mtr", "Meters", "a meter's usage, cost projection or evidence changed"},
	{MeterThresholdProjected, "/v1/intel/meters", "mtr", "Meters", "the projected period cost will cross the next threshold"},
	{MeterActionTaken, "/v1/intel/meters", "mtr", "Meters", "an action was recorded on a meter"},

	{TrialDetected, "/v1/intel/trials", "trl", "Trials", "a trial subscription was found"},
	{TrialEndingSoon, "/v1/intel/trials", "trl", "Trials", "a trial converts to paid soon and no decision was made"},
	{TrialDecided, "/v1/intel/trials", "trl", "Trials", "a keep, stop or remind decision was recorded"},
	{TrialReminder, "/v1/intel/trials", "trl", "Trials", "a reminder asked for with remind_at is due"},

	{CreatorAnomalyDetected, "/v1/creator/anomalies", "ano", "Creator anomalies", "a revenue anomaly was opened"},
	{CreatorAnomalyResolved, "/v1/creator/anomalies", "ano", "Creator anomalies", "an anomaly was resolved"},
	{CreatorAnomalyDismissed, "/v1/creator/anomalies", "ano", "Creator anomalies", "an anomaly was dismissed"},

	{UsageCeilingApproaching, "/v1/usage", "", "Usage", "live month-to-date spend passed 80% of the spending ceiling"},
	{UsageCeilingReached, "/v1/usage", "", "Usage", "live month-to-date spend reached the ceiling; billable operations are refused"},
	{UsageCeilingChanged, "/v1/usage", "", "Usage", "the spending ceiling was changed"},

	{ConnectionCreated, "/v1/connections", "cxn", "Connections", "an end user approved a connect session"},
	{ConnectionRevoked, "/v1/connections", "cxn", "Connections", "a connection was revoked"},

	{WebhookTest, "/v1/webhooks", "whk", "Webhooks", "sent by POST /v1/webhooks/{id}/test to that webhook only"},
	{WebhookDisabled, "/v1/webhooks", "whk", "Webhooks", "a webhook was disabled after its deliveries failed for 3 days"},
}

var byType = func() map[string]Info {
	m := make(map[string]Info, len(catalogue))
	for _, in := range catalogue {
		if _, dup := m[in.Type]; dup {
			panic("event: duplicate type " + in.Type)
		}
		m[in.Type] = in
	}
	return m
}()

// Catalogue returns every event type, grouped by family, in documentation order.
func Catalogue() []Info { return append([]Info(nil), catalogue...) }

// Lookup returns the catalogue entry of an event type.
func Lookup(typ string) (Info, bool) {
	in, ok := byType[typ]
	return in, ok
}

// ErrUnknownType is returned when an event type, or a subscription pattern, names no type of
// the catalogue.
var ErrUnknownType = errors.New("unknown event type")

// Match reports whether the event type typ is selected by pattern: "*" selects every type,
// a pattern ending in ".*" selects the types below that prefix at any depth ("svc.vault.*"
// selects svc.vault.object.committed), anything else selects the type of that exact name.
func Match(pattern, typ string) bool {
	if pattern == "*" {
		return true
	}
	if prefix, ok := strings.CutSuffix(pattern, "*"); ok && strings.HasSuffix(prefix, ".") {
		return strings.HasPrefix(typ, prefix)
	}
	return pattern == typ
}

// MatchAny reports whether any of the patterns selects typ.
func MatchAny(patterns []string, typ string) bool {
	for _, p := range patterns {
		if Match(p, typ) {
			return true
		}
	}
	return false
}

// ValidPattern checks a subscription pattern: "*", a type of the catalogue, or a prefix
// ending in ".*" that selects at least one type of the catalogue. Unknown names are refused
// so that a typo does not silently subscribe to nothing.
func ValidPattern(pattern string) error {
	if pattern == "*" {
		return nil
	}
	if strings.HasSuffix(pattern, "*") && !strings.HasSuffix(pattern, ".*") {
		return fmt.Errorf("%w: %q (a wildcard must follow a dot, as in svc.plan.*)", ErrUnknownType, pattern)
	}
	if strings.Count(pattern, "*") > 1 || strings.Contains(strings.TrimSuffix(pattern, "*"), "*") {
		return fmt.Errorf("%w: %q (only a trailing .* wildcard is supported)", ErrUnknownType, pattern)
	}
	for _, in := range catalogue {
		if Match(pattern, in.Type) {
			return nil
		}
	}
	return fmt.Errorf("%w: %q", ErrUnknownType, pattern)
}

// New returns the envelope of an event of a catalogue type about subject (the primary
// resource's id), at time at, with a fresh evt_ id. simulated is true for test-mode events
// (svcsimulated). data must be JSON-like: nil, bool, numbers, strings, []any and
// map[string]any (structpb.NewValue's rules).
func New(typ, subject string, data map[string]any, simulated bool, at time.Time) (*svcv1.Event, error) {
	in, ok := byType[typ]
	if !ok {
		return nil, fmt.Errorf("%w: %q", ErrUnknownType, typ)
	}
	if subject == "" {
		return nil, fmt.Errorf("event %s: subject is required", typ)
	}
	if in.SubjectPrefix != "" && !id.Valid(in.SubjectPrefix, subject) {
		return nil, fmt.Errorf("event %s: subject %q is not a %s_ id", typ, subject, in.SubjectPrefix)
	}
	d, err := structpb.NewStruct(data)
	if err != nil {
		return nil, fmt.Errorf("event %s data: %w", typ, err)
	}
	at = at.UTC().Truncate(time.Millisecond)
	return &svcv1.Event{
		Specversion:     "1.0",
		Id:              id.NewAt("evt", at),
		Source:          in.Source,
		Type:            typ,
		Time:            timestamppb.New(at),
		Subject:         subject,
		Datacontenttype: "application/json",
		Data:            d,
		Svcsimulated:    simulated,
	}, nil
}
