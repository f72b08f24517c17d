package plan_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/mail"
	"svc.dev/svc/plan"
)

var now = time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)

// pages is an in-memory listing served in pages of size n.
type pages struct {
	objs   []plan.Object
	n, at  int
	marker plan.Marker
}

func (p *pages) Next(context.Context) (plan.Page, error) {
	end := min(p.at+p.n, len(p.objs))
	pg := plan.Page{Objects: p.objs[p.at:end], Last: end == len(p.objs)}
	p.at = end
	if pg.Last {
		pg.Marker = p.marker
	}
	return pg, nil
}

func source(id string, objs ...plan.Object) plan.Source {
	return plan.Source{ID: id, Provider: svcv1.Provider_PROVIDER_SIMULATED, Status: svcv1.SourceStatus_SOURCE_STATUS_CONNECTED,
		CanTrash: true, CanWrite: true, Objects: &pages{objs: objs, n: 2, marker: plan.Marker{Kind: "history_id", Value: "h1"}},
		Quota: &plan.Quota{UsedBytes: 10 << 30, LimitBytes: 15 << 30}}
}

func request(pol *svcv1.SourcePolicy, objs ...plan.Object) plan.Request {
	return plan.Request{TenantID: "live:usr_01JD0000000000000000000000", UserID: "usr_01JD0000000000000000000000",
		Actor:  &svcv1.Actor{Type: svcv1.ActorType_ACTOR_TYPE_USER, PrincipalId: "usr_01JD0000000000000000000000"},
		Intent: svcv1.PlanIntent_PLAN_INTENT_SVC, Sources: []plan.Source{source("src_01JD0000000000000000000000", objs...)},
		Policy: pol, PreservationRequired: true, Now: now}
}

func build(t *testing.T, req plan.Request) *svcv1.Plan {
	t.Helper()
	p, err := plan.Build(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// one builds a plan over a single object and returns its class and actions, or the exclusion.
func one(t *testing.T, pol *svcv1.SourcePolicy, o plan.Object) (svcv1.StorageClass, []svcv1.PlanAction, svcv1.ExclusionReason) {
	t.Helper()
	p := build(t, request(pol, o))
	if len(p.Excluded) == 1 {
		return 0, nil, p.Excluded[0].Reason
	}
	if len(p.Objects) != 1 {
		t.Fatalf("plan has %d objects and %d exclusions", len(p.Objects), len(p.Excluded))
	}
	return p.Objects[0].StorageClass, p.Objects[0].Actions, 0
}

func obj(mut func(*plan.Object)) plan.Object {
	o := plan.Object{ID: "m1", Version: "v1", Kind: "message", Name: "Hello", SizeBytes: 50_000, MIMEType: "message/rfc822",
		CreatedAt: now.AddDate(0, -2, 0), ModifiedAt: now.AddDate(0, -2, 0), From: "News <digest@news.example.com>", Subject: "Weekly digest"}
	if mut != nil {
		mut(&o)
	}
	return o
}

func i64(n int64) *int64 { return &n }

// bulk marks a message as sent in bulk (Precedence: bulk): with List-Unsubscribe, marketing.
var bulk = map[string]string{"mail.precedence": "bulk"}

// Every Source policy field changes the outcome for some object.
func TestPolicyFields(t *testing.T) {
	P := svcv1.PlanAction_PLAN_ACTION_PRESERVE
	T := svcv1.PlanAction_PLAN_ACTION_TRASH
	N := svcv1.PlanAction_PLAN_ACTION_NOOP
	cases := []struct {
		name   string
		pol    *svcv1.SourcePolicy
		o      plan.Object
		class  svcv1.StorageClass
		acts   []svcv1.PlanAction
		reason svcv1.ExclusionReason
	}{
		{"minAgeDays keeps young objects", &svcv1.SourcePolicy{MinAgeDays: i64(90)}, obj(nil), svcv1.StorageClass_STORAGE_CLASS_RECENT, []svcv1.PlanAction{P}, 0},
		{"minAgeDays passes old objects", &svcv1.SourcePolicy{MinAgeDays: i64(30)}, obj(nil), svcv1.StorageClass_STORAGE_CLASS_LIKELY_REMOVABLE, []svcv1.PlanAction{P, T}, 0},
		{"minSizeBytes keeps small objects", &svcv1.SourcePolicy{MinSizeBytes: i64(100_000)}, obj(nil), svcv1.StorageClass_STORAGE_CLASS_REVIEW, []svcv1.PlanAction{P}, 0},
		{"minSizeBytes passes large objects", &svcv1.SourcePolicy{MinSizeBytes: i64(10_000)}, obj(nil), svcv1.StorageClass_STORAGE_CLASS_LIKELY_REMOVABLE, []svcv1.PlanAction{P, T}, 0},
		{"excludeSenders", &svcv1.SourcePolicy{ExcludeSenders: []string{"DIGEST@news.example.com"}}, obj(nil), 0, nil, svcv1.ExclusionReason_EXCLUSION_REASON_POLICY_EXCLUSION},
		{"excludeDomains matches subdomains", &svcv1.SourcePolicy{ExcludeDomains: []string{"example.com"}}, obj(nil), 0, nil, svcv1.ExclusionReason_EXCLUSION_REASON_POLICY_EXCLUSION},
		{"excludeDomains does not match suffixes", &svcv1.SourcePolicy{ExcludeDomains: []string{"ample.com"}}, obj(nil), svcv1.StorageClass_STORAGE_CLASS_REVIEW, []svcv1.PlanAction{P}, 0},
		{"excludeLabels", &svcv1.SourcePolicy{ExcludeLabels: []string{"work"}}, obj(func(o *plan.Object) { o.Containers = []string{"Work"} }), 0, nil, svcv1.ExclusionReason_EXCLUSION_REASON_POLICY_EXCLUSION},
		{"excludeFolders by path", &svcv1.SourcePolicy{ExcludeFolders: []string{"/Taxes/"}}, obj(func(o *plan.Object) { o.Kind, o.Path = "file", "Taxes/2024/return.pdf" }), 0, nil, svcv1.ExclusionReason_EXCLUSION_REASON_POLICY_EXCLUSION},
		{"excludeFolders not a prefix of a name", &svcv1.SourcePolicy{ExcludeFolders: []string{"Tax"}}, obj(func(o *plan.Object) { o.Kind, o.Path = "file", "Taxes/return.pdf" }), svcv1.StorageClass_STORAGE_CLASS_REVIEW, []svcv1.PlanAction{P}, 0},
		{"excludeStarred", &svcv1.SourcePolicy{ExcludeStarred: proto.Bool(true)}, obj(func(o *plan.Object) { o.Starred = true }), 0, nil, svcv1.ExclusionReason_EXCLUSION_REASON_PROTECTED_BY_RULE},
		{"starred without excludeStarred is protected", nil, obj(func(o *plan.Object) { o.Starred = true }), svcv1.StorageClass_STORAGE_CLASS_PROTECTED_BY_RULE, []svcv1.PlanAction{P}, 0},
		{"excludeShared", &svcv1.SourcePolicy{ExcludeShared: proto.Bool(true)}, obj(func(o *plan.Object) { o.Shared = true }), 0, nil, svcv1.ExclusionReason_EXCLUSION_REASON_SHARED},
		{"excludeRecentDays", &svcv1.SourcePolicy{ExcludeRecentDays: i64(90)}, obj(nil), 0, nil, svcv1.ExclusionReason_EXCLUSION_REASON_RECENT},
		{"preserveMimeTypes with a wildcard", &svcv1.SourcePolicy{PreserveMimeTypes: []string{"image/*"}, MinAgeDays: i64(1)}, obj(func(o *plan.Object) { o.MIMEType = "image/png" }), svcv1.StorageClass_STORAGE_CLASS_PRESERVE, []svcv1.PlanAction{P}, 0},
		{"preserveKeywords", &svcv1.SourcePolicy{PreserveKeywords: []string{"DIGEST"}, MinAgeDays: i64(1)}, obj(nil), svcv1.StorageClass_STORAGE_CLASS_PRESERVE, []svcv1.PlanAction{P}, 0},
		{"promotional is kept by default", nil, obj(func(o *plan.Object) { o.ListUnsubscribe, o.Facts = "<mailto:u@x>", bulk }), svcv1.StorageClass_STORAGE_CLASS_PROMOTIONAL, []svcv1.PlanAction{P}, 0},
		{"removePromotional", &svcv1.SourcePolicy{RemovePromotional: proto.Bool(true)}, obj(func(o *plan.Object) { o.ListUnsubscribe, o.Facts = "<mailto:u@x>", bulk }), svcv1.StorageClass_STORAGE_CLASS_PROMOTIONAL, []svcv1.PlanAction{P, T}, 0},
		{"sourceAction none never trashes", &svcv1.SourcePolicy{MinAgeDays: i64(1), SourceAction: svcv1.SourceAction_SOURCE_ACTION_NONE.Enum()}, obj(nil), svcv1.StorageClass_STORAGE_CLASS_LIKELY_REMOVABLE, []svcv1.PlanAction{P}, 0},
		{"vault_preserve_class_only keeps no copy of what stays", &svcv1.SourcePolicy{Preservation: svcv1.PreservationMode_PRESERVATION_MODE_VAULT_PRESERVE_CLASS_ONLY.Enum()}, obj(nil), svcv1.StorageClass_STORAGE_CLASS_REVIEW, []svcv1.PlanAction{N}, 0},
		{"large attachment", nil, obj(func(o *plan.Object) { o.SizeBytes = 25 << 20 }), svcv1.StorageClass_STORAGE_CLASS_LARGE_ATTACHMENT, []svcv1.PlanAction{P, T}, 0},
		{"cold", nil, obj(func(o *plan.Object) { o.ModifiedAt = now.AddDate(-2, 0, 0) }), svcv1.StorageClass_STORAGE_CLASS_COLD, []svcv1.PlanAction{P, T}, 0},
		{"folders are not planned", nil, obj(func(o *plan.Object) { o.Kind = "folder" }), 0, nil, svcv1.ExclusionReason_EXCLUSION_REASON_UNSUPPORTED_CAPABILITY},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			class, acts, reason := one(t, c.pol, c.o)
			if class != c.class || !slices.Equal(acts, c.acts) || reason != c.reason {
				t.Fatalf("got %v %v %v, want %v %v %v", class, acts, reason, c.class, c.acts, c.reason)
			}
		})
	}
}

func TestDuplicateHandling(t *testing.T) {
	dup := func(id string, months int) plan.Object {
		return obj(func(o *plan.Object) {
			o.ID, o.SHA256, o.SizeBytes = id, "aa", 1000
			o.ModifiedAt = now.AddDate(0, -months, 0)
		})
	}
	objs := []plan.Object{dup("old", 5), dup("new", 1), dup("mid", 3)}
	classes := func(h svcv1.DuplicateHandling) map[string]svcv1.StorageClass {
		p := build(t, request(&svcv1.SourcePolicy{DuplicateHandling: h.Enum()}, objs...))
		out := map[string]svcv1.StorageClass{}
		for _, o := range p.Objects {
			out[o.ProviderObjectId] = o.StorageClass
		}
		return out
	}
	D, R := svcv1.StorageClass_STORAGE_CLASS_DUPLICATE, svcv1.StorageClass_STORAGE_CLASS_REVIEW
	if got := classes(svcv1.DuplicateHandling_DUPLICATE_HANDLING_KEEP_NEWEST); got["new"] != R || got["old"] != D || got["mid"] != D {
		t.Errorf("keep_newest: %v", got)
	}
	if got := classes(svcv1.DuplicateHandling_DUPLICATE_HANDLING_KEEP_OLDEST); got["old"] != R || got["new"] != D || got["mid"] != D {
		t.Errorf("keep_oldest: %v", got)
	}
	if got := classes(svcv1.DuplicateHandling_DUPLICATE_HANDLING_REVIEW); got["old"] != R || got["new"] != R || got["mid"] != R {
		t.Errorf("review: %v", got)
	}
}

// The same message delivered twice is a duplicate however its copies differ in bytes (a list
// footer, other Received lines): by Message-ID and sender, across folders and sources, under
// the policy's duplicateHandling. A reused Message-ID from another sender is not a copy, and a
// conversation keeps one copy: the owner's sent one.
func TestDuplicateMessagesByMessageID(t *testing.T) {
	msg := func(id, sha, from, mid string, months int, containers ...string) plan.Object {
		return message(from, "Re: the plan", map[string]string{mail.FactMessageID: mid}, func(o *plan.Object) {
			o.ID, o.SHA256, o.Containers, o.To = id, sha, containers, []string{"me@home.example"}
			o.ModifiedAt = now.AddDate(0, -months, 0)
		})
	}
	a := source("src_01JD0000000000000000000000",
		msg("inbox", "s1", "Ann <ann@x.example>", "m1@x.example", 5, "INBOX"),
		msg("reused", "s9", "Bob <bob@y.example>", "m1@x.example", 4, "INBOX"),
		msg("sent", "s4", "Me <me@home.example>", "m2@home.example", 6, "Sent"),
		msg("self-copy", "s5", "Me <me@home.example>", "m2@home.example", 6, "INBOX"))
	b := source("src_01JD0000000000000000000001",
		msg("archive", "s2", "ann@x.example", "<m1@x.example>", 3, "Archive"),
		msg("list-copy", "s3", "Ann <ann@x.example>", "m1@x.example", 1, "Lists"))
	classes := func(h svcv1.DuplicateHandling) map[string]string {
		req := request(&svcv1.SourcePolicy{DuplicateHandling: h.Enum()})
		req.Sources = []plan.Source{a, b}
		for i := range req.Sources {
			req.Sources[i].Objects.(*pages).at = 0
		}
		p := build(t, req)
		out := map[string]string{}
		for _, o := range p.Objects {
			out[o.ProviderObjectId] = strings.TrimPrefix(o.StorageClass.String(), "STORAGE_CLASS_") + ": " + o.StorageClassReason
		}
		return out
	}
	want := func(got map[string]string, id, prefix string) {
		t.Helper()
		if !strings.HasPrefix(got[id], prefix) {
			t.Errorf("%s: %q, want %q", id, got[id], prefix)
		}
	}
	got := classes(svcv1.DuplicateHandling_DUPLICATE_HANDLING_KEEP_OLDEST)
	want(got, "inbox", "REVIEW")
	want(got, "archive", "DUPLICATE: another copy of the same message (Message-ID) is kept")
	want(got, "list-copy", "DUPLICATE")
	want(got, "reused", "REVIEW")
	want(got, "sent", "PROTECTED_BY_RULE: conversation: you sent it")
	want(got, "self-copy", "DUPLICATE")
	got = classes(svcv1.DuplicateHandling_DUPLICATE_HANDLING_KEEP_NEWEST)
	want(got, "list-copy", "REVIEW")
	want(got, "inbox", "DUPLICATE")
	got = classes(svcv1.DuplicateHandling_DUPLICATE_HANDLING_REVIEW)
	want(got, "inbox", "REVIEW: one of several copies")
	want(got, "list-copy", "REVIEW: one of several copies")
}

func TestIntents(t *testing.T) {
	promo := obj(func(o *plan.Object) { o.ID, o.ListUnsubscribe, o.ListUnsubscribePost = "p", "<https://x/u>", true })
	plain := obj(func(o *plan.Object) { o.ID = "q" })
	dest := &svcv1.Destination{DestinationId: "dst_01JD0000000000000000000000", Provider: svcv1.Provider_PROVIDER_OBJECT_STORE_COMPATIBLE, Label: "Archive"}
	for _, c := range []struct {
		intent svcv1.PlanIntent
		dest   *svcv1.Destination
		want   map[string][]svcv1.PlanAction
	}{
		{svcv1.PlanIntent_PLAN_INTENT_RESCUE, nil, map[string][]svcv1.PlanAction{"p": {1}, "q": {1}}},
		{svcv1.PlanIntent_PLAN_INTENT_EXPORT, dest, map[string][]svcv1.PlanAction{"p": {1, 4}, "q": {1, 4}}},
		{svcv1.PlanIntent_PLAN_INTENT_MIGRATE, dest, map[string][]svcv1.PlanAction{"p": {1, 5}, "q": {1, 5}}},
		{svcv1.PlanIntent_PLAN_INTENT_UNSUBSCRIBE, nil, map[string][]svcv1.PlanAction{"p": {6}}},
	} {
		req := request(nil, promo, plain)
		req.Intent, req.Destination = c.intent, c.dest
		p := build(t, req)
		got := map[string][]svcv1.PlanAction{}
		for _, o := range p.Objects {
			got[o.ProviderObjectId] = o.Actions
		}
		if len(got) != len(c.want) {
			t.Fatalf("%v: %v", c.intent, got)
		}
		for k, v := range c.want {
			if !slices.Equal(got[k], v) {
				t.Errorf("%v %s: %v, want %v", c.intent, k, got[k], v)
			}
		}
	}
	req := request(nil, plain)
	req.Intent = svcv1.PlanIntent_PLAN_INTENT_EXPORT
	if _, err := plan.Build(context.Background(), req); !errors.Is(err, plan.ErrInvalid) {
		t.Fatalf("export without destination: %v", err)
	}
	// A provider that cannot trash: removable objects are excluded, not planned.
	req = request(&svcv1.SourcePolicy{MinAgeDays: i64(1)}, plain)
	req.Sources[0].CanTrash = false
	if p := build(t, req); len(p.Excluded) != 1 || p.Excluded[0].Reason != svcv1.ExclusionReason_EXCLUSION_REASON_UNSUPPORTED_CAPABILITY {
		t.Fatalf("no trash capability: %v", p.Excluded)
	}
}

func TestProjectionAndMarkers(t *testing.T) {
	objs := []plan.Object{
		obj(func(o *plan.Object) { o.ID, o.SizeBytes = "a", 3<<30 }),
		obj(func(o *plan.Object) { o.ID, o.SizeBytes = "b", 1<<30 }),
		obj(func(o *plan.Object) { o.ID, o.SizeBytes, o.Starred = "c", 1<<30, true }),
	}
	p := build(t, request(&svcv1.SourcePolicy{MinAgeDays: i64(7)}, objs...))
	pr := p.Projection
	if pr.ObjectCount != 3 || pr.BytesToPreserve != 5<<30 || pr.BytesToRemove != 4<<30 || pr.ProjectedReclaimBytes != 4<<30 || pr.BytesToTransfer != 0 {
		t.Fatalf("projection %v", pr)
	}
	q := pr.ProjectedQuota[0]
	if q.UsedBytesAfter != 6<<30 || q.GetLimitBytes() != 15<<30 || q.GetPercentAfter() != 40 {
		t.Fatalf("quota %v", q)
	}
	if len(p.SourceMarkers) != 1 || p.SourceMarkers[0].Value != "h1" || p.SourceMarkers[0].Kind != svcv1.SourceMarkerKind_SOURCE_MARKER_KIND_HISTORY_ID {
		t.Fatalf("markers %v", p.SourceMarkers)
	}
	if !slices.Equal(p.OperationClasses, []svcv1.OperationClass{svcv1.OperationClass_OPERATION_CLASS_DISCOVER, svcv1.OperationClass_OPERATION_CLASS_PRESERVE, svcv1.OperationClass_OPERATION_CLASS_REMOVE}) {
		t.Fatalf("operation classes %v", p.OperationClasses)
	}
	if p.State != svcv1.PlanState_PLAN_STATE_VALIDATED || p.Policy.Decision != svcv1.PolicyDecision_POLICY_DECISION_ALLOW || p.Meter != nil {
		t.Fatalf("state %v decision %v meter %v", p.State, p.Policy.Decision, p.Meter)
	}
}

// Unsubscribe plans hold the subscriptions svc can end by itself (RFC 8058 one-click); the
// others are excluded, saying why.
func TestUnsubscribeNeedsOneClick(t *testing.T) {
	oneClick := obj(func(o *plan.Object) {
		o.ID, o.ListUnsubscribe, o.ListUnsubscribePost = "a", "<mailto:u@x>, <https://x.example/u/1>", true
	})
	mailto := obj(func(o *plan.Object) { o.ID, o.ListUnsubscribe, o.ListUnsubscribePost = "b", "<mailto:u@x>", true })
	noPost := obj(func(o *plan.Object) { o.ID, o.ListUnsubscribe, o.Facts = "c", "<https://x.example/u/3>", bulk })
	plainHTTP := obj(func(o *plan.Object) {
		o.ID, o.ListUnsubscribe, o.ListUnsubscribePost = "d", "<http://x.example/u/4>", true
	})
	req := request(nil, oneClick, mailto, noPost, plainHTTP)
	req.Intent = svcv1.PlanIntent_PLAN_INTENT_UNSUBSCRIBE
	p := build(t, req)
	if len(p.Objects) != 1 || p.Objects[0].ProviderObjectId != "a" {
		t.Fatalf("objects %v", p.Objects)
	}
	if len(p.Excluded) != 3 {
		t.Fatalf("excluded %v", p.Excluded)
	}
	for _, x := range p.Excluded {
		if x.Reason != svcv1.ExclusionReason_EXCLUSION_REASON_UNSUPPORTED_CAPABILITY || !strings.Contains(x.Detail, "one-click") {
			t.Fatalf("exclusion %v", x)
		}
	}
	if u, ok := plan.OneClickTarget(" <mailto:a@b>,<https://x.example/u?a=1> ", true); !ok || u != "https://x.example/u?a=1" {
		t.Fatalf("OneClickTarget = %q, %v", u, ok)
	}
	for _, h := range []string{"", "https://x.example/u", "<https://user:pw@x.example/u>", "<https:///u>", "<ftp://x/u>"} {
		if u, ok := plan.OneClickTarget(h, true); ok {
			t.Errorf("%q gave %q", h, u)
		}
	}
}
