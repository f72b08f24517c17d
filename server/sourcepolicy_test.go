package server_test

import (
	"encoding/json"
	"maps"
	"slices"
	"testing"

	"buf.build/gen/go/bufbuild/protovalidate/protocolbuffers/go/buf/validate"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/wire"
)

// specNullable is what the spec's Source table marks (n): the only members of a Source, and of
// its quota, that may be null. The spec's Source policy has none: "All fields optional".
var specNullable = map[string][]string{
	"source": {"email", "last_scan_at", "last_delta_marker", "connected_via_application_id", "connection_id", "quota"},
	"quota":  {"limit_bytes", "growth_bytes_per_day", "projected_full_at"},
}

// checkSourceAsSpecified fails on a served Source member that is null where the spec does not
// allow it, and on a policy member that is null or an empty string (the spec's policy members
// are optional, none nullable, and its enums have no empty value).
func checkSourceAsSpecified(t *testing.T, src map[string]any) {
	t.Helper()
	for k, v := range src {
		if v == nil && !slices.Contains(specNullable["source"], k) {
			t.Errorf("source %v: %s is null; the spec does not mark it (n)", src["id"], k)
		}
	}
	if q, ok := src["quota"].(map[string]any); ok {
		for k, v := range q {
			if v == nil && !slices.Contains(specNullable["quota"], k) {
				t.Errorf("source %v: quota.%s is null; the spec does not mark it (n)", src["id"], k)
			}
		}
	}
	pol, ok := src["policy"].(map[string]any)
	if !ok {
		t.Fatalf("source %v: policy %v is not an object", src["id"], src["policy"])
	}
	for k, v := range pol {
		if s, isString := v.(string); v == nil || (isString && s == "") {
			t.Errorf("source %v: policy.%s is %#v; unset members must be absent", src["id"], k, v)
		}
	}
}

// PUT /v1/sources/{id}/policy and every Source serve the policy as the spec writes it: an unset
// member is absent, never null or "", and an enum's empty value is a 400 that changes nothing.
func TestSourcePolicyServedAsTheSpecWritesIt(t *testing.T) {
	e := newPlanEnv(t, 1)
	put := func(body string) map[string]any {
		t.Helper()
		r := e.do("PUT", "/v1/sources/"+e.source+"/policy"+e.cx(), body, e.key()...)
		if r.status != 200 {
			t.Fatalf("PUT %s: %d %s", body, r.status, r.body)
		}
		src := r.json(t)
		checkSourceAsSpecified(t, src)
		return src["policy"].(map[string]any)
	}
	if pol := put(`{}`); !slices.Equal(slices.Sorted(maps.Keys(pol)), []string{"version"}) {
		t.Errorf("empty policy served as %v, want only the version the server gives it", pol)
	}
	full := `{"minAgeDays":30,"minSizeBytes":1024,"excludeSenders":["a@b.example"],"excludeDomains":["b.example"],` +
		`"excludeLabels":["Kids"],"excludeFolders":["Archive"],"excludeStarred":false,"excludeShared":true,"excludeRecentDays":7,` +
		`"preserveMimeTypes":["application/pdf"],"preserveKeywords":["invoice"],"removePromotional":true,` +
		`"duplicateHandling":"keep_oldest","sourceAction":"trash","preservation":"vault_all"}`
	pol := put(full)
	var want map[string]any
	json.Unmarshal([]byte(full), &want)
	for k, v := range want {
		got, _ := json.Marshal(pol[k])
		exp, _ := json.Marshal(v)
		if string(got) != string(exp) {
			t.Errorf("policy.%s = %s, want %s", k, got, exp)
		}
	}
	for _, bad := range []string{`{"duplicateHandling":""}`, `{"sourceAction":""}`, `{"preservation":""}`, `{"minAgeDays":null,"duplicateHandling":""}`} {
		checkProblem(t, e.do("PUT", "/v1/sources/"+e.source+"/policy"+e.cx(), bad, e.key()...), 400, "validation_failed")
	}
	r := e.do("GET", "/v1/sources/"+e.source+e.cx(), "", e.key()...)
	checkSourceAsSpecified(t, r.json(t))
	if got := r.json(t)["policy"].(map[string]any); got["duplicateHandling"] != "keep_oldest" || got["minAgeDays"] != float64(30) {
		t.Errorf("a rejected PUT changed the policy: %v", got)
	}
	var list struct {
		Data []map[string]any `json:"data"`
	}
	json.Unmarshal(e.do("GET", "/v1/sources"+e.cx(), "", e.key()...).body, &list)
	if len(list.Data) == 0 {
		t.Fatal("no sources listed")
	}
	for _, src := range list.Data {
		checkSourceAsSpecified(t, src)
	}
}

// Every member of the Source policy message is optional and not nullable on the wire, and no
// enum member accepts its unspecified (empty) value: the spec's "All fields optional", checked
// on the descriptors so a member added later cannot serve null.
func TestSourcePolicyMembersAreOptionalNotNullable(t *testing.T) {
	md := (&svcv1.SourcePolicy{}).ProtoReflect().Descriptor()
	for i := range md.Fields().Len() {
		fd := md.Fields().Get(i)
		if omit, _ := proto.GetExtension(fd.Options(), svcv1.E_OmitUnset).(bool); !omit {
			t.Errorf("policy.%s has no (omit_unset): unset, it would be written as null", wire.JSONName(fd))
		}
		if fd.Kind() == protoreflect.EnumKind {
			r, _ := proto.GetExtension(fd.Options(), validate.E_Field).(*validate.FieldRules)
			if !slices.Contains(r.GetEnum().GetNotIn(), 0) {
				t.Errorf("policy.%s accepts its unspecified value, which the wire writes as \"\"", wire.JSONName(fd))
			}
		}
	}
	b, err := wire.Marshal(&svcv1.SourcePolicy{})
	if err != nil || string(b) != "{}" {
		t.Errorf("an empty policy is %s (%v), want {}", b, err)
	}
}
