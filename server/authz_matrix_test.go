package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"google.golang.org/protobuf/types/known/timestamppb"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"svc.dev/svc/id"
	"testing"
	"time"

	"buf.build/gen/go/bufbuild/protovalidate/protocolbuffers/go/buf/validate"
	"google.golang.org/genproto/googleapis/api/annotations"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/platform"
	"svc.dev/svc/providers"
	"svc.dev/svc/server"
)

// The authorization matrix (issue 11, and the rule for resources addressed by id of issue 13):
// every route of the protos x every kind of credential x the resources it can name, with the
// expected outcome written once per class of endpoint. Each method must be listed in
// matrixClass, and its class must agree with its (svc.v1.endpoint) annotation: a new endpoint
// without an entry fails the test.
//
// Outcomes: "401", "403", "404", "cx" (400 naming connection_id: a CX endpoint under a key
// without it), and "pass": the request got past authentication and authorization (2xx, 3xx, a
// validation 400, a 409, a 501). A 5xx other than 501 always fails.

// Endpoint classes.
const (
	clsPublic  = "public"  // no credential
	clsSession = "session" // a signed-in user only
	clsKey     = "key"     // a developer key only: the application's own records
	clsCX      = "cx"      // end-user state; connection_id required with a key
	clsByID    = "byid"    // an end user's resource named by id (docs/api.md)
	clsTenant  = "tenant"  // the caller's tenant: a key's organization, a connection's user, the session's user
	clsOrg     = "org"     // developer records named by id or listed: applications, connections
	clsLiveOrg = "liveorg" // organization-wide live settings: usage, spend, the ceiling
)

var matrixClass = map[string]string{
	"AccountService/SignUp":                     clsPublic,
	"AccountService/SignIn":                     clsPublic,
	"AccountService/SignOut":                    clsSession,
	"AccountService/GetAccount":                 clsSession,
	"AccountService/UpdateAccount":              clsSession,
	"AccountService/ExportAccount":              clsSession,
	"AccountService/DeleteAccount":              clsSession,
	"JobService/GetJob":                         clsByID,
	"JobService/ListJobs":                       clsTenant,
	"JobService/CancelJob":                      clsByID,
	"BillingService/CreatePortalSession":        clsLiveOrg,
	"ConnectService/ProviderCallback":           clsPublic,
	"ConnectionService/CreateConnectSession":    clsKey,
	"ConnectionService/ListConnections":         clsOrg,
	"ConnectionService/GetConnection":           clsOrg,
	"ConnectionService/RevokeConnection":        clsOrg,
	"CreatorService/ListRevenueItems":           clsTenant,
	"CreatorService/ListAnomalies":              clsTenant,
	"CreatorService/CreateCreatorSource":        clsTenant,
	"CreatorService/GetCreatorSource":           clsTenant,
	"CreatorService/ListCreatorSources":         clsTenant,
	"CreatorService/DeleteCreatorSource":        clsTenant,
	"CreatorService/UploadStatement":            clsTenant,
	"CreatorService/SyncCreator":                clsTenant,
	"CreatorService/GetRevenueItem":             clsTenant,
	"CreatorService/GetAnomaly":                 clsTenant,
	"CreatorService/DismissAnomaly":             clsTenant,
	"CreatorService/ReopenAnomaly":              clsTenant,
	"DestinationService/CreateDestination":      clsTenant,
	"DestinationService/ListDestinations":       clsTenant,
	"DestinationService/GetDestination":         clsByID,
	"DeveloperService/CreateApplication":        clsSession,
	"DeveloperService/ListApplications":         clsSession,
	"DeveloperService/GetApplication":           clsOrg,
	"DeveloperService/CreateKey":                clsSession,
	"DeveloperService/ListKeys":                 clsSession,
	"DeveloperService/RotateKey":                clsSession,
	"DeveloperService/RevokeKey":                clsSession,
	"DeveloperService/CreateOrganization":       clsSession,
	"DeveloperService/ListApplicationAudit":     clsOrg,
	"EventService/ListEvents":                   clsTenant,
	"WebhookService/ListWebhooks":               clsKey,
	"WebhookService/CreateWebhook":              clsKey,
	"WebhookService/GetWebhook":                 clsKey,
	"WebhookService/UpdateWebhook":              clsKey,
	"WebhookService/DeleteWebhook":              clsKey,
	"WebhookService/RotateWebhookSecret":        clsKey,
	"WebhookService/ListDeliveries":             clsKey,
	"WebhookService/SendTestEvent":              clsKey,
	"ExecutionService/ExecutePlan":              clsByID,
	"ExecutionService/GetExecution":             clsByID,
	"ExecutionService/CancelExecution":          clsByID,
	"ExecutionService/ListExecutions":           clsCX,
	"ExecutionService/ListExecutionSteps":       clsByID,
	"IntelService/ActOnMeter":                   clsByID,
	"IntelService/ListMeters":                   clsCX,
	"IntelService/GetMeter":                     clsByID,
	"IntelService/ListTrials":                   clsCX,
	"IntelService/GetTrial":                     clsByID,
	"IntelService/DecideTrial":                  clsByID,
	"PlanService/CreatePlan":                    clsTenant,
	"PlanService/GetPlan":                       clsByID,
	"PlanService/ListPlanObjects":               clsByID,
	"PlanService/AuthorizePlan":                 clsByID,
	"PlanService/CancelPlan":                    clsByID,
	"PlanService/ListPlans":                     clsCX,
	"ReceiptService/GetReceipt":                 clsByID,
	"ReceiptService/RestoreReceipt":             clsByID,
	"SourceService/ListSources":                 clsTenant,
	"SourceService/GetSource":                   clsByID,
	"SourceService/UpdateSourcePolicy":          clsByID,
	"SourceService/CreateSource":                clsSession,
	"SourceService/CreateProviderAuthorization": clsSession,
	"SourceService/GetProviderAuthorization":    clsSession,
	"UsageService/GetUsage":                     clsLiveOrg,
	"UsageService/GetApplicationUsage":          clsLiveOrg,
	"UsageService/SetCeiling":                   clsLiveOrg,
	"VaultService/ListVaultObjects":             clsTenant,
	"VaultService/GetVaultObject":               clsByID,
	"VaultService/GetVaultObjectContent":        clsByID,
	"VaultService/SearchVault":                  clsCX,
	"VaultService/GetVaultCoverage":             clsCX,
	"VaultService/ExportManifests":              clsCX,
	"VaultService/RestoreVaultObject":           clsByID,
}

// Credential kinds.
const (
	crNone        = "none"
	crTestKey     = "test key"
	crLiveKey     = "live key"
	crOtherOrgKey = "key of another organization"
	crNarrowKey   = "key without the class"
	crFullCxn     = "connection"
	crPartialCxn  = "connection whose grant lacks the class"
	crOutsideCxn  = "connection limited to another source"
	crRevokedCxn  = "revoked connection"
	crOtherOrgCxn = "another organization's key with this connection"
	crAppPartial  = "key whose only connection lacks the class"
	crAppRevoked  = "key whose only connection is revoked"
	crAppOutside  = "key whose only connection is limited to another source"
	crSessionLive = "session"
	crSessionTest = "session, test mode"
	crOtherUser   = "another user's session"
)

var credKinds = []string{crNone, crTestKey, crLiveKey, crOtherOrgKey, crNarrowKey, crFullCxn, crPartialCxn, crOutsideCxn,
	crRevokedCxn, crOtherOrgCxn, crAppPartial, crAppRevoked, crAppOutside, crSessionLive, crSessionTest, crOtherUser}

// usesConnection marks the kinds that pass connection_id.
var usesConnection = map[string]bool{crFullCxn: true, crPartialCxn: true, crOutsideCxn: true, crRevokedCxn: true, crOtherOrgCxn: true}

// expected is the table: the outcome of each kind of credential for each class of endpoint, on
// the caller's own resource. hasID says the path names a resource; op is the endpoint's class.
func expected(class, cred string, hasID bool, op string) string {
	keyOnOther := "pass" // a key acting on its own organization's records
	if hasID {
		keyOnOther = "404"
	}
	narrow := "403"
	if op == "" {
		narrow = "pass"
	}
	switch class {
	case clsPublic:
		return "pass"
	case clsSession:
		switch cred {
		case crNone:
			return "401"
		case crSessionLive, crSessionTest:
			return "pass"
		case crOtherUser:
			return keyOnOther // another user's application is not found; their own account is theirs
		}
		return "403"
	case clsKey:
		switch cred {
		case crNone:
			return "401"
		case crSessionLive, crSessionTest, crOtherUser:
			return "403"
		case crTestKey, crLiveKey, crNarrowKey:
			return "pass"
		}
		return keyOnOther
	case clsCX:
		switch cred {
		case crNone:
			return "401"
		case crTestKey, crLiveKey, crOtherOrgKey, crAppPartial, crAppRevoked, crAppOutside:
			return "cx"
		case crNarrowKey, crPartialCxn:
			return narrow
		case crRevokedCxn, crOtherOrgCxn:
			return "404"
		}
		return "pass" // the full or source-limited connection, sessions: their own listing
	case clsTenant:
		switch cred {
		case crNone:
			return "401"
		case crNarrowKey, crPartialCxn:
			return narrow
		case crRevokedCxn, crOtherOrgCxn:
			return "404"
		}
		if hasID {
			// A resource of the caller's own tenant named by id (creator revenue's): found by
			// the credentials acting in the dev user's test tenant, not found from any other.
			switch cred {
			case crFullCxn, crSessionTest:
				return "pass"
			case crOutsideCxn:
				return "403" // creator revenue concerns the whole account (docs/creator.md)
			}
			return "404"
		}
		return "pass"
	case clsByID:
		switch cred {
		case crNone:
			return "401"
		case crTestKey, crFullCxn, crSessionLive, crSessionTest:
			return "pass"
		case crNarrowKey, crPartialCxn, crOutsideCxn:
			return narrow // connection_id narrows as before: 403
		}
		return "404" // other mode, other organization, a revoked connection, a grant without the class or the source
	case clsOrg:
		switch cred {
		case crNone:
			return "401"
		case crTestKey, crLiveKey, crNarrowKey, crSessionLive, crSessionTest:
			return "pass"
		}
		return keyOnOther
	case clsLiveOrg:
		switch cred {
		case crNone:
			return "401"
		case crLiveKey, crSessionLive, crSessionTest:
			return "pass"
		case crOtherUser:
			return keyOnOther
		}
		return "403" // test keys: test mode has no usage and no ceiling
	}
	return "?"
}

// exceptions are outcomes that depend on the resource, not only on the class: each says why.
var exceptions = map[string]map[string]string{
	// The dev connection is a test-mode one: a live key, and a session in live mode, see only
	// live-mode connections.
	"ConnectionService/GetConnection":    {crLiveKey: "404", crSessionLive: "404"},
	"ConnectionService/RevokeConnection": {crLiveKey: "404", crSessionLive: "404"},
	// The body is validated before the application is looked up: another user's request with
	// an empty body is a 400 whether the application exists or not (no existence oracle).
	"DeveloperService/CreateKey": {crOtherUser: "pass"},
	// The seeded destination was made by trusted setup from no source: it touches no source, so
	// a grant limited to sources reaches it (docs/destinations.md).
	"DestinationService/GetDestination": {crOutsideCxn: "pass", crAppOutside: "pass"},
	// Coverage concerns the whole vault: a grant limited to some sources does not reach it
	// (as for jobs).
	"VaultService/GetVaultCoverage": {crOutsideCxn: "403"},
	// Creator revenue concerns the whole account: a connection's grant limited to some sources
	// reaches none of it (docs/creator.md).
	"CreatorService/ListRevenueItems":    {crOutsideCxn: "403"},
	"CreatorService/ListAnomalies":       {crOutsideCxn: "403"},
	"CreatorService/ListCreatorSources":  {crOutsideCxn: "403"},
	"CreatorService/SyncCreator":         {crOutsideCxn: "403"},
	"CreatorService/CreateCreatorSource": {crOutsideCxn: "403"},
	// Provider authorizations are the user's own, and the matrix's server has none (it has no
	// OAuth configuration to start one): the id it names is not found for anyone.
	"SourceService/GetProviderAuthorization": {crSessionLive: "404", crSessionTest: "404"},
	// The billing portal is a developer organization's: a user who belongs to none has nothing
	// to bill (docs/billing.md).
	"BillingService/CreatePortalSession": {crOtherUser: "404"},
}

// samples are requests that pass validation, so that the matrix reaches authorization
// (validation comes first, and says nothing about whether a resource exists).
var samples = map[string]struct{ query, body string }{
	"PlanService/CreatePlan":                    {body: `{"intent":"rescue"}`},
	"PlanService/AuthorizePlan":                 {body: `{"plan_hash":"` + strings.Repeat("0", 64) + `"}`},
	"DestinationService/CreateDestination":      {body: `{"source_id":"src_01JD0000000000000000000000","label":"x"}`},
	"CreatorService/CreateCreatorSource":        {body: `{"kind":"inbox"}`},
	"CreatorService/UploadStatement":            {body: `{"name":"m.csv","csv":"Period,Gross\n2026-01,10.00\n"}`},
	"IntelService/ActOnMeter":                   {body: `{"action":"watch"}`},
	"IntelService/DecideTrial":                  {body: `{"decision":"keep"}`},
	"VaultService/SearchVault":                  {query: "q=invoice"},
	"UsageService/SetCeiling":                   {body: `{"ceiling_cents":10000}`},
	"DeveloperService/CreateOrganization":       {body: `{"name":"Org"}`},
	"AccountService/SignUp":                     {body: `{"email":"x@example.com","password":"correct horse battery"}`},
	"AccountService/SignIn":                     {body: `{"email":"x@example.com","password":"correct horse battery"}`},
	"WebhookService/CreateWebhook":              {body: `{"url":"http://127.0.0.1:9/h","event_types":["*"],"mode":"test"}`},
	"ConnectionService/CreateConnectSession":    {body: `{"redirect_uri":"https://app.example/cb","operation_classes":["discover"]}`},
	"SourceService/CreateSource":                {body: `{"provider":"vendor_d_local","path":"/tmp"}`},
	"SourceService/CreateProviderAuthorization": {body: `{"provider":"vendor_a_mail"}`},
}

type matrixEnv struct {
	*env
	t        *testing.T
	ctx      context.Context
	otherKey string   // a test key of another organization's application
	other    []string // another user's session
	narrow   map[string]string
	partial  map[string]string
	appOnly  map[string]string // op -> key whose application's only connection lacks op
	revoked  string            // a revoked connection of the dev application
	appRev   string            // key whose application's only connection is revoked
	outside  string            // a connection of the dev application limited to another source
	appOut   string            // key whose application's only connection is limited to another source
	ids      map[string]string // id prefix -> the resource requests name now
	variants map[string]map[string]string
	signouts int
	hook     string // a test webhook of the dev application
}

func newMatrixEnv(t *testing.T) *matrixEnv {
	e, _, src, _ := localEnv(t, 2, func(c *server.Config) { c.Dev = true }) // webhooks on loopback
	x := runLocal(t, e, src)
	ctx := context.Background()
	devs := e.srv.Developers()
	me := &matrixEnv{env: e, t: t, ctx: ctx, narrow: map[string]string{}, partial: map[string]string{}, appOnly: map[string]string{}}
	me.other = e.signUp(t, "other-user@example.com")
	otherUser, _, err := e.srv.Accounts().SignUp(ctx, "other-dev@example.com", "correct horse battery", nil, "en")
	if err != nil {
		t.Fatal(err)
	}
	o, err := e.srv.Accounts().CreateOrg(ctx, otherUser.ID, "Other org")
	if err != nil {
		t.Fatal(err)
	}
	oapp, err := devs.CreateApplication(ctx, o.ID, "Other app", platform.OperationClasses, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, me.otherKey, err = devs.CreateKey(ctx, oapp.ID, platform.ModeTest, nil); err != nil {
		t.Fatal(err)
	}
	rev, err := devs.Connect(ctx, e.creds.ApplicationID, e.creds.UserID, platform.ModeTest, platform.Grant{OperationClasses: platform.OperationClasses})
	if err != nil {
		t.Fatal(err)
	}
	devs.Revoke(ctx, rev.ID)
	me.revoked = rev.ID
	me.appRev = me.appWith(t, platform.Grant{OperationClasses: platform.OperationClasses}, true)
	limited := platform.Grant{OperationClasses: platform.OperationClasses, SourceIDs: []string{"src_01JD0000000000000000000000"}}
	out, err := devs.Connect(ctx, e.creds.ApplicationID, e.creds.UserID, platform.ModeTest, limited)
	if err != nil {
		t.Fatal(err)
	}
	me.outside = out.ID
	me.appOut = me.appWith(t, limited, false)

	var objs struct {
		Data []map[string]any `json:"data"`
	}
	cx := "?connection_id=" + e.creds.ConnectionID
	json.Unmarshal(e.do("GET", "/v1/vault/objects"+cx, "", e.key()...).body, &objs)
	var dsts struct {
		Data []map[string]any `json:"data"`
	}
	json.Unmarshal(e.do("GET", "/v1/destinations"+cx, "", e.key()...).body, &dsts)
	me.ids = map[string]string{
		"pln": x["plan_id"].(string), "exe": x["id"].(string), "rcp": x["receipt_id"].(string), "src": src,
		"vlt": objs.Data[0]["id"].(string), "dst": dsts.Data[0]["destinationId"].(string),
		"app": e.creds.ApplicationID, "cxn": e.creds.ConnectionID,
	}
	var jobs struct {
		Data []map[string]any `json:"data"`
	}
	json.Unmarshal(e.do("GET", "/v1/jobs?kind=seed", "", with(e.session(), "Svc-Mode", "test")...).body, &jobs)
	if len(jobs.Data) == 0 {
		t.Fatal("the dev seed left no seed job")
	}
	me.ids["job"] = jobs.Data[0]["id"].(string)
	me.ids["mtr"], me.ids["trl"] = me.plantIntel(t, platform.Tenant{Owner: e.creds.UserID, Mode: platform.ModeTest}, src)
	me.ids["crs"], me.ids["rev"], me.ids["ano"] = me.plantCreator(t, with(e.session(), "Svc-Mode", "test"))
	var acct struct{ ID string }
	json.Unmarshal(e.do("GET", "/v1/account", "", me.other...).body, &acct)
	me.variants = map[string]map[string]string{
		"own":          me.ids,
		"other tenant": me.resourcesIn(t, platform.Tenant{Owner: acct.ID, Mode: platform.ModeTest}, with(me.other, "Svc-Mode", "test")),
		"other mode":   me.resourcesIn(t, platform.Tenant{Owner: e.creds.UserID, Mode: platform.ModeLive}, e.session()),
	}
	return me
}

// resourcesIn makes a source, a plan executed with its receipt and vault copies, and a
// destination in tenant, as the owner's session hdr would, and returns their ids by prefix.
func (me *matrixEnv) resourcesIn(t *testing.T, tenant platform.Tenant, hdr []string) map[string]string {
	root := t.TempDir()
	old := time.Now().AddDate(-2, 0, 0)
	for i := range 2 {
		f := filepath.Join(root, fmt.Sprintf("f%d.txt", i))
		os.WriteFile(f, []byte(fmt.Sprint("content ", i)), 0o600)
		os.Chtimes(f, old, old)
	}
	src, err := me.srv.ConnectSource(me.ctx, tenant, server.SourceSpec{Provider: providers.VendorDLocal,
		Config: providers.Config{"root": root}, Kind: "folder", DisplayName: "Elsewhere"})
	if err != nil {
		t.Fatal(err)
	}
	r := me.do("POST", "/v1/plans", `{"intent":"svc","source_ids":["`+src.Id+`"],"policy":{"minAgeDays":30}}`, hdr...)
	if r.status != 201 {
		t.Fatalf("plan in %s: %d %s", tenant, r.status, r.body)
	}
	p := r.json(t)
	pid := p["planId"].(string)
	if r := me.do("POST", "/v1/plans/"+pid+"/authorize", `{"plan_hash":"`+p["hash"].(string)+`"}`, hdr...); r.status != 200 {
		t.Fatalf("authorize in %s: %d %s", tenant, r.status, r.body)
	}
	r = me.do("POST", "/v1/plans/"+pid+"/execute", "", hdr...)
	if r.status != 202 {
		t.Fatalf("execute in %s: %d %s", tenant, r.status, r.body)
	}
	xid := r.json(t)["id"].(string)
	var x map[string]any
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if x = me.do("GET", "/v1/executions/"+xid, "", hdr...).json(t); x["receipt_id"] != nil {
			break
		}
	}
	if x["receipt_id"] == nil {
		t.Fatalf("execution in %s did not finish: %v", tenant, x)
	}
	var objs struct {
		Data []map[string]any `json:"data"`
	}
	json.Unmarshal(me.do("GET", "/v1/vault/objects", "", hdr...).body, &objs)
	d := me.do("POST", "/v1/destinations", `{"source_id":"`+src.Id+`","label":"Elsewhere"}`, hdr...)
	if d.status != 201 || len(objs.Data) == 0 {
		t.Fatalf("in %s: destination %d %s, %d vault objects", tenant, d.status, d.body, len(objs.Data))
	}
	mtr, trl := me.plantIntel(t, tenant, src.Id)
	crs, rev, ano := me.plantCreator(t, hdr)
	return map[string]string{"pln": pid, "exe": xid, "rcp": x["receipt_id"].(string), "src": src.Id,
		"vlt": objs.Data[0]["id"].(string), "dst": d.json(t)["destinationId"].(string),
		"app": me.env.creds.ApplicationID, "cxn": me.env.creds.ConnectionID, "mtr": mtr, "trl": trl,
		"crs": crs, "rev": rev, "ano": ano}
}

// plantCreator makes a statement revenue source with a year of statements, reconciled, as
// the session hdr, and returns the ids of the source, an item and an anomaly (or a missing
// one when the reconciliation found none).
func (me *matrixEnv) plantCreator(t *testing.T, hdr []string) (string, string, string) {
	r := me.do("POST", "/v1/creator/sources", `{"kind":"statement","label":"Fanclub"}`, hdr...)
	if r.status != 201 {
		t.Fatalf("creator source: %d %s", r.status, r.body)
	}
	crs := r.json(t)["id"].(string)
	csv := "Period,Gross,Fees,Net\\n"
	for m := 1; m <= 8; m++ {
		gross := 1000 + m*10
		if m == 7 {
			gross = 400 // a month far below the others
		}
		csv += fmt.Sprintf("2026-%02d,%d.00,%d.00,%d.00\\n", m, gross, gross/10, gross-gross/10)
	}
	if r := me.do("POST", "/v1/creator/sources/"+crs+"/statements", `{"name":"fanclub.csv","csv":"`+csv+`"}`, hdr...); r.status != 201 {
		t.Fatalf("statement: %d %s", r.status, r.body)
	}
	j := me.do("POST", "/v1/creator/sync", "", hdr...).json(t)
	me.waitJob(t, j["id"].(string), hdr)
	var items, anomalies struct {
		Data []map[string]any `json:"data"`
	}
	json.Unmarshal(me.do("GET", "/v1/creator/items", "", hdr...).body, &items)
	json.Unmarshal(me.do("GET", "/v1/creator/anomalies", "", hdr...).body, &anomalies)
	if len(items.Data) == 0 {
		t.Fatal("the reconciliation made no items")
	}
	ano := "ano_01JD0000000000000000000000"
	if len(anomalies.Data) > 0 {
		ano = anomalies.Data[0]["id"].(string)
	}
	return crs, items.Data[0]["id"].(string), ano
}

// plantIntel stores a meter and a trial in tenant whose evidence comes from source srcID, as
// a scan of its mail would, and returns their ids.
func (me *matrixEnv) plantIntel(t *testing.T, tenant platform.Tenant, srcID string) (string, string) {
	res := me.srv.Store().Resources()
	now := timestamppb.Now()
	ev := []*svcv1.Evidence{{Kind: svcv1.EvidenceKind_EVIDENCE_KIND_EMAIL, Ref: "<bill@acme.example>", SourceId: srcID, ObservedAt: now}}
	m := &svcv1.Meter{Id: id.New("mtr"), Service: "Acme Cloud", BillingPeriod: svcv1.BillingPeriod_BILLING_PERIOD_MONTHLY,
		TrapType: svcv1.TrapType_TRAP_TYPE_UNKNOWN, Action: svcv1.MeterAction_METER_ACTION_WATCH,
		EvidenceLevel: svcv1.EvidenceLevel_EVIDENCE_LEVEL_DETECTED, Confidence: 0.5, Evidence: ev, LastUpdated: now}
	tr := &svcv1.Trial{Id: id.New("trl"), Cadence: "monthly", Decision: svcv1.TrialDecision_TRIAL_DECISION_UNDECIDED,
		EvidenceLevel: svcv1.EvidenceLevel_EVIDENCE_LEVEL_DETECTED, Evidence: ev, WorthIt: &svcv1.WorthIt{Verdict: "unknown"}}
	if err := res.Meters().Put(me.ctx, tenant.String(), m.Id, m); err != nil {
		t.Fatal(err)
	}
	if err := res.Trials().Put(me.ctx, tenant.String(), tr.Id, tr); err != nil {
		t.Fatal(err)
	}
	return m.Id, tr.Id
}

// appWith makes an application in the dev organization whose only connection to the dev user
// has grant g (revoked when revoke), and returns a test key of it.
func (me *matrixEnv) appWith(t *testing.T, g platform.Grant, revoke bool) string {
	devs := me.srv.Developers()
	app, err := devs.CreateApplication(me.ctx, me.env.creds.OrgID, "App "+fmt.Sprint(len(me.appOnly)), platform.OperationClasses, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, key, err := devs.CreateKey(me.ctx, app.ID, platform.ModeTest, nil)
	if err != nil {
		t.Fatal(err)
	}
	c, err := devs.Connect(me.ctx, app.ID, me.env.creds.UserID, platform.ModeTest, g)
	if err != nil {
		t.Fatal(err)
	}
	if revoke {
		devs.Revoke(me.ctx, c.ID)
	}
	return key
}

func without(op string) []string {
	return slices.DeleteFunc(slices.Clone(platform.OperationClasses), func(o string) bool { return o == op })
}

// creds returns the headers and connection_id of a kind of credential for an endpoint of class op.
func (me *matrixEnv) creds(kind, op string) (hdr []string, cxn string) {
	t, devs := me.t, me.srv.Developers()
	bearer := func(k string) []string { return []string{"Authorization", "Bearer " + k} }
	switch kind {
	case crTestKey:
		return me.key(), ""
	case crLiveKey:
		return me.liveKey(), ""
	case crOtherOrgKey:
		return bearer(me.otherKey), ""
	case crNarrowKey:
		if me.narrow[op] == "" {
			_, k, err := devs.CreateKey(me.ctx, me.env.creds.ApplicationID, platform.ModeTest, without(op))
			if err != nil {
				t.Fatal(err)
			}
			me.narrow[op] = k
		}
		return bearer(me.narrow[op]), ""
	case crFullCxn:
		return me.key(), me.env.creds.ConnectionID
	case crPartialCxn:
		if me.partial[op] == "" {
			c, err := devs.Connect(me.ctx, me.env.creds.ApplicationID, me.env.creds.UserID, platform.ModeTest, platform.Grant{OperationClasses: without(op)})
			if err != nil {
				t.Fatal(err)
			}
			me.partial[op] = c.ID
		}
		return me.key(), me.partial[op]
	case crOutsideCxn:
		return me.key(), me.outside
	case crRevokedCxn:
		return me.key(), me.revoked
	case crOtherOrgCxn:
		return bearer(me.otherKey), me.env.creds.ConnectionID
	case crAppPartial:
		if me.appOnly[op] == "" {
			me.appOnly[op] = me.appWith(t, platform.Grant{OperationClasses: without(op)}, false)
		}
		return bearer(me.appOnly[op]), ""
	case crAppRevoked:
		return bearer(me.appRev), ""
	case crAppOutside:
		return bearer(me.appOut), ""
	case crSessionLive:
		return me.session(), ""
	case crSessionTest:
		return with(me.session(), "Svc-Mode", "test"), ""
	case crOtherUser:
		return me.other, ""
	}
	return nil, ""
}

var idPrefix = regexp.MustCompile(`^\^([a-z]+)_`)

// target is the path of a route naming the caller's own resources; fresh says a new resource
// is made for every request (routes that revoke or delete what they name).
func (me *matrixEnv) target(md protoreflect.MethodDescriptor, path string, fresh bool) (string, bool) {
	t, devs := me.t, me.srv.Developers()
	hasID := false
	out := regexp.MustCompile(`\{([a-z_]+)\}`).ReplaceAllStringFunc(path, func(v string) string {
		name := strings.Trim(v, "{}")
		switch name {
		case "provider":
			return "vendor_a_mail"
		case "key_id":
			k, _, err := devs.CreateKey(me.ctx, me.env.creds.ApplicationID, platform.ModeTest, nil)
			if err != nil {
				t.Fatal(err)
			}
			return k.ID
		}
		hasID = true
		fd := md.Input().Fields().ByName(protoreflect.Name(name))
		rules, _ := proto.GetExtension(fd.Options(), validate.E_Field).(*validate.FieldRules)
		m := idPrefix.FindStringSubmatch(rules.GetString().GetPattern())
		prefix := "x"
		if m != nil {
			prefix = m[1]
		}
		switch {
		case prefix == "cxn" && fresh:
			c, err := devs.Connect(me.ctx, me.env.creds.ApplicationID, me.env.creds.UserID, platform.ModeTest, platform.Grant{OperationClasses: platform.OperationClasses})
			if err != nil {
				t.Fatal(err)
			}
			return c.ID
		case prefix == "crs" && fresh:
			r := me.do("POST", "/v1/creator/sources", `{"kind":"statement","label":"To delete"}`, with(me.env.session(), "Svc-Mode", "test")...)
			if r.status != 201 {
				t.Fatalf("creator source: %d %s", r.status, r.body)
			}
			return r.json(t)["id"].(string)
		case prefix == "whk" && !fresh && me.hook != "":
			return me.hook
		case prefix == "whk":
			r := me.do("POST", "/v1/webhooks", `{"url":"http://127.0.0.1:9/hook","event_types":["*"],"mode":"test"}`, me.key()...)
			if r.status != 201 {
				t.Fatalf("webhook: %d %s", r.status, r.body)
			}
			id := r.json(t)["id"].(string)
			if !fresh {
				me.hook = id
			}
			return id
		}
		if id, ok := me.ids[prefix]; ok {
			return id
		}
		return prefix + "_01JD0000000000000000000000" // no such resource exists (meters, trials)
	})
	return out, hasID
}

func outcome(r *resp) string {
	switch r.status {
	case http.StatusUnauthorized:
		return "401"
	case http.StatusForbidden:
		var p map[string]any
		json.Unmarshal(r.body, &p)
		if p["code"] == "forbidden" {
			return "403"
		}
		return "pass" // action_denied, step_up_required: a policy decision on a visible resource
	case http.StatusNotFound:
		return "404"
	case http.StatusBadRequest:
		var p struct {
			Errors []struct{ Path string } `json:"errors"`
		}
		json.Unmarshal(r.body, &p)
		if len(p.Errors) > 0 && p.Errors[0].Path == "connection_id" {
			return "cx"
		}
	}
	if r.status >= 500 && r.status != http.StatusNotImplemented {
		return "5xx"
	}
	return "pass"
}

func TestAuthorizationMatrix(t *testing.T) {
	me := newMatrixEnv(t)
	seen := map[string]bool{}
	cells := 0
	protoregistry.GlobalFiles.RangeFilesByPackage("svc.v1", func(fd protoreflect.FileDescriptor) bool {
		for i := range fd.Services().Len() {
			sd := fd.Services().Get(i)
			for j := range sd.Methods().Len() {
				md := sd.Methods().Get(j)
				name := string(sd.Name()) + "/" + string(md.Name())
				seen[name] = true
				class, ok := matrixClass[name]
				if !ok {
					t.Errorf("%s has no entry in matrixClass: say which class of endpoint it is", name)
					continue
				}
				cells += me.checkMethod(t, name, class, md)
			}
		}
		return true
	})
	for name := range matrixClass {
		if !seen[name] {
			t.Errorf("matrixClass lists %s, which no proto defines", name)
		}
	}
	t.Logf("%d cells", cells)
	me.checkBodyReferences(t)
}

// checkBodyReferences: the resources a request body points at (sources, destinations) follow
// the same rules as those in its path: another tenant's or mode's are not found, and the
// caller's own outside a connection's grant are refused.
func (me *matrixEnv) checkBodyReferences(t *testing.T) {
	own, other, live := me.variants["own"], me.variants["other tenant"], me.variants["other mode"]
	full := "?connection_id=" + me.env.creds.ConnectionID
	outside := "?connection_id=" + me.outside
	cases := []struct {
		method, path, body string
		want               int
	}{
		{"POST", "/v1/plans" + full, `{"intent":"rescue","source_ids":["` + other["src"] + `"]}`, 404},
		{"POST", "/v1/plans" + full, `{"intent":"rescue","source_ids":["` + live["src"] + `"]}`, 404},
		{"POST", "/v1/plans" + outside, `{"intent":"rescue","source_ids":["` + own["src"] + `"]}`, 403},
		{"POST", "/v1/plans" + full, `{"intent":"export","source_ids":["` + own["src"] + `"],"destination_id":"` + other["dst"] + `"}`, 404},
		{"POST", "/v1/plans" + full, `{"intent":"export","source_ids":["` + own["src"] + `"],"destination_id":"` + live["dst"] + `"}`, 404},
		{"POST", "/v1/vault/objects/" + own["vlt"] + "/restore" + full, `{"destination_id":"` + other["dst"] + `"}`, 404},
		{"POST", "/v1/vault/objects/" + own["vlt"] + "/restore", `{"destination_id":"` + live["dst"] + `"}`, 404},
		{"POST", "/v1/receipts/" + own["rcp"] + "/restore" + full, `{"destination_id":"` + other["dst"] + `"}`, 404},
		{"POST", "/v1/receipts/" + own["rcp"] + "/restore", `{"destination_id":"` + live["dst"] + `"}`, 404},
		{"POST", "/v1/destinations" + full, `{"source_id":"` + other["src"] + `","label":"x"}`, 400}, // answered like an unknown source
		{"POST", "/v1/destinations" + outside, `{"source_id":"` + own["src"] + `","label":"x"}`, 403},
	}
	for _, c := range cases {
		if r := me.do(c.method, c.path, c.body, me.key()...); r.status != c.want {
			t.Errorf("%s %s %s: %d %s, want %d", c.method, c.path, c.body, r.status, truncate(r.body), c.want)
		}
	}
}

func (me *matrixEnv) checkMethod(t *testing.T, name, class string, md protoreflect.MethodDescriptor) int {
	ep, _ := proto.GetExtension(md.Options(), svcv1.E_Endpoint).(*svcv1.Endpoint)
	rule, _ := proto.GetExtension(md.Options(), annotations.E_Http).(*annotations.HttpRule)
	if rule == nil {
		return 0
	}
	// The class agrees with the annotations.
	creds := ep.GetCredentials()
	agree := map[string]bool{
		clsPublic:  slices.Contains(creds, svcv1.Credential_CREDENTIAL_NONE),
		clsSession: slices.Equal(creds, []svcv1.Credential{svcv1.Credential_CREDENTIAL_SESSION}),
		clsKey:     slices.Equal(creds, []svcv1.Credential{svcv1.Credential_CREDENTIAL_API_KEY}),
		clsCX:      ep.GetConnectionScoped(),
		clsByID:    ep.GetAddressedById(),
	}
	if want, ok := agree[class]; ok && !want {
		t.Errorf("%s is listed as %s, but its annotation says otherwise: %v", name, class, ep)
	}
	if class != clsByID && ep.GetAddressedById() || class != clsCX && ep.GetConnectionScoped() {
		t.Errorf("%s is annotated %v but listed as %s", name, ep, class)
	}
	var verb, path string
	switch p := rule.GetPattern().(type) {
	case *annotations.HttpRule_Get:
		verb, path = "GET", p.Get
	case *annotations.HttpRule_Post:
		verb, path = "POST", p.Post
	case *annotations.HttpRule_Put:
		verb, path = "PUT", p.Put
	case *annotations.HttpRule_Patch:
		verb, path = "PATCH", p.Patch
	case *annotations.HttpRule_Delete:
		verb, path = "DELETE", p.Delete
	}
	body := ""
	if rule.GetBody() != "" {
		body = "{}"
	}
	sample := samples[name]
	if sample.body != "" {
		body = sample.body
	}
	if sample.query != "" {
		path += "?" + sample.query
	}
	hasConn := md.Input().Fields().ByName("connection_id") != nil
	fresh := verb == "DELETE" || strings.HasSuffix(path, "/revoke") || strings.HasSuffix(path, "/rotate") || name == "AccountService/SignOut"
	n := 0
	variants := []string{"own"}
	if class == clsByID {
		variants = append(variants, "other tenant", "other mode")
	}
	for _, variant := range variants {
		me.ids = me.variants[variant]
		n += me.checkCells(t, name, class, variant, md, ep, verb, path, body, hasConn, fresh)
	}
	me.ids = me.variants["own"]
	return n
}

// checkCells sends the method's request as every kind of credential, naming the resources of
// the variant: the dev user's own (test tenant), another user's, or the dev user's other mode.
func (me *matrixEnv) checkCells(t *testing.T, name, class, variant string, md protoreflect.MethodDescriptor, ep *svcv1.Endpoint,
	verb, path, body string, hasConn, fresh bool) int {
	n := 0
	for _, kind := range credKinds {
		if usesConnection[kind] && !hasConn {
			continue
		}
		p, hasID := me.target(md, path, fresh)
		if variant != "own" && !me.exists(p) {
			return n // no such resource anywhere (meters, trials)
		}
		hdr, cxn := me.creds(kind, ep.GetOperationClass())
		if name == "AccountService/SignOut" && (kind == crSessionLive || kind == crSessionTest || kind == crOtherUser) {
			me.signouts++
			hdr = me.signUp(t, fmt.Sprintf("signout-%d@example.com", me.signouts))
		}
		if cxn != "" {
			sep := "?"
			if strings.Contains(p, "?") {
				sep = "&"
			}
			p += sep + "connection_id=" + cxn
		}
		want := expected(class, kind, hasID, ep.GetOperationClass())
		if x, ok := exceptions[name][kind]; ok {
			want = x
		}
		if variant != "own" {
			want = expectedElsewhere(variant, kind, ep.GetOperationClass())
		}
		if class == clsByID && want == "pass" && !me.exists(p) && cxn == "" {
			// The resource does not exist (meters, trials): resolving its id is a miss for
			// everyone. Through a connection the handler answers (501 until intel lands).
			want = "404"
		}
		r := me.do(verb, p, body, hdr...)
		if got := outcome(r); got != want {
			t.Errorf("%s %s as %s: %s (%d %s), want %s", verb, p, kind, got, r.status, truncate(r.body), want)
		}
		n++
	}
	return n
}

// expectedElsewhere is the table for a resource that is not the dev user's test-mode one:
// another user's, or the dev user's in live mode. Only its owner reaches it; a key's own scopes
// and a connection's classes are still checked first (403, which says nothing about the id).
func expectedElsewhere(variant, cred, op string) string {
	switch cred {
	case crNone:
		return "401"
	case crNarrowKey, crPartialCxn:
		if op != "" {
			return "403"
		}
	case crOtherUser:
		if variant == "other tenant" {
			return "pass"
		}
	case crSessionLive, crSessionTest:
		if variant == "other mode" {
			return "pass"
		}
	}
	return "404"
}

// exists reports whether the own resource a by-id path names exists.
func (me *matrixEnv) exists(path string) bool {
	return !strings.Contains(path, "_01JD0000000000000000000000")
}

func truncate(b []byte) string {
	if len(b) > 160 {
		return string(b[:160]) + "..."
	}
	return string(b)
}

// The by-id rule across the resource a request names: another tenant's, the same user's other
// mode, and outside a connection's sources (issue 13).
func TestResourcesAddressedByIDAcrossTenants(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	otherUser := platform.Tenant{Owner: "usr_01JD0000000000000000000001", Mode: platform.ModeTest}
	theirs := e.putPlans(otherUser, 1, nil)[0]
	liveMine := e.putPlans(platform.Tenant{Owner: e.creds.UserID, Mode: platform.ModeLive}, 1, nil)[0]
	testMine := e.putPlans(e.userTestTenant(), 1, nil)[0]
	_, liveKey, err := e.srv.Developers().CreateKey(ctx, e.creds.ApplicationID, platform.ModeLive, nil)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		plan string
		hdr  []string
		want int
	}{
		{theirs, e.key(), 404},
		{theirs, e.liveKey(), 404},
		{theirs, e.session(), 404},
		{theirs, with(e.session(), "Svc-Mode", "test"), 404},
		{liveMine, e.key(), 404},                                        // other mode
		{liveMine, []string{"Authorization", "Bearer " + liveKey}, 404}, // no live connection to the user
		{liveMine, e.session(), 200},
		{liveMine, with(e.session(), "Svc-Mode", "test"), 200}, // the user's own, either tenant
		{testMine, e.key(), 200},
		{testMine, e.session(), 200},
		{testMine, e.liveKey(), 404},
	}
	for _, c := range cases {
		r := e.do("GET", "/v1/plans/"+c.plan, "", c.hdr...)
		if r.status != c.want {
			t.Errorf("GET plan %s as %v: %d %s, want %d", c.plan, c.hdr[0], r.status, r.body, c.want)
		}
	}
	// connection_id still narrows: another tenant's plan through the connection is 404.
	checkProblem(t, e.do("GET", "/v1/plans/"+theirs+"?connection_id="+e.creds.ConnectionID, "", e.key()...), 404, "not_found")

	// Live mode works the same: once the application holds a live connection to the user, its
	// live key reaches the user's live plan without connection_id, and the test key still not.
	if _, err := e.srv.Developers().Connect(ctx, e.creds.ApplicationID, e.creds.UserID, platform.ModeLive,
		platform.Grant{OperationClasses: []string{"discover"}}); err != nil {
		t.Fatal(err)
	}
	if r := e.do("GET", "/v1/plans/"+liveMine, "", "Authorization", "Bearer "+liveKey); r.status != 200 {
		t.Fatalf("live key through a live connection: %d %s", r.status, r.body)
	}
	checkProblem(t, e.do("GET", "/v1/plans/"+liveMine, "", e.key()...), 404, "not_found")
	checkProblem(t, e.do("POST", "/v1/plans/"+liveMine+"/cancel", "", "Authorization", "Bearer "+liveKey), 404, "not_found") // grant without preserve
}

// A refusal by id costs what a miss costs (issue 13): the same store reads happen either way.
// Medians of interleaved requests must agree within a factor of two (the machine may be shared,
// so the bound is loose; it catches a refusal doing other work than a miss).
func TestRefusalByIDCostsWhatAMissCosts(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	// Many connections of the application, so that a path reading them would show.
	for range 200 {
		if _, err := e.srv.Developers().Connect(ctx, e.creds.ApplicationID, "usr_01JD0000000000000000000009", platform.ModeTest,
			platform.Grant{OperationClasses: []string{"discover"}}); err != nil {
			t.Fatal(err)
		}
	}
	theirs := e.putPlans(platform.Tenant{Owner: "usr_01JD0000000000000000000001", Mode: platform.ModeTest}, 1, nil)[0]
	miss := "pln_01JD0000000000000000000000"
	const n = 300
	var hit, missed []time.Duration
	for range n {
		for _, c := range []struct {
			id  string
			out *[]time.Duration
		}{{theirs, &hit}, {miss, &missed}} {
			start := time.Now()
			r := e.do("GET", "/v1/plans/"+c.id, "", e.key()...)
			*c.out = append(*c.out, time.Since(start))
			if r.status != 404 {
				t.Fatalf("%s: %d", c.id, r.status)
			}
		}
	}
	median := func(d []time.Duration) time.Duration { slices.Sort(d); return d[len(d)/2] }
	mh, mm := median(hit), median(missed)
	t.Logf("median refusal %v, median miss %v", mh, mm)
	if mh > 2*mm || mm > 2*mh {
		t.Fatalf("a refusal (%v) and a miss (%v) are told apart by their time", mh, mm)
	}
}

// Every route that reaches an end user's state (the caller's tenant, a connection's user, a
// resource named by id) has an operation class, so a key's scopes and a connection's grant
// decide it; a route without one fails here (issue 21, 8: GET /v1/jobs listed the jobs a
// restore-only key could not read one by one).
func TestEveryTenantRouteHasAnOperationClass(t *testing.T) {
	for name, cls := range matrixClass {
		if cls != clsCX && cls != clsByID && cls != clsTenant {
			continue
		}
		service, method, _ := strings.Cut(name, "/")
		d, err := protoregistry.GlobalFiles.FindDescriptorByName(protoreflect.FullName("svc.v1." + service))
		if err != nil {
			t.Fatal(err)
		}
		md := d.(protoreflect.ServiceDescriptor).Methods().ByName(protoreflect.Name(method))
		if ep, _ := proto.GetExtension(md.Options(), svcv1.E_Endpoint).(*svcv1.Endpoint); ep.GetOperationClass() == "" {
			t.Errorf("%s reaches an end user's state (%s) with no operation class", name, cls)
		}
	}
}

// A key scoped to restore lists no jobs (it could not read one by id either), and a key
// scoped to discover lists no events.
func TestListsFollowTheKeysScopes(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	_, restoreKey, err := e.srv.Developers().CreateKey(ctx, e.creds.ApplicationID, platform.ModeTest, []string{"restore"})
	if err != nil {
		t.Fatal(err)
	}
	bearer := func(k string) []string { return []string{"Authorization", "Bearer " + k} }
	checkProblem(t, e.do("GET", "/v1/jobs", "", bearer(restoreKey)...), 403, "forbidden")
	checkProblem(t, e.do("GET", "/v1/events", "", bearer(restoreKey)...), 403, "forbidden")
	if r := e.do("GET", "/v1/jobs", "", e.key()...); r.status != 200 {
		t.Fatalf("a full key lists jobs: %d %s", r.status, r.body)
	}
}
