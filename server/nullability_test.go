package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/reflect/protoreflect"

	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/providers"
	"svc.dev/svc/server"
	"svc.dev/svc/wire"
)

// specNullableMembers are, per resource the spec describes (by its proto message), the members
// it marks (n): the only ones that may be null. Every other member of these is required or
// optional-and-absent-when-unset. Resources whose fields the spec does not show (applications,
// keys, connections, deliveries, usage, trials beyond their listed fields) are not in the table:
// only the enum rule below holds for them. A list response's next_cursor is null at the end.
var specNullableMembers = map[protoreflect.Name][]string{
	"Plan":                 {"destination", "policy", "meter", "authorization"},
	"Actor":                {"delegatingUserId", "applicationId", "agentId", "grantId"},
	"Destination":          {"pathTemplate"},
	"Projection":           {},
	"ProjectedQuota":       {"limitBytes", "percentAfter"},
	"PlanPolicy":           {},
	"PlanMeter":            {"withinStandingEnvelope"},
	"PlanAuthorization":    {"commercialAuthorizationId"},
	"PlanObject":           {"expectedVersion", "expectedSha256"},
	"SourceMarker":         {},
	"Exclusion":            {},
	"Execution":            {"measured_reclaim_bytes", "receipt_id", "started_at", "finished_at"},
	"ExecutionStep":        {"from_state", "to_state"},
	"Receipt":              {"delegatingUserId", "measuredReclaimBytes"},
	"ReceiptAuthorization": {"grantId", "commercialAuthorizationId", "rateCardVersion"},
	"ReceiptObject":        {"vaultObjectId", "vaultSha256", "providerResultId", "error"},
	"QuotaSnapshot":        {"usedBytes", "limitBytes"},
	"Restoration":          {"until", "method"},
	"ManifestBundle":       {},
	"Manifest":             {"vault"},
	"ManifestSource":       {"parentId", "version", "path", "createdAt", "modifiedAt"},
	"ManifestContent":      {"mimeType", "sha256"},
	"ManifestDestination":  {"objectId", "path"},
	"Meter": {"serviceDomain", "basePriceCents", "includedAllowance", "meterUnit", "meterRate", "observedUsage", "observedOverageCents",
		"currentPeriodCostCents", "projectedPeriodCostCents", "previousPeriodCostCents", "changeCents", "nextThresholdCents", "changePercent",
		"primaryDriver", "concentration", "projectedThresholdAt", "explanation"},
	"Evidence":     {},
	"Account":      {"display_name", "developer"},
	"Organization": {},
	"Job":          {"result", "error", "finished_at"},
	"Webhook":      {},
	"Event":        {},
	"VaultObject":  {"asset_id", "name", "provider", "source_id", "mime_type", "verified_at", "cold_since", "manifest_id"},
	"SearchHit":    {"snippet"},
	"RevenueItem":  {"gross_cents", "expected_cents", "reported_cents", "scheduled_cents", "settled_cents", "variance_cents"},
	"Anomaly":      {"creator_source_id"},
	"AuditEntry":   {"principal_id", "target"},
	"Source":       {"email", "last_scan_at", "last_delta_marker", "connected_via_application_id", "connection_id", "quota"},
	"SourceQuota":  {"limit_bytes", "growth_bytes_per_day", "projected_full_at"},
	"SourcePolicy": {},
}

// checkMembers walks a served JSON value as the message md and reports every member that is
// null where the spec does not mark it (n), and every enum member served as "" (the spec's
// enums have no empty value: an unset optional one must be absent).
func checkMembers(where string, md protoreflect.MessageDescriptor, v any) (problems []string) {
	obj, ok := v.(map[string]any)
	if !ok {
		return nil
	}
	nullable, specified := specNullableMembers[md.Name()]
	fields := md.Fields()
	for k, val := range obj {
		var fd protoreflect.FieldDescriptor
		for i := range fields.Len() {
			if wire.JSONName(fields.Get(i)) == k {
				fd = fields.Get(i)
				break
			}
		}
		if fd == nil {
			continue // a member the descriptor does not name (a free map's key)
		}
		path := where + "." + k
		switch {
		case val == nil:
			if specified && k != "next_cursor" && !slices.Contains(nullable, k) {
				problems = append(problems, fmt.Sprintf("%s is null; the spec does not mark %s.%s (n)", path, md.Name(), k))
			}
			continue
		case fd.Kind() == protoreflect.EnumKind && val == "":
			problems = append(problems, fmt.Sprintf("%s is \"\": an unset enum must be absent", path))
		}
		sub := fd.Message()
		if fd.IsMap() {
			sub = fd.MapValue().Message()
		}
		if sub == nil || sub.FullName().Parent() != "svc.v1" {
			continue // scalars, timestamps, free-form Struct
		}
		switch x := val.(type) {
		case []any:
			for i, e := range x {
				problems = append(problems, checkMembers(fmt.Sprintf("%s[%d]", path, i), sub, e)...)
			}
		case map[string]any:
			if fd.IsMap() {
				for mk, e := range x {
					problems = append(problems, checkMembers(path+"."+mk, sub, e)...)
				}
			} else {
				problems = append(problems, checkMembers(path, sub, x)...)
			}
		}
	}
	return problems
}

// The check finds what it is for: nulls the spec does not allow and empty enums, at any depth.
func TestCheckMembersFindsNullsAndEmptyEnums(t *testing.T) {
	doc := `{"data":[{"id":"src_1","email":null,"display_name":null,"policy":{"minAgeDays":null,"duplicateHandling":""},
		"quota":{"limit_bytes":null,"used_bytes":null}}],"next_cursor":null}`
	var v any
	json.Unmarshal([]byte(doc), &v)
	got := checkMembers("sources", (&svcv1.ListSourcesResponse{}).ProtoReflect().Descriptor(), v)
	slices.Sort(got)
	want := []string{
		`sources.data[0].display_name is null; the spec does not mark Source.display_name (n)`,
		`sources.data[0].policy.duplicateHandling is "": an unset enum must be absent`,
		`sources.data[0].policy.minAgeDays is null; the spec does not mark SourcePolicy.minAgeDays (n)`,
		`sources.data[0].quota.used_bytes is null; the spec does not mark SourceQuota.used_bytes (n)`,
	}
	if !slices.Equal(got, want) {
		t.Errorf("found\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// Every resource the API serves, read from a dev-seeded server (sources, plans, executions and
// their steps, receipts, manifests, vault objects and search, meters, trials, jobs, events,
// creator items and anomalies, the account, applications, keys, connections, webhooks,
// audit, usage), holds to the spec's nullability: nothing is null that the spec does not mark
// (n), and no enum is served as "" (issue 22, item 4).
func TestEveryServedMemberHoldsToTheSpecsNullability(t *testing.T) {
	e := newSeededEnv(t, func(c *server.Config) { c.Dev = true }) // Dev: a webhook to loopback
	cx := "connection_id=" + e.creds.ConnectionID
	var empty []string // lists the seed leaves empty: their members are not checked here
	defer func() { t.Logf("empty lists (nothing to check): %v", empty) }()
	get := func(path string, hdr []string, md protoreflect.MessageDescriptor) map[string]any {
		t.Helper()
		r := e.do("GET", path, "", hdr...)
		if r.status != 200 {
			t.Errorf("GET %s: %d %s", path, r.status, r.body)
			return nil
		}
		var v map[string]any
		if err := json.Unmarshal(r.body, &v); err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		for _, p := range checkMembers(path, md, v) {
			t.Error(p)
		}
		if d, ok := v["data"].([]any); ok && len(d) == 0 {
			empty = append(empty, path)
		}
		return v
	}
	first := func(list map[string]any, member string) string {
		if d, _ := list["data"].([]any); len(d) > 0 {
			s, _ := d[0].(map[string]any)[member].(string)
			return s
		}
		return ""
	}
	d := func(m interface{ ProtoReflect() protoreflect.Message }) protoreflect.MessageDescriptor {
		return m.ProtoReflect().Descriptor()
	}
	key, session := e.key(), e.testSession()
	// Meters (and what the scan finds) from a mailbox of metered receipts; a webhook.
	root := t.TempDir()
	for _, sub := range []string{"cur", "new", "tmp"} {
		os.MkdirAll(filepath.Join(root, sub), 0o755)
	}
	for i := range 3 {
		overage, total := "", "$20.00"
		if i == 2 {
			overage, total = "Overage (115 GB over your 500 GB included): $11.50\n", "$31.50"
		}
		raw := fmt.Sprintf("From: Acme Cloud <billing@mail.acme.example>\nTo: ann@example.com\nSubject: Your receipt\nDate: Mon, %d Aug 2026 10:00:00 +0000\nMessage-ID: <r%d@acme.example>\n\nDeveloper plan (monthly): $20.00\n%sAmount charged: %s\n",
			3+i*7, i, overage, total)
		os.WriteFile(filepath.Join(root, "cur", fmt.Sprintf("%d.m:2,S", i)), []byte(raw), 0o600)
	}
	ctx := context.Background()
	if _, err := e.srv.ConnectSource(ctx, e.userTestTenant(), server.SourceSpec{Provider: providers.VendorDLocal,
		Config: providers.Config{"root": root}, Kind: "mail", DisplayName: "Mail"}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.srv.ScanIntel(ctx, e.userTestTenant()); err != nil {
		t.Fatal(err)
	}
	if r := e.do("POST", "/v1/webhooks", `{"url":"http://127.0.0.1:9/hook","event_types":["*"],"mode":"test"}`, key...); r.status != 201 {
		t.Fatalf("webhook: %d %s", r.status, r.body)
	}
	get("/v1/account", session, d(&svcv1.Account{}))
	get("/v1/sources?"+cx, key, d(&svcv1.ListSourcesResponse{}))
	plans := get("/v1/plans?"+cx, key, d(&svcv1.ListPlansResponse{}))
	if id := first(plans, "planId"); id != "" {
		get("/v1/plans/"+id+"?"+cx, key, d(&svcv1.Plan{}))
	} else {
		t.Error("the seed has no plan")
	}
	exes := get("/v1/executions?"+cx, key, d(&svcv1.ListExecutionsResponse{}))
	if id := first(exes, "id"); id != "" {
		get("/v1/executions/"+id+"?"+cx, key, d(&svcv1.Execution{}))
		get("/v1/executions/"+id+"/steps?"+cx, key, d(&svcv1.ListExecutionStepsResponse{}))
		ex := get("/v1/executions/"+id+"?"+cx, key, d(&svcv1.Execution{}))
		if rid, _ := ex["receipt_id"].(string); rid != "" {
			get("/v1/receipts/"+rid, key, d(&svcv1.Receipt{}))
		} else {
			t.Error("the seed's execution has no receipt")
		}
	} else {
		t.Error("the seed has no execution")
	}
	get("/v1/vault/manifests/export?"+cx, key, d(&svcv1.ManifestBundle{}))
	get("/v1/vault/objects?"+cx, key, d(&svcv1.ListVaultObjectsResponse{}))
	get("/v1/vault/search?q=invoice&"+cx, key, d(&svcv1.SearchVaultResponse{}))
	get("/v1/intel/meters?"+cx, key, d(&svcv1.ListMetersResponse{}))
	get("/v1/intel/trials?"+cx, key, d(&svcv1.ListTrialsResponse{}))
	get("/v1/jobs", session, d(&svcv1.ListJobsResponse{}))
	get("/v1/events", key, d(&svcv1.ListEventsResponse{}))
	get("/v1/creator/items", session, d(&svcv1.ListRevenueItemsResponse{}))
	get("/v1/creator/anomalies", session, d(&svcv1.ListAnomaliesResponse{}))
	get("/v1/creator/sources", session, d(&svcv1.ListCreatorSourcesResponse{}))
	get("/v1/destinations?"+cx, key, d(&svcv1.ListDestinationsResponse{}))
	get("/v1/webhooks", key, d(&svcv1.ListWebhooksResponse{}))
	get("/v1/developer/applications?org_id="+e.creds.OrgID, e.session(), d(&svcv1.ListApplicationsResponse{}))
	if id := e.creds.ApplicationID; id != "" {
		get("/v1/developer/applications/"+id+"/audit", e.session(), d(&svcv1.ListApplicationAuditResponse{}))
		get("/v1/developer/applications/"+id+"/keys", e.session(), d(&svcv1.ListKeysResponse{}))
	}
	get("/v1/connections", key, d(&svcv1.ListConnectionsResponse{}))
}
