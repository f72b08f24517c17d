package receipt_test

import (
	"bytes"
	"crypto/ed25519"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"pgregory.net/rapid"

	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/receipt"
	"svc.dev/svc/wire"
)

var update = flag.Bool("update", false, "rewrite testdata golden files")

var t0 = time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)

// exampleSeed is the secret key of RFC 8032 section 7.1 test 1: a fixed key for the golden
// example and docs/receipts.md. Never a production key.
var exampleSeed, _ = hex.DecodeString("9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60")

func exampleSigner() *receipt.KeySigner {
	return receipt.NewKeySigner(ed25519.NewKeyFromSeed(exampleSeed))
}

func i64(n int64) *int64 { return &n }

const sha1 = "2c26b46b68ffc68ff99b453c1d30413413422d706483bfa0f98a5e886266e7ae" // SHA-256("foo")

// fullInput has every field set, nullable ones included, so that the served JSON has every
// member the spec defines with a value.
func fullInput() receipt.Input {
	until := t0.Add(30 * 24 * time.Hour)
	return receipt.Input{
		ReceiptID:   "rcp_01JD8Y5Q6R7S8T9V0W1X2Y3Z4A",
		ExecutionID: "exe_01JD8Y5Q6R7S8T9V0W1X2Y3Z4B",
		PlanID:      "pln_01JD8Y5Q6R7S8T9V0W1X2Y3Z4C",
		PlanHash:    "5c1c1bb3c4b0e9f9b1a4f0b8d1e2c3a4b5c6d7e8f9a0b1c2d3e4f5a6b7c8d9e0",
		TenantRef:   "tnt_test_01JD8Y5Q6R7S8T9V0W1X2Y3Z4D",
		Actor: &svcv1.Actor{Type: svcv1.ActorType_ACTOR_TYPE_DEVELOPER_APPLICATION, PrincipalId: "key_01JD8Y5Q6R7S8T9V0W1X2Y3Z4E",
			DelegatingUserId: proto.String("usr_01JD8Y5Q6R7S8T9V0W1X2Y3Z4F"), ApplicationId: proto.String("app_01JD8Y5Q6R7S8T9V0W1X2Y3Z4G"),
			AgentId: proto.String("agent-7"), GrantId: proto.String("grt_01JD8Y5Q6R7S8T9V0W1X2Y3Z4H")},
		Authorization: receipt.Authorization{ActionDecisionID: "dec_01JD8Y5Q6R7S8T9V0W1X2Y3Z4J", GrantID: "grt_01JD8Y5Q6R7S8T9V0W1X2Y3Z4H",
			CommercialAuthorizationID: "cau_01JD8Y5Q6R7S8T9V0W1X2Y3Z4K", PolicyVersion: "policy-2026-11", RateCardVersion: "developer-2026-09"},
		Intent: svcv1.PlanIntent_PLAN_INTENT_SVC,
		Objects: []receipt.Object{
			{AssetID: "ast_01JD8Y5Q6R7S8T9V0W1X2Y3Z4N", ProviderObjectID: "msg-2", Actions: []svcv1.PlanAction{1, 2},
				Status: receipt.Partial, Preserved: true, VaultObjectID: "vlt_01JD8Y5Q6R7S8T9V0W1X2Y3Z4P", VaultSHA256: sha1,
				Bytes: 2048, Error: "trash: provider unavailable", Restorable: true},
			{AssetID: "ast_01JD8Y5Q6R7S8T9V0W1X2Y3Z4M", ProviderObjectID: "msg-1 \"quoted\"\n", Actions: []svcv1.PlanAction{1, 2},
				Status: receipt.Completed, Preserved: true, Removed: true, VaultObjectID: "vlt_01JD8Y5Q6R7S8T9V0W1X2Y3Z4Q", VaultSHA256: sha1,
				ProviderResultID: "trash-991", Bytes: 4096, Restorable: true},
			{AssetID: "ast_01JD8Y5Q6R7S8T9V0W1X2Y3Z4R", ProviderObjectID: "Résumé ☃.pdf", Actions: []svcv1.PlanAction{4},
				Status: receipt.Completed, Transferred: true, ProviderResultID: "dst-obj-1", Bytes: 1 << 20},
			{AssetID: "ast_01JD8Y5Q6R7S8T9V0W1X2Y3Z4S", ProviderObjectID: "msg-4", Actions: []svcv1.PlanAction{1, 2},
				Status: receipt.Failed, Error: "fetch: version moved"},
			{AssetID: "ast_01JD8Y5Q6R7S8T9V0W1X2Y3Z4T", ProviderObjectID: "msg-5", Actions: []svcv1.PlanAction{1, 2},
				Status: receipt.Skipped, Error: "cancelled"},
		},
		Before: []receipt.Quota{{SourceID: "src_01JD8Y5Q6R7S8T9V0W1X2Y3Z50", Provider: svcv1.Provider_PROVIDER_SIMULATED,
			UsedBytes: i64(10 << 30), LimitBytes: i64(15 << 30), ObservedAt: t0}},
		After: []receipt.Quota{{SourceID: "src_01JD8Y5Q6R7S8T9V0W1X2Y3Z50", Provider: svcv1.Provider_PROVIDER_SIMULATED,
			UsedBytes: i64(10<<30 - 4096), LimitBytes: i64(15 << 30), ObservedAt: t0.Add(5 * time.Minute)}},
		Charges: []receipt.Charge{
			{Meter: "executions", Quantity: 1, Unit: "execution", Cents: 50, UsageEventID: "use_01JD8Y5Q6R7S8T9V0W1X2Y3Z4V"},
			{Meter: "data_transferred", Quantity: 0.25, Unit: "GB", Cents: 4, UsageEventID: "use_01JD8Y5Q6R7S8T9V0W1X2Y3Z4W"},
		},
		StartedAt:   t0.Add(time.Minute),
		FinishedAt:  t0.Add(4*time.Minute + 500*time.Millisecond),
		Restoration: receipt.Restoration{Until: &until, Method: "vault_to_original"},
		Errors:      []string{"ast_01JD8Y5Q6R7S8T9V0W1X2Y3Z4S: version moved", "trash: provider unavailable"},
	}
}

func issue(t interface{ Fatal(...any) }, in receipt.Input, s receipt.Signer) (*svcv1.Receipt, []byte) {
	r, b, err := receipt.Issue(&in, s)
	if err != nil {
		t.Fatal(err)
	}
	return r, b
}

func keySet(s ...*receipt.KeySigner) []byte {
	var pubs []ed25519.PublicKey
	for _, k := range s {
		pubs = append(pubs, k.Public())
	}
	return receipt.KeySet(pubs...)
}

func keysByKID(s ...*receipt.KeySigner) map[string]ed25519.PublicKey {
	m := map[string]ed25519.PublicKey{}
	for _, k := range s {
		m[k.KeyID()] = k.Public()
	}
	return m
}

func TestBuildFillsEveryField(t *testing.T) {
	in := fullInput()
	r, err := receipt.Build(&in)
	if err != nil {
		t.Fatal(err)
	}
	if r.ReceiptVersion != "1" || r.Intent != "svc" || r.GetDelegatingUserId() != "usr_01JD8Y5Q6R7S8T9V0W1X2Y3Z4F" {
		t.Errorf("version %q intent %q delegatingUserId %q", r.ReceiptVersion, r.Intent, r.GetDelegatingUserId())
	}
	// 5 objects: one skipped, so 4 attempted; 2 completed, 1 failed, 1 partial.
	if r.Attempted != 4 || r.Completed != 2 || r.Failed != 1 {
		t.Errorf("counters %d/%d/%d, want 4/2/1", r.Attempted, r.Completed, r.Failed)
	}
	if r.BytesPreserved != 2048+4096 || r.BytesRemoved != 4096 || r.BytesTransferred != 1<<20 {
		t.Errorf("bytes %d/%d/%d", r.BytesPreserved, r.BytesRemoved, r.BytesTransferred)
	}
	if r.GetMeasuredReclaimBytes() != 4096 {
		t.Errorf("measuredReclaimBytes %v, want 4096", r.MeasuredReclaimBytes)
	}
	if !slices.IsSortedFunc(r.Objects, func(a, b *svcv1.ReceiptObject) int { return strings.Compare(a.AssetId, b.AssetId) }) {
		t.Error("objects are not sorted by assetId")
	}
	if r.Charges[0].Meter != "data_transferred" {
		t.Error("charges are not sorted by meter")
	}
	if !r.Restoration.Capable || r.Restoration.Until == nil || r.Restoration.GetMethod() != "vault_to_original" {
		t.Errorf("restoration %v", r.Restoration)
	}
	if r.Hash != "" || r.Signature != nil {
		t.Error("Build must leave hash and signature to Sign")
	}
	// Every spec member is present in the served JSON, none null in this full example
	// except the object fields that are null for that object.
	b, _ := wire.Marshal(r)
	var doc map[string]any
	json.Unmarshal(b, &doc)
	for _, name := range append(slices.Clone(receipt.HashedFields), "hash", "signature") {
		if _, ok := doc[name]; !ok {
			t.Errorf("served receipt lacks %q", name)
		}
	}
	for _, name := range receipt.HashedFields {
		if doc[name] == nil {
			t.Errorf("%s is null in the full example", name)
		}
	}
}

func TestBuildDerivesRestorationAndReclaim(t *testing.T) {
	in := fullInput()
	for i := range in.Objects {
		in.Objects[i].Restorable = false
	}
	in.After[0].UsedBytes = i64(11 << 30) // grew: reclaim is 0, not negative
	r, err := receipt.Build(&in)
	if err != nil {
		t.Fatal(err)
	}
	if r.Restoration.Capable || r.Restoration.Until != nil || r.Restoration.Method != nil {
		t.Errorf("no restorable object, restoration %v", r.Restoration)
	}
	if r.GetMeasuredReclaimBytes() != 0 || r.MeasuredReclaimBytes == nil {
		t.Errorf("measuredReclaimBytes %v, want 0", r.MeasuredReclaimBytes)
	}
	in.After[0].UsedBytes = nil
	if r, _ := receipt.Build(&in); r.MeasuredReclaimBytes != nil {
		t.Errorf("unknown usage after, measuredReclaimBytes %v, want null", *r.MeasuredReclaimBytes)
	}
	in.MeasuredReclaimBytes = i64(7)
	if r, _ := receipt.Build(&in); r.GetMeasuredReclaimBytes() != 7 {
		t.Errorf("given measuredReclaimBytes not kept")
	}
	in.ReceiptID = ""
	if r, _ := receipt.Build(&in); !strings.HasPrefix(r.ReceiptId, "rcp_") || len(r.ReceiptId) != 30 {
		t.Errorf("made receipt id %q", r.ReceiptId)
	}
}

func TestBuildRejectsBadInput(t *testing.T) {
	cases := map[string]func(in *receipt.Input){
		"executionId":     func(in *receipt.Input) { in.ExecutionID = "exe_bad" },
		"planId":          func(in *receipt.Input) { in.PlanID = "" },
		"receiptId":       func(in *receipt.Input) { in.ReceiptID = "pln_01JD8Y5Q6R7S8T9V0W1X2Y3Z4A" },
		"planHash":        func(in *receipt.Input) { in.PlanHash = "" },
		"tenantRef":       func(in *receipt.Input) { in.TenantRef = "" },
		"actor":           func(in *receipt.Input) { in.Actor = nil },
		"actor.type":      func(in *receipt.Input) { in.Actor = &svcv1.Actor{PrincipalId: "x"} },
		"decision":        func(in *receipt.Input) { in.Authorization.ActionDecisionID = "" },
		"policyVersion":   func(in *receipt.Input) { in.Authorization.PolicyVersion = "" },
		"intent":          func(in *receipt.Input) { in.Intent = 0 },
		"times":           func(in *receipt.Input) { in.StartedAt = time.Time{} },
		"order":           func(in *receipt.Input) { in.FinishedAt = in.StartedAt.Add(-time.Second) },
		"dup asset":       func(in *receipt.Input) { in.Objects[1].AssetID = in.Objects[0].AssetID },
		"no actions":      func(in *receipt.Input) { in.Objects[0].Actions = nil },
		"bad action":      func(in *receipt.Input) { in.Objects[0].Actions = []svcv1.PlanAction{99} },
		"status":          func(in *receipt.Input) { in.Objects[0].Status = 0 },
		"bytes":           func(in *receipt.Input) { in.Objects[0].Bytes = -1 },
		"sha":             func(in *receipt.Input) { in.Objects[0].VaultSHA256 = strings.ToUpper(sha1) },
		"preserved":       func(in *receipt.Input) { in.Objects[0].VaultObjectID = "" },
		"skipped did":     func(in *receipt.Input) { in.Objects[4].Removed = true },
		"failed no error": func(in *receipt.Input) { in.Objects[3].Error = "" },
		"quota source":    func(in *receipt.Input) { in.Before[0].SourceID = "" },
		"quota provider":  func(in *receipt.Input) { in.After[0].Provider = 0 },
		"quota dup":       func(in *receipt.Input) { in.After = append(in.After, in.After[0]) },
		"quota time":      func(in *receipt.Input) { in.After[0].ObservedAt = time.Time{} },
		"charge":          func(in *receipt.Input) { in.Charges[0].UsageEventID = "" },
		"charge quantity": func(in *receipt.Input) { in.Charges[0].Quantity = -1 },
		"reclaim":         func(in *receipt.Input) { in.MeasuredReclaimBytes = i64(-1) },
	}
	for name, mutate := range cases {
		t.Run(name, func(t *testing.T) {
			in := fullInput()
			mutate(&in)
			if _, err := receipt.Build(&in); !errors.Is(err, receipt.ErrInvalidInput) {
				t.Fatalf("Build: %v, want ErrInvalidInput", err)
			}
		})
	}
}

// The served bytes verify with this package's Verify and with the independent check, and
// are the wire JSON of the returned receipt.
func TestIssueVerifies(t *testing.T) {
	s := exampleSigner()
	r, served := issue(t, fullInput(), s)
	if err := independentVerify(served, keysByKID(s)); err != nil {
		t.Fatalf("independent verification: %v", err)
	}
	v, err := receipt.Verify(served, keySet(s))
	if err != nil {
		t.Fatal(err)
	}
	if v.ReceiptID != r.ReceiptId || v.Hash != r.Hash || v.KeyID != s.KeyID() || v.ExecutionID != r.ExecutionId {
		t.Errorf("Verified %+v", v)
	}
	if b, _ := wire.Marshal(r); !bytes.Equal(b, served) {
		t.Error("served bytes are not the receipt's wire JSON")
	}
	if r.Signature.Alg != "Ed25519" || strings.ContainsAny(r.Signature.Sig, "=+/") || len(r.Signature.Sig) != 86 {
		t.Errorf("signature %v", r.Signature)
	}
	// Pretty-printed (as a user's tools may save it), it still verifies: only content counts.
	var pretty bytes.Buffer
	json.Indent(&pretty, served, "", "  ")
	if _, err := receipt.Verify(pretty.Bytes(), keySet(s)); err != nil {
		t.Errorf("pretty-printed: %v", err)
	}
}

// genInput draws a valid Input: any strings (control characters, quotes, non-ASCII, astral
// planes), any number of objects and quotas, any statuses.
func genInput(t *rapid.T) receipt.Input {
	in := fullInput()
	str := rapid.StringN(0, 12, -1)
	in.TenantRef = rapid.StringN(1, 20, -1).Draw(t, "tenant")
	in.PlanHash = rapid.StringMatching(`[0-9a-f]{64}`).Draw(t, "planHash")
	in.Simulated = rapid.Bool().Draw(t, "simulated")
	in.Intent = svcv1.PlanIntent(rapid.IntRange(1, 7).Draw(t, "intent"))
	in.Actor.PrincipalId = rapid.StringN(1, 20, -1).Draw(t, "principal")
	in.Authorization.GrantID = str.Draw(t, "grant")
	in.Authorization.RateCardVersion = str.Draw(t, "rateCard")
	n := rapid.IntRange(0, 30).Draw(t, "objects")
	in.Objects = nil
	for i := range n {
		o := receipt.Object{
			AssetID:          fmt.Sprintf("ast_%026d", i*7919%1000+1000*i),
			ProviderObjectID: rapid.StringN(1, 30, -1).Draw(t, "poid"),
			Actions:          rapid.SliceOfN(rapid.Custom(func(t *rapid.T) svcv1.PlanAction { return svcv1.PlanAction(rapid.IntRange(1, 7).Draw(t, "a")) }), 1, 3).Draw(t, "actions"),
			Status:           receipt.Status(rapid.IntRange(1, 4).Draw(t, "status")),
			Bytes:            rapid.Int64Range(0, 1<<40).Draw(t, "bytes"),
			Restorable:       rapid.Bool().Draw(t, "restorable"),
			ProviderResultID: str.Draw(t, "result"),
			Error:            str.Draw(t, "error"),
		}
		if o.Status != receipt.Skipped {
			o.Preserved = rapid.Bool().Draw(t, "preserved")
			o.Removed = rapid.Bool().Draw(t, "removed")
			o.Transferred = rapid.Bool().Draw(t, "transferred")
		}
		if o.Preserved || rapid.Bool().Draw(t, "vault") {
			o.VaultObjectID = fmt.Sprintf("vlt_%026d", i)
			o.VaultSHA256 = rapid.StringMatching(`[0-9a-f]{64}`).Draw(t, "sha")
		}
		if (o.Status == receipt.Failed || o.Status == receipt.Partial) && o.Error == "" {
			o.Error = "x"
		}
		in.Objects = append(in.Objects, o)
	}
	in.Charges = nil
	for i := range rapid.IntRange(0, 3).Draw(t, "charges") {
		in.Charges = append(in.Charges, receipt.Charge{Meter: str.Draw(t, "meter") + "m", Unit: "u",
			Quantity:     float64(rapid.IntRange(0, 1<<20).Draw(t, "q")) / 4,
			Cents:        rapid.Int64Range(0, 1<<40).Draw(t, "cents"),
			UsageEventID: fmt.Sprintf("use_%d", i)})
	}
	in.Errors = rapid.SliceOfN(str, 0, 4).Draw(t, "errors")
	in.FinishedAt = in.StartedAt.Add(time.Duration(rapid.Int64Range(0, 1e15).Draw(t, "dur")))
	return in
}

func shuffled(t *rapid.T, in receipt.Input) receipt.Input {
	out := in
	out.Objects = rapid.Permutation(in.Objects).Draw(t, "permObjects")
	out.Charges = rapid.Permutation(in.Charges).Draw(t, "permCharges")
	out.Errors = rapid.Permutation(in.Errors).Draw(t, "permErrors")
	return out
}

// Properties: the hash is deterministic and independent of input order; the independent
// check agrees; Verify accepts; a JSON round trip keeps hash and bytes.
func TestHashProperties(t *testing.T) {
	s := exampleSigner()
	rapid.Check(t, func(t *rapid.T) {
		in := genInput(t)
		r, served := issue(t, in, s)
		r2, served2 := issue(t, shuffled(t, in), s)
		if r.Hash != r2.Hash || !bytes.Equal(served, served2) {
			t.Fatalf("input order changed the receipt: %s vs %s", r.Hash, r2.Hash)
		}
		if h, err := independentHash(served); err != nil || h != r.Hash {
			t.Fatalf("independent hash %s (%v), receipt hash %s", h, err, r.Hash)
		}
		if err := independentVerify(served, keysByKID(s)); err != nil {
			t.Fatal(err)
		}
		if _, err := receipt.Verify(served, keySet(s)); err != nil {
			t.Fatal(err)
		}
		var back svcv1.Receipt
		if err := wire.Unmarshal(served, &back); err != nil {
			t.Fatal(err)
		}
		if h, _ := receipt.Hash(&back); h != r.Hash {
			t.Fatal("round trip changed the hash")
		}
		if b, _ := wire.Marshal(&back); !bytes.Equal(b, served) {
			t.Fatal("round trip changed the served bytes")
		}
		// Counters agree with objects.
		var att, comp, fail int64
		for _, o := range back.Objects {
			if o.Status != receipt.Skipped {
				att++
			}
			comp += b2i(o.Status == receipt.Completed)
			fail += b2i(o.Status == receipt.Failed)
		}
		if back.Attempted != att || back.Completed != comp || back.Failed != fail {
			t.Fatalf("counters %d/%d/%d, objects say %d/%d/%d", back.Attempted, back.Completed, back.Failed, att, comp, fail)
		}
	})
}

func b2i(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// Golden example: a fixed receipt signed with the RFC 8032 test key. Its bytes, hash and
// signature must never change (every stored receipt depends on them), and docs/receipts.md
// shows the same values.
func TestGoldenExample(t *testing.T) {
	s := exampleSigner()
	r, served := issue(t, fullInput(), s)
	var canon bytes.Buffer
	if err := receipt.WriteCanonical(&canon, r); err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{
		"example_receipt.json":   served,
		"example_canonical.json": canon.Bytes(),
		"example_keys.json":      keySet(s),
	}
	for name, got := range files {
		path := filepath.Join("testdata", name)
		if *update {
			if err := os.WriteFile(path, got, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s changed (run with -update if intended):\n%s", name, got)
		}
	}
	doc, err := os.ReadFile(filepath.Join("..", "docs", "receipts.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{r.Hash, r.Signature.Sig, s.KeyID()} {
		if !bytes.Contains(doc, []byte(want)) {
			t.Errorf("docs/receipts.md does not show %s", want)
		}
	}
}

// WriteCanonical flushes in chunks; across chunk boundaries it writes exactly the wire
// package's canonical JSON of the hashed members, and the independent check agrees.
func TestWriteCanonicalLargeReceipt(t *testing.T) {
	in := benchInput(3000)
	r, served := issue(t, in, exampleSigner())
	var chunks chunkWriter
	if err := receipt.WriteCanonical(&chunks, r); err != nil {
		t.Fatal(err)
	}
	want, err := wire.CanonicalBytes(r, receipt.HashedFields...)
	if err != nil || !bytes.Equal(chunks.Bytes(), want) {
		t.Fatalf("chunked canonical JSON differs from wire.CanonicalBytes (%v)", err)
	}
	if chunks.n < 10 {
		t.Errorf("%d writes for %d bytes: not chunked", chunks.n, chunks.Len())
	}
	if h, _ := independentHash(served); h != r.Hash {
		t.Fatalf("independent hash %s, receipt %s", h, r.Hash)
	}
}

type chunkWriter struct {
	bytes.Buffer
	n int
}

func (c *chunkWriter) Write(p []byte) (int, error) { c.n++; return c.Buffer.Write(p) }

// Invalid UTF-8 from a provider's error message becomes U+FFFD, as the wire format writes
// it: the receipt stays a valid protobuf message and its served bytes verify.
func TestInvalidUTF8(t *testing.T) {
	in := fullInput()
	in.Objects[3].Error = "fetch: \xff\xfe bad bytes"
	in.Errors = append(in.Errors, "\xc3")
	s := exampleSigner()
	r, served := issue(t, in, s)
	if _, err := proto.Marshal(r); err != nil {
		t.Fatalf("receipt is not a valid protobuf message: %v", err)
	}
	if !strings.Contains(string(served), "fetch: \ufffd\ufffd bad bytes") {
		t.Errorf("served %s", served)
	}
	if err := independentVerify(served, keysByKID(s)); err != nil {
		t.Fatal(err)
	}
	if _, err := receipt.Verify(served, keySet(s)); err != nil {
		t.Fatal(err)
	}
}
