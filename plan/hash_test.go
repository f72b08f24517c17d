package plan_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/gowebpki/jcs"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"
	"pgregory.net/rapid"

	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/plan"
	"svc.dev/svc/wire"
)

var update = flag.Bool("update", false, "rewrite testdata golden files")

// genObjects draws a realistic listing.
func genObjects(t *rapid.T) []plan.Object {
	n := rapid.IntRange(0, 40).Draw(t, "n")
	objs := make([]plan.Object, n)
	for i := range objs {
		objs[i] = plan.Object{
			ID:              fmt.Sprintf("obj-%d-%s", i, rapid.StringMatching(`[a-z0-9]{0,6}`).Draw(t, "id")),
			Version:         rapid.SampledFrom([]string{"", "v1", "etag-\"x\""}).Draw(t, "ver"),
			Kind:            rapid.SampledFrom([]string{"message", "attachment", "file", "photo"}).Draw(t, "kind"),
			Name:            rapid.String().Draw(t, "name"),
			SizeBytes:       rapid.Int64Range(0, 50<<20).Draw(t, "size"),
			SHA256:          rapid.SampledFrom([]string{"", "aa", "bb", hex.EncodeToString(make([]byte, 32))}).Draw(t, "sha"),
			ModifiedAt:      now.Add(-time.Duration(rapid.Int64Range(0, 800).Draw(t, "days")) * 24 * time.Hour),
			Starred:         rapid.Bool().Draw(t, "star"),
			From:            rapid.SampledFrom([]string{"", "a@x.com", "News <n@promo.example>"}).Draw(t, "from"),
			ListUnsubscribe: rapid.SampledFrom([]string{"", "<mailto:u@x>"}).Draw(t, "unsub"),
			Containers:      rapid.SliceOfN(rapid.SampledFrom([]string{"inbox", "Promotions", "Work"}), 0, 2).Draw(t, "labels"),
		}
	}
	return objs
}

func genRequest(t *rapid.T) plan.Request {
	req := request(&svcv1.SourcePolicy{
		MinAgeDays:        rapid.Ptr(rapid.Int64Range(0, 400), true).Draw(t, "minAge"),
		ExcludeStarred:    rapid.Ptr(rapid.Bool(), true).Draw(t, "exStar"),
		ExcludeLabels:     rapid.SliceOfN(rapid.SampledFrom([]string{"work", "inbox"}), 0, 1).Draw(t, "exLabels"),
		RemovePromotional: rapid.Ptr(rapid.Bool(), true).Draw(t, "promo"),
	}, genObjects(t)...)
	req.Sources[0].Objects.(*pages).n = rapid.IntRange(1, 7).Draw(t, "pageSize")
	if rapid.Bool().Draw(t, "billing") {
		req.Billing = &plan.Billing{CeilingCents: 10000, CanBill: true, Usage: plan.Usage{Plans: rapid.Int64Range(0, 200).Draw(t, "plans")}}
	}
	return req
}

func buildR(t *rapid.T, req plan.Request) *svcv1.Plan {
	p, err := plan.Build(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func mustHash(t interface{ Fatal(...any) }, p *svcv1.Plan) string {
	h, err := plan.Hash(p)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// The hash is independent of listing order and paging, and equal to the hash recomputed by
// an independent JCS from the served JSON; the fast object encoder writes exactly the generic
// canonical bytes; JSON round trips keep the hash.
func TestHashProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		req := genRequest(t)
		p := buildR(t, req)

		// Listing order and page size do not matter.
		objs := req.Sources[0].Objects.(*pages).objs
		shuffled := rapid.Permutation(objs).Draw(t, "perm")
		req2 := req
		req2.Sources = []plan.Source{req.Sources[0]}
		req2.Sources[0].Objects = &pages{objs: shuffled, n: rapid.IntRange(1, 9).Draw(t, "n2"), marker: plan.Marker{Kind: "history_id", Value: "h1"}}
		if h2 := mustHash(t, buildR(t, req2)); h2 != p.Hash {
			t.Fatalf("listing order changed the hash: %s vs %s", h2, p.Hash)
		}

		// Served JSON -> material members -> independent JCS -> SHA-256.
		served, err := wire.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		if got := independentHash(t, served); got != p.Hash {
			t.Fatalf("independent recomputation %s, served hash %s", got, p.Hash)
		}

		// Fast path = generic canonical encoder.
		var fast bytes.Buffer
		if err := plan.WriteMaterial(&fast, p); err != nil {
			t.Fatal(err)
		}
		if generic := independentCanon(t, p); !bytes.Equal(fast.Bytes(), generic) {
			t.Fatalf("fast and generic canonical bytes differ")
		}

		// Round trip.
		var back svcv1.Plan
		if err := wire.Unmarshal(served, &back); err != nil {
			t.Fatal(err)
		}
		if mustHash(t, &back) != p.Hash {
			t.Fatal("JSON round trip changed the hash")
		}
	})
}

// independentCanon is the canonical JSON of a plan's material members made from its served JSON
// by gowebpki/jcs, the way docs/plans.md tells a third party to.
func independentCanon(t interface{ Fatal(...any) }, p *svcv1.Plan) []byte {
	served, err := wire.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	return canonOf(t, served)
}

func independentHash(t interface{ Fatal(...any) }, served []byte) string {
	sum := sha256.Sum256(canonOf(t, served))
	return hex.EncodeToString(sum[:])
}

func canonOf(t interface{ Fatal(...any) }, served []byte) []byte {
	var all map[string]json.RawMessage
	if err := json.Unmarshal(served, &all); err != nil {
		t.Fatal(err)
	}
	material := map[string]json.RawMessage{}
	for _, k := range plan.MaterialFields {
		material[k] = all[k]
	}
	// storageClassReason explains an object's class and is not material (docs/plans.md).
	var objs []map[string]json.RawMessage
	if err := json.Unmarshal(all["objects"], &objs); err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		delete(o, "storageClassReason")
	}
	material["objects"], _ = json.Marshal(objs)
	js, _ := json.Marshal(material)
	canon, err := jcs.Transform(js)
	if err != nil {
		t.Fatal(err)
	}
	return canon
}

// Each material field, changed, changes the hash; each non-material field does not.
func TestHashCoversExactlyTheMaterialFields(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		req := genRequest(t)
		req.Destination = &svcv1.Destination{DestinationId: "dst_01JD0000000000000000000000", Provider: svcv1.Provider_PROVIDER_SVC_VAULT, Label: "Vault"}
		req.Billing = &plan.Billing{CeilingCents: 10000, CanBill: true}
		base := buildR(t, req)
		if len(base.Objects) == 0 || len(base.Excluded) == 0 {
			base.Objects = append(base.Objects, &svcv1.PlanObject{AssetId: "ast_01JD0000000000000000000000", SourceId: "src_x", ProviderObjectId: "x", Actions: []svcv1.PlanAction{1}})
			base.Excluded = append(base.Excluded, &svcv1.Exclusion{AssetId: "ast_01JD0000000000000000000001", Reason: 1})
		}
		h0 := mustHash(t, base)
		material := map[string]func(p *svcv1.Plan){
			"planVersion": func(p *svcv1.Plan) { p.PlanVersion = "2" },
			"tenantId":    func(p *svcv1.Plan) { p.TenantId += "x" },
			"userId":      func(p *svcv1.Plan) { p.UserId += "x" },
			"actor":       func(p *svcv1.Plan) { p.Actor.PrincipalId += "x" },
			"intent":      func(p *svcv1.Plan) { p.Intent = svcv1.PlanIntent_PLAN_INTENT_RESCUE },
			"operationClasses": func(p *svcv1.Plan) {
				p.OperationClasses = append(p.OperationClasses, svcv1.OperationClass_OPERATION_CLASS_MONITOR)
			},
			"simulated":     func(p *svcv1.Plan) { p.Simulated = !p.Simulated },
			"sourceMarkers": func(p *svcv1.Plan) { p.SourceMarkers[0].Value += "x" },
			"objects":       func(p *svcv1.Plan) { p.Objects[0].ExpectedSizeBytes++ },
			"objects.version": func(p *svcv1.Plan) {
				p.Objects[0].ExpectedVersion = proto.String(p.Objects[0].GetExpectedVersion() + "x")
			},
			"objects.actions": func(p *svcv1.Plan) {
				p.Objects[0].Actions = append(p.Objects[0].Actions, svcv1.PlanAction_PLAN_ACTION_NOOP)
			},
			"excluded":             func(p *svcv1.Plan) { p.Excluded[0].Detail += "x" },
			"destination":          func(p *svcv1.Plan) { p.Destination.Label += "x" },
			"preservationRequired": func(p *svcv1.Plan) { p.PreservationRequired = !p.PreservationRequired },
			"projection":           func(p *svcv1.Plan) { p.Projection.BytesToRemove++ },
			"meter":                func(p *svcv1.Plan) { p.Meter.EstimatedCents++ },
		}
		name := rapid.SampledFrom(keys(material)).Draw(t, "material")
		p := proto.Clone(base).(*svcv1.Plan)
		material[name](p)
		if mustHash(t, p) == h0 {
			t.Fatalf("changing %s kept the hash", name)
		}
		other := map[string]func(p *svcv1.Plan){
			"planId":                     func(p *svcv1.Plan) { p.PlanId = "pln_01JD0000000000000000000009" },
			"createdAt":                  func(p *svcv1.Plan) { p.CreatedAt = timestamppb.New(now.Add(time.Hour)) },
			"expiresAt":                  func(p *svcv1.Plan) { p.ExpiresAt = timestamppb.New(now.Add(time.Hour)) },
			"policy":                     func(p *svcv1.Plan) { p.Policy.Decision = svcv1.PolicyDecision_POLICY_DECISION_DENY },
			"state":                      func(p *svcv1.Plan) { p.State = svcv1.PlanState_PLAN_STATE_AUTHORIZED },
			"hash":                       func(p *svcv1.Plan) { p.Hash = "x" },
			"authorization":              func(p *svcv1.Plan) { p.Authorization = &svcv1.PlanAuthorization{AuthorizedBy: "usr_x"} },
			"objects.storageClassReason": func(p *svcv1.Plan) { p.Objects[0].StorageClassReason += " (reworded)" },
		}
		name = rapid.SampledFrom(keys(other)).Draw(t, "other")
		p = proto.Clone(base).(*svcv1.Plan)
		other[name](p)
		if mustHash(t, p) != h0 {
			t.Fatalf("changing %s (not material) changed the hash", name)
		}
	})
}

func keys[V any](m map[string]V) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// Golden vectors: fixed plans and their hashes, so that the hash is the same in every run,
// process and release (a change here breaks every stored plan's hash).
func TestHashGoldenVectors(t *testing.T) {
	path := filepath.Join("testdata", "hash_vectors.json")
	type vector struct {
		Plan json.RawMessage `json:"plan"`
		Hash string          `json:"hash"`
	}
	if *update {
		var vs []vector
		for seed := range 4 {
			req := goldenRequest(seed)
			p, err := plan.Build(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			js, _ := wire.Marshal(p)
			vs = append(vs, vector{Plan: js, Hash: p.Hash})
		}
		data, _ := json.MarshalIndent(vs, "", "  ")
		os.WriteFile(path, data, 0o644)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var vs []vector
	if err := json.Unmarshal(data, &vs); err != nil || len(vs) == 0 {
		t.Fatalf("vectors: %v", err)
	}
	for i, v := range vs {
		var p svcv1.Plan
		if err := wire.Unmarshal(v.Plan, &p); err != nil {
			t.Fatal(err)
		}
		if h := mustHash(t, &p); h != v.Hash {
			t.Errorf("vector %d: hash %s, want %s", i, h, v.Hash)
		}
		if h := independentHash(t, v.Plan); h != v.Hash {
			t.Errorf("vector %d: independent hash %s, want %s", i, h, v.Hash)
		}
		// Building the same request again gives the same hash.
		if p2, _ := plan.Build(context.Background(), goldenRequest(i)); p2.Hash != v.Hash {
			t.Errorf("vector %d: rebuilt hash %s, want %s", i, p2.Hash, v.Hash)
		}
	}
}

func goldenRequest(seed int) plan.Request {
	var objs []plan.Object
	for i := range 5 + seed*3 {
		objs = append(objs, obj(func(o *plan.Object) {
			o.ID = fmt.Sprintf("msg-%d-%d", seed, i)
			o.From = "digest@news.example.com" // a sender, not a person: the vectors predate conversations
			o.SizeBytes = int64(1000 * (i + 1) * (seed + 1))
			o.ModifiedAt = now.AddDate(0, -i*2, 0)
			o.Starred = i%4 == 3
			if i%3 == 0 {
				o.ListUnsubscribe = "<mailto:unsub@example.com>"
				o.Facts = map[string]string{"mail.precedence": "bulk"} // bulk and unsubscribable: marketing
			}
			if i%5 == 4 {
				o.SHA256 = "0f"
			}
		}))
	}
	req := request(&svcv1.SourcePolicy{MinAgeDays: i64(int64(30 * seed)), RemovePromotional: proto.Bool(seed%2 == 0)}, objs...)
	if seed == 3 {
		req.Billing = &plan.Billing{CeilingCents: 10000, CanBill: true, Usage: plan.Usage{Plans: 150}}
		req.Actor = &svcv1.Actor{Type: svcv1.ActorType_ACTOR_TYPE_DEVELOPER_APPLICATION, PrincipalId: "key_01JD0000000000000000000000", ApplicationId: proto.String("app_01JD0000000000000000000000")}
	}
	return req
}

// Large plans are encoded in parallel chunks: the bytes must still be the generic encoder's.
func TestParallelObjectEncodingMatchesGeneric(t *testing.T) {
	p := &svcv1.Plan{PlanVersion: "1", Actor: &svcv1.Actor{Type: 1, PrincipalId: "u"}, Projection: &svcv1.Projection{}}
	for i := range 20_000 {
		o := &svcv1.PlanObject{AssetId: fmt.Sprintf("ast_%026d", i), SourceId: "src_x", Provider: svcv1.Provider_PROVIDER_SIMULATED,
			ProviderObjectId: fmt.Sprintf("obj-%d-\u00e9\"\\", i), ExpectedSizeBytes: int64(i) * 1000, StorageClass: svcv1.StorageClass(1 + i%9),
			Actions: []svcv1.PlanAction{1, svcv1.PlanAction(2 + i%6)}, PreservationElected: i%2 == 0}
		if i%3 == 0 {
			o.ExpectedVersion = proto.String(fmt.Sprint("v", i))
			o.ExpectedSha256 = proto.String(fmt.Sprintf("%064x", i))
		}
		p.Objects = append(p.Objects, o)
	}
	var fast bytes.Buffer
	if err := plan.WriteMaterial(&fast, p); err != nil {
		t.Fatal(err)
	}
	if generic := independentCanon(t, p); !bytes.Equal(fast.Bytes(), generic) {
		t.Fatalf("parallel encoding differs from the generic canonical bytes")
	}
	// An invalid object anywhere fails the hash, whatever chunk it is in.
	p.Objects[15_000].Actions = []svcv1.PlanAction{99}
	if _, err := plan.Hash(p); err == nil {
		t.Fatal("an action without a name hashed")
	}
}
