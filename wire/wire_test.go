package wire_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"
	"pgregory.net/rapid"

	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/wire"
)

func TestMarshalAccount(t *testing.T) {
	acct := &svcv1.Account{
		Id:               "usr_01JD0000000000000000000000",
		Email:            "a@example.com",
		Locale:           svcv1.Locale_LOCALE_ES,
		Status:           svcv1.AccountStatus_ACCOUNT_STATUS_ACTIVE,
		Plan:             "free",
		CreatedAt:        timestamppb.New(time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)),
		SourcesConnected: 3,
		VaultBytes:       1 << 40,
	}
	got, err := wire.Marshal(acct)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"id":"usr_01JD0000000000000000000000","email":"a@example.com","display_name":null,"locale":"es","status":"active","plan":"free","created_at":"2026-11-22T10:00:00Z","sources_connected":3,"vault_bytes":1099511627776,"developer":null}`
	if string(got) != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
	var back svcv1.Account
	if err := wire.Unmarshal(got, &back); err != nil {
		t.Fatal(err)
	}
	if !proto.Equal(acct, &back) {
		t.Fatalf("round trip changed the message: %v", &back)
	}
}

func TestMarshalStructAndEscapes(t *testing.T) {
	res, _ := structpb.NewStruct(map[string]any{"b": 1.5, "a": []any{"x\n\"<y>", nil, true}, "n": 1e21})
	job := &svcv1.Job{Id: "job_01JD0000000000000000000000", Kind: svcv1.JobKind_JOB_KIND_SEED, Status: svcv1.JobStatus_JOB_STATUS_RUNNING, Progress: 40, Result: res}
	got, err := wire.Marshal(job)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(got), `"result":{"a":["x\n\"<y>",null,true],"b":1.5,"n":1e+21}`) {
		t.Fatalf("struct not plain sorted JSON: %s", got)
	}
	if !strings.Contains(string(got), `"error":null`) || !strings.Contains(string(got), `"created_at":null`) {
		t.Fatalf("unset presence fields must be null: %s", got)
	}
}

func TestUnmarshalErrors(t *testing.T) {
	cases := []struct {
		body, path, msg string
	}{
		{`{"display_name":`, "", "malformed JSON"},
		{`[]`, "", "must be a JSON object"},
		{`{"nick":"x"}`, "nick", "unknown field"},
		{`{"displayName":"x"}`, "displayName", "unknown field"},
		{`{"display_name":5}`, "display_name", "must be a string"},
		{`{"locale":"fr"}`, "locale", "must be one of en, es"},
		{`{"locale":"LOCALE_EN"}`, "locale", "must be one of en, es"},
		{"{\"display_name\":\"a\xff\"}", "", "not valid UTF-8"},
		{`{"display_name":"a","display_name":"b"}`, "display_name", "appears more than once"},
		{`{"locale":"en","display_name":"a","locale":"es"}`, "locale", "appears more than once"},
	}
	for _, c := range cases {
		var req svcv1.UpdateAccountRequest
		err := wire.Unmarshal([]byte(c.body), &req)
		var we *wire.Error
		if !errors.As(err, &we) {
			t.Fatalf("%s: got %v, want *wire.Error", c.body, err)
		}
		if we.Path != c.path || !strings.Contains(we.Msg, c.msg) {
			t.Errorf("%s: got path %q msg %q, want %q %q", c.body, we.Path, we.Msg, c.path, c.msg)
		}
	}
	var job svcv1.Job
	for body, path := range map[string]string{
		`{"progress":"40"}`:                "progress",
		`{"progress":4.5}`:                 "progress",
		`{"progress":99999999999}`:         "progress",
		`{"created_at":"yesterday"}`:       "created_at",
		`{"result":[1]}`:                   "result",
		`{"sources_connected":1}`:          "sources_connected",
		`{"kind":null,"status":"nope"}`:    "status",
		`{"result":{"a":1},"error":true}`:  "error",
		`{"result":{"a":1,"a":2}}`:         "result.a",
		`{"result":{"l":[{"x":1,"x":1}]}}`: "result.l[0].x",
	} {
		err := wire.Unmarshal([]byte(body), &job)
		var we *wire.Error
		if !errors.As(err, &we) || we.Path != path {
			t.Errorf("%s: got %v, want an error at %q", body, err, path)
		}
	}
}

func TestUnmarshalNullLeavesUnset(t *testing.T) {
	var req svcv1.UpdateAccountRequest
	if err := wire.Unmarshal([]byte(`{"display_name":null,"locale":"en"}`), &req); err != nil {
		t.Fatal(err)
	}
	if req.DisplayName != nil || req.GetLocale() != svcv1.Locale_LOCALE_EN {
		t.Fatalf("got %v", &req)
	}
}

// The codec round-trips any account, and its output is stable.
func TestRoundTripProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		a := &svcv1.Account{
			Id:               "usr_" + rapid.StringMatching(`[0-9A-HJKMNP-TV-Z]{26}`).Draw(t, "id"),
			Email:            rapid.String().Draw(t, "email"),
			Locale:           svcv1.Locale(rapid.IntRange(1, 2).Draw(t, "locale")),
			Status:           svcv1.AccountStatus(rapid.IntRange(1, 3).Draw(t, "status")),
			Plan:             rapid.StringN(0, 20, -1).Draw(t, "plan"),
			CreatedAt:        timestamppb.New(time.Unix(rapid.Int64Range(0, 1<<35).Draw(t, "sec"), rapid.Int64Range(0, 999999999).Draw(t, "ns"))),
			SourcesConnected: rapid.Int64().Draw(t, "n"),
			VaultBytes:       rapid.Int64().Draw(t, "bytes"),
		}
		if rapid.Bool().Draw(t, "hasName") {
			a.DisplayName = proto.String(rapid.String().Draw(t, "name"))
		}
		if rapid.Bool().Draw(t, "hasDev") {
			a.Developer = &svcv1.AccountDeveloper{OrgIds: rapid.SliceOf(rapid.String()).Draw(t, "orgs")}
		}
		b1, err := wire.Marshal(a)
		if err != nil {
			t.Fatal(err)
		}
		var back svcv1.Account
		if err := wire.Unmarshal(b1, &back); err != nil {
			t.Fatalf("%s: %v", b1, err)
		}
		if !proto.Equal(a, &back) {
			t.Fatalf("round trip changed %v into %v", a, &back)
		}
		b2, _ := wire.Marshal(&back)
		if string(b1) != string(b2) {
			t.Fatalf("unstable output:\n%s\n%s", b1, b2)
		}
	})
}
