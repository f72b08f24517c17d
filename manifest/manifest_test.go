package manifest_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"iter"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gowebpki/jcs"
	"google.golang.org/protobuf/proto"
	"pgregory.net/rapid"

	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/manifest"
	"svc.dev/svc/providers"
	"svc.dev/svc/wire"
)

var update = flag.Bool("update", false, "rewrite testdata golden files")

var t0 = time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)

const (
	tenant = "tnt_test_01JD8Y5Q6R7S8T9V0W1X2Y3Z4D"
	src    = "src_01JD8Y5Q6R7S8T9V0W1X2Y3Z50"
	exe1   = "exe_01JD8Y5Q6R7S8T9V0W1X2Y3Z4B"
	exe2   = "exe_01JD8Y5Q6R7S8T9V0W1X2Y3Z5B"
	shaFoo = "2c26b46b68ffc68ff99b453c1d30413413422d706483bfa0f98a5e886266e7ae"
	shaBar = "fcde2b2edba56bf408601fb721fe9b5c338d10ee429ea04fae5511b68fbf8fb9"
)

func message(n int) providers.Object {
	return providers.Object{
		ID: fmt.Sprintf("msg-%d", n), ParentID: "thread-1", Version: "h-981", Kind: providers.KindMessage,
		Name: "Your invoice", SizeBytes: 4096, MIMEType: "message/rfc822", Containers: []string{"INBOX", "Receipts"},
		CreatedAt: t0.Add(-48 * time.Hour), ModifiedAt: t0.Add(-24 * time.Hour),
		Message: &providers.MessageHeaders{From: "Billing <billing@example.com>", To: []string{"me@example.org"},
			Cc: []string{"accounts@example.org"}, Subject: "Your invoice \"#42\"", Date: t0.Add(-48 * time.Hour),
			ThreadID: "thread-1", ListID: "<billing.example.com>", ListUnsubscribe: "<mailto:u@example.com>",
			ListUnsubscribePost: true, Snippet: "Amount due: 12.00 €"},
		Permissions: []providers.Permission{{Principal: "me@example.org", Role: providers.RoleOwner, Type: providers.PrincipalUser},
			{Principal: "anyone", Role: providers.RoleReader, Type: providers.PrincipalLink}},
		// Keys whose RFC 8785 order (UTF-16) differs from code point order: "😀" < "ﬁ".
		Metadata: map[string]string{"historyId": "981", "ﬁ": "ligature", "😀": "emoji", "x-tab": "a\tb"},
	}
}

func newAsset(n int) *manifest.Asset {
	return &manifest.Asset{
		ManifestID: fmt.Sprintf("mfs_01JD8Y5Q6R7S8T9V0W1X2Y%04d", n), AssetID: fmt.Sprintf("ast_01JD8Y5Q6R7S8T9V0W1X2Y%04d", 9000-n),
		TenantRef: tenant, Provider: svcv1.Provider_PROVIDER_SIMULATED, SourceRef: src, AccountLabel: "me@example.org",
		Object: message(n), ObservedAt: t0,
	}
}

func mustNew(t interface{ Fatal(...any) }, a *manifest.Asset) *svcv1.Manifest {
	m, err := manifest.New(a)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// fullUpdates is one execution that preserves, extracts text and copies the asset, and a
// second that moves it and restores it, with every kind of lineage edge.
func fullUpdates(m *svcv1.Manifest) []*manifest.Update {
	vlt := "vlt_01JD8Y5Q6R7S8T9V0W1X2Y3Z6A"
	fetched := message(0)
	fetched.ID = m.Source.ObjectId
	fetched.Version = "h-982"
	fetched.SHA256 = ""
	return []*manifest.Update{
		{ExecutionID: exe1, At: t0.Add(time.Hour), Observed: &fetched,
			Vault: &manifest.Vault{VaultObjectID: vlt, StorageKey: "sha256/2c/26/" + shaFoo, SHA256: shaFoo, SizeBytes: 4096,
				CommittedAt: t0.Add(time.Hour), VerifiedAt: t0.Add(time.Hour + time.Second)},
			Transformations: []manifest.Transformation{{Type: svcv1.TransformationType_TRANSFORMATION_TYPE_TEXT_EXTRACT,
				ProducedAt: t0.Add(time.Hour), Producer: "svc/vault text-extract v1", OutputRef: "txt:" + vlt, OutputSHA256: shaBar, Lossy: true, Notes: "plain text"}},
			Derived:      []manifest.Derived{{Ref: "txt:" + vlt, Type: "text", SHA256: shaBar}},
			Destinations: []manifest.Destination{{DestinationID: "dst_01JD8Y5Q6R7S8T9V0W1X2Y3Z7A", Provider: svcv1.Provider_PROVIDER_VENDOR_D_LOCAL, Path: "Archive/invoice.eml", Mode: svcv1.DestinationMode_DESTINATION_MODE_COPY, WrittenAt: t0.Add(2 * time.Hour), Verified: true}},
			DuplicatedBy: []string{"ast_01JD8Y5Q6R7S8T9V0W1X2Y3Z8A"},
		},
		{ExecutionID: exe2, At: t0.Add(24 * time.Hour),
			Destinations: []manifest.Destination{
				{DestinationID: "dst_01JD8Y5Q6R7S8T9V0W1X2Y3Z7B", Provider: svcv1.Provider_PROVIDER_OBJECT_STORE_COMPATIBLE, ObjectID: "bucket/invoice.eml", Mode: svcv1.DestinationMode_DESTINATION_MODE_MOVE, WrittenAt: t0.Add(24 * time.Hour), Verified: true, Lossiness: []string{"labels"}},
				{DestinationID: src, Provider: svcv1.Provider_PROVIDER_SIMULATED, ObjectID: "msg-0-restored", Mode: svcv1.DestinationMode_DESTINATION_MODE_RESTORE, WrittenAt: t0.Add(25 * time.Hour), Verified: true},
			},
			Restore: &manifest.Restore{Methods: []svcv1.RestoreMethod{3, 1, 2, 1}, OriginalRestorable: true, Notes: "trashed at the provider for 30 days"},
		},
	}
}

func applied(t interface{ Fatal(...any) }) *svcv1.Manifest {
	m := mustNew(t, newAsset(0))
	for _, u := range fullUpdates(m) {
		if err := manifest.Apply(m, u); err != nil {
			t.Fatal(err)
		}
	}
	return m
}

// independentHash recomputes a hash from served JSON: drop the member, canonicalize with
// gowebpki/jcs (not the wire encoder under test), SHA-256.
func independentHash(t interface{ Fatal(...any) }, served []byte, drop string) string {
	var all map[string]json.RawMessage
	if err := json.Unmarshal(served, &all); err != nil {
		t.Fatal(err)
	}
	delete(all, drop)
	js, _ := json.Marshal(all)
	canon, err := jcs.Transform(js)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(canon)
	return hex.EncodeToString(sum[:])
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	var pretty bytes.Buffer
	if err := json.Indent(&pretty, got, "", "  "); err != nil {
		t.Fatal(err)
	}
	pretty.WriteByte('\n')
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, pretty.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(pretty.Bytes(), want) {
		t.Errorf("%s changed (run with -update if intended):\n%s", name, pretty.Bytes())
	}
}

func TestNewGolden(t *testing.T) {
	m := mustNew(t, newAsset(0))
	served, err := wire.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "manifest_new.json", served)
	if h := independentHash(t, served, "hash"); h != m.Hash {
		t.Fatalf("independent hash %s, manifest says %s", h, m.Hash)
	}
	if m.ManifestVersion != "1.0" || m.Vault != nil || m.Restore.Capable || len(m.Lineage) != 1 ||
		m.Lineage[0].Relation != svcv1.LineageRelation_LINEAGE_RELATION_ORIGINATED_FROM || m.Lineage[0].To != src+"/msg-0" {
		t.Errorf("new manifest %v", m)
	}
	if m.Content.Message.GetSubject() != `Your invoice "#42"` || len(m.Content.Message.Labels) != 2 || m.Permissions[0].Principal != "anyone" {
		t.Errorf("content %v permissions %v", m.Content, m.Permissions)
	}
}

func TestApplyGolden(t *testing.T) {
	m := applied(t)
	served, _ := wire.Marshal(m)
	golden(t, "manifest_applied.json", served)
	if h := independentHash(t, served, "hash"); h != m.Hash {
		t.Fatalf("independent hash %s, manifest says %s", h, m.Hash)
	}
	rels := map[svcv1.LineageRelation]int{}
	for _, e := range m.Lineage {
		rels[e.Relation]++
	}
	for r := svcv1.LineageRelation(1); r <= 7; r++ {
		if rels[r] != 1 {
			t.Errorf("%d %s edges, want 1", rels[r], r)
		}
	}
	if m.Content.GetSha256() != shaFoo {
		t.Errorf("content.sha256 %v, want the vault copy's", m.Content.Sha256)
	}
	if m.Source.GetVersion() != "h-982" || !m.UpdatedAt.AsTime().Equal(t0.Add(24*time.Hour)) || !m.CreatedAt.AsTime().Equal(t0) {
		t.Errorf("source version %v updatedAt %v", m.Source.Version, m.UpdatedAt.AsTime())
	}
	if !m.Restore.Capable || len(m.Restore.Methods) != 3 || m.Restore.Methods[0] != 1 {
		t.Errorf("restore %v", m.Restore)
	}
	if len(m.Executions) != 2 || m.Executions[0] != exe1 {
		t.Errorf("executions %v", m.Executions)
	}
	// restored_to comes from the vault copy.
	for _, e := range m.Lineage {
		if e.Relation == svcv1.LineageRelation_LINEAGE_RELATION_RESTORED_TO && (e.From != m.Vault.VaultObjectId || e.To != src+"/msg-0-restored") {
			t.Errorf("restored_to %v", e)
		}
	}
	// WriteCanonical writes what Hash hashes.
	var canon bytes.Buffer
	if err := manifest.WriteCanonical(&canon, m); err != nil {
		t.Fatal(err)
	}
	if sum := sha256.Sum256(canon.Bytes()); hex.EncodeToString(sum[:]) != m.Hash {
		t.Error("WriteCanonical does not hash to the manifest's hash")
	}
	// A JSON round trip keeps the hash.
	var back svcv1.Manifest
	if err := wire.Unmarshal(served, &back); err != nil {
		t.Fatal(err)
	}
	if h, _ := manifest.Hash(&back); h != m.Hash {
		t.Fatal("round trip changed the hash")
	}
}

// Applying an update again (an execution resumed after a crash) changes nothing; every
// update changes the hash the first time.
func TestApplyIdempotent(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		m := mustNew(t, newAsset(rapid.IntRange(0, 50).Draw(t, "n")))
		ups := fullUpdates(m)
		done := 0
		for _, step := range rapid.SliceOfN(rapid.IntRange(0, len(ups)-1), 1, 8).Draw(t, "steps") {
			// Replays are of updates already applied, or the next one.
			i := min(step, done)
			before := proto.Clone(m).(*svcv1.Manifest)
			if err := manifest.Apply(m, ups[i]); err != nil {
				t.Fatal(err)
			}
			if i < done && !proto.Equal(before, m) {
				t.Fatalf("replaying update %d changed the manifest", i)
			}
			if i == done {
				if before.Hash == m.Hash {
					t.Fatalf("update %d kept the hash", i)
				}
				done++
			}
		}
	})
}

func TestInvalidInput(t *testing.T) {
	assets := map[string]func(a *manifest.Asset){
		"asset id":    func(a *manifest.Asset) { a.AssetID = "x" },
		"manifest id": func(a *manifest.Asset) { a.ManifestID = "ast_01JD8Y5Q6R7S8T9V0W1X2Y3Z4B" },
		"tenant":      func(a *manifest.Asset) { a.TenantRef = "" },
		"provider":    func(a *manifest.Asset) { a.Provider = 0 },
		"source":      func(a *manifest.Asset) { a.SourceRef = "" },
		"observed":    func(a *manifest.Asset) { a.ObservedAt = time.Time{} },
		"object id":   func(a *manifest.Asset) { a.Object.ID = "" },
		"sha":         func(a *manifest.Asset) { a.Object.SHA256 = "abc" },
		"part sha":    func(a *manifest.Asset) { a.PartSHA256 = []string{"x"} },
	}
	for name, f := range assets {
		a := newAsset(1)
		f(a)
		if _, err := manifest.New(a); !errors.Is(err, manifest.ErrInvalidInput) {
			t.Errorf("%s: %v", name, err)
		}
	}
	updates := map[string]func(u *manifest.Update){
		"execution":      func(u *manifest.Update) { u.ExecutionID = "" },
		"at":             func(u *manifest.Update) { u.At = time.Time{} },
		"vault id":       func(u *manifest.Update) { u.Vault.VaultObjectID = "v" },
		"vault sha":      func(u *manifest.Update) { u.Vault.SHA256 = strings.ToUpper(shaFoo) },
		"vault times":    func(u *manifest.Update) { u.Vault.VerifiedAt = time.Time{} },
		"transformation": func(u *manifest.Update) { u.Transformations[0].Type = 0 },
		"producer":       func(u *manifest.Update) { u.Transformations[0].Producer = "" },
		"derived":        func(u *manifest.Update) { u.Derived[0].Ref = "" },
		"destination":    func(u *manifest.Update) { u.Destinations[0].Mode = 0 },
		"dest provider":  func(u *manifest.Update) { u.Destinations[0].Provider = 99 },
		"duplicate self": func(u *manifest.Update) { u.DuplicatedBy = []string{"ast_01JD8Y5Q6R7S8T9V0W1X2Y9000"} },
		"restore method": func(u *manifest.Update) { u.Restore = &manifest.Restore{Methods: []svcv1.RestoreMethod{0}} },
	}
	for name, f := range updates {
		m := mustNew(t, newAsset(0))
		before := proto.Clone(m)
		u := fullUpdates(m)[0]
		f(u)
		if err := manifest.Apply(m, u); !errors.Is(err, manifest.ErrInvalidInput) {
			t.Errorf("%s: %v", name, err)
		}
		if !proto.Equal(before, m) {
			t.Errorf("%s: a refused update changed the manifest", name)
		}
	}
}

func seqOf(ms []*svcv1.Manifest) iter.Seq2[*svcv1.Manifest, error] {
	return func(yield func(*svcv1.Manifest, error) bool) {
		for _, m := range ms {
			if !yield(m, nil) {
				return
			}
		}
	}
}

func TestBundleGolden(t *testing.T) {
	ms := []*svcv1.Manifest{applied(t), mustNew(t, newAsset(1)), mustNew(t, newAsset(2))}
	b, err := manifest.Bundle(tenant, t0.Add(48*time.Hour), ms)
	if err != nil {
		t.Fatal(err)
	}
	served, _ := wire.Marshal(b)
	golden(t, "bundle.json", served)
	if h := independentHash(t, served, "bundleHash"); h != b.BundleHash {
		t.Fatalf("independent bundleHash %s, bundle says %s", h, b.BundleHash)
	}
	if b.Count != 3 || b.Manifests[0].AssetId > b.Manifests[1].AssetId || b.BundleVersion != "1.0" {
		t.Errorf("bundle count %d order %s %s", b.Count, b.Manifests[0].AssetId, b.Manifests[1].AssetId)
	}
	if err := manifest.VerifyBundle(served); err != nil {
		t.Fatal(err)
	}
	// Pretty-printed, it still verifies.
	var pretty bytes.Buffer
	json.Indent(&pretty, served, "", "  ")
	if err := manifest.VerifyBundle(pretty.Bytes()); err != nil {
		t.Fatal(err)
	}
}

// The streamed bundle is byte for byte the marshalled one, and both hashes recompute
// independently, for any number of manifests.
func TestWriteBundleStreamsTheSameBytes(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(0, 12).Draw(t, "n")
		var ms []*svcv1.Manifest
		for i := range n {
			a := newAsset(i)
			a.Object.Name = rapid.String().Draw(t, "name")
			a.Object.Metadata = rapid.MapOfN(rapid.String(), rapid.String(), 0, 3).Draw(t, "meta")
			m := mustNew(t, a)
			if rapid.Bool().Draw(t, "applied") {
				for _, u := range fullUpdates(m) {
					if err := manifest.Apply(m, u); err != nil {
						t.Fatal(err)
					}
				}
			}
			ms = append(ms, m)
		}
		at := t0.Add(time.Duration(rapid.Int64Range(0, 1e15).Draw(t, "at")))
		b, err := manifest.Bundle(tenant, at, ms)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := wire.Marshal(b)
		var got bytes.Buffer
		h, err := manifest.WriteBundle(&got, manifest.BundleHeader{TenantRef: tenant, GeneratedAt: at, Count: int64(n)}, seqOf(b.Manifests))
		if err != nil {
			t.Fatal(err)
		}
		if h != b.BundleHash || !bytes.Equal(got.Bytes(), want) {
			t.Fatalf("streamed bundle differs:\n%s\n%s", got.Bytes(), want)
		}
		if ih := independentHash(t, want, "bundleHash"); ih != h {
			t.Fatalf("independent bundleHash %s, bundle says %s", ih, h)
		}
		for i, m := range b.Manifests {
			mb, _ := wire.Marshal(m)
			if ih := independentHash(t, mb, "hash"); ih != m.Hash {
				t.Fatalf("manifest %d: independent hash %s, manifest says %s", i, ih, m.Hash)
			}
		}
		if err := manifest.VerifyBundle(got.Bytes()); err != nil {
			t.Fatal(err)
		}
	})
}

func TestBundleRefusals(t *testing.T) {
	a, b := mustNew(t, newAsset(1)), mustNew(t, newAsset(2)) // b sorts first
	other := mustNew(t, func() *manifest.Asset { x := newAsset(3); x.TenantRef = "tnt_other"; return x }())
	stale := mustNew(t, newAsset(4))
	stale.Content.SizeBytes++
	hdr := func(n int64) manifest.BundleHeader {
		return manifest.BundleHeader{TenantRef: tenant, GeneratedAt: t0, Count: n}
	}
	cases := map[string]struct {
		h  manifest.BundleHeader
		ms []*svcv1.Manifest
	}{
		"out of order":   {hdr(2), []*svcv1.Manifest{a, b}},
		"repeated":       {hdr(2), []*svcv1.Manifest{b, b}},
		"other tenant":   {hdr(1), []*svcv1.Manifest{other}},
		"stale hash":     {hdr(1), []*svcv1.Manifest{stale}},
		"count too low":  {hdr(1), []*svcv1.Manifest{b, a}},
		"count too high": {hdr(3), []*svcv1.Manifest{b, a}},
	}
	for name, c := range cases {
		if _, err := manifest.WriteBundle(&bytes.Buffer{}, c.h, seqOf(c.ms)); !errors.Is(err, manifest.ErrBundle) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, err := manifest.Bundle(tenant, t0, []*svcv1.Manifest{a, other}); !errors.Is(err, manifest.ErrBundle) {
		t.Errorf("Bundle with another tenant's manifest: %v", err)
	}
	boom := errors.New("store failed")
	_, err := manifest.WriteBundle(&bytes.Buffer{}, hdr(2), func(yield func(*svcv1.Manifest, error) bool) {
		if yield(b, nil) {
			yield(nil, boom)
		}
	})
	if !errors.Is(err, boom) {
		t.Errorf("iterator error: %v", err)
	}
}

func TestVerifyBundleDetectsTampering(t *testing.T) {
	bd, _ := manifest.Bundle(tenant, t0, []*svcv1.Manifest{applied(t), mustNew(t, newAsset(1))})
	served, _ := wire.Marshal(bd)
	cases := map[string]struct {
		data []byte
		want error
	}{
		"manifest content": {bytes.Replace(served, []byte(`"sizeBytes":4096`), []byte(`"sizeBytes":4097`), 1), manifest.ErrHashMismatch},
		"generatedAt":      {bytes.Replace(served, []byte(`"generatedAt":"2026`), []byte(`"generatedAt":"2027`), 1), manifest.ErrHashMismatch},
		"tenantRef":        {bytes.Replace(served, []byte(`"tenantRef":"tnt`), []byte(`"tenantRef":"tnX`), 1), manifest.ErrHashMismatch},
		"bundleHash":       {bytes.Replace(served, []byte(`"bundleHash":"`), []byte(`"bundleHash":"0`), 1), manifest.ErrHashMismatch},
		"count":            {bytes.Replace(served, []byte(`"count":2`), []byte(`"count":1`), 1), manifest.ErrMalformedBundle},
		"version":          {bytes.Replace(served, []byte(`"bundleVersion":"1.0"`), []byte(`"bundleVersion":"2.0"`), 1), manifest.ErrMalformedBundle},
		"not JSON":         {served[:len(served)-1], manifest.ErrMalformedBundle},
	}
	for name, c := range cases {
		if err := manifest.VerifyBundle(c.data); !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", name, err, c.want)
		}
	}
}

// The worked example of docs/manifests.md: one file asset, preserved, in a bundle.
func TestDocsExample(t *testing.T) {
	m, err := manifest.New(&manifest.Asset{
		ManifestID: "mfs_01JD8Y5Q6R7S8T9V0W1X2Y3Z9A", AssetID: "ast_01JD8Y5Q6R7S8T9V0W1X2Y3Z9B", TenantRef: "tnt_example",
		Provider: svcv1.Provider_PROVIDER_VENDOR_D_LOCAL, SourceRef: "src_01JD8Y5Q6R7S8T9V0W1X2Y3Z9C", AccountLabel: "Documents",
		Object: providers.Object{ID: "reports/2025.pdf", Version: "1732269600000000000", Kind: providers.KindFile,
			Name: "2025.pdf", Path: "reports/2025.pdf", SizeBytes: 3, MIMEType: "application/pdf",
			ModifiedAt: t0.Add(-time.Hour), Metadata: map[string]string{"mode": "0644"}},
		ObservedAt: t0,
	})
	if err != nil {
		t.Fatal(err)
	}
	err = manifest.Apply(m, &manifest.Update{ExecutionID: "exe_01JD8Y5Q6R7S8T9V0W1X2Y3Z9D", At: t0.Add(time.Minute),
		Vault: &manifest.Vault{VaultObjectID: "vlt_01JD8Y5Q6R7S8T9V0W1X2Y3Z9E", StorageKey: "sha256/" + shaFoo, SHA256: shaFoo,
			SizeBytes: 3, CommittedAt: t0.Add(time.Minute), VerifiedAt: t0.Add(time.Minute)}})
	if err != nil {
		t.Fatal(err)
	}
	b, err := manifest.Bundle("tnt_example", t0.Add(time.Hour), []*svcv1.Manifest{m})
	if err != nil {
		t.Fatal(err)
	}
	served, _ := wire.Marshal(b)
	golden(t, "example_bundle.json", served)
	doc, err := os.ReadFile(filepath.Join("..", "docs", "manifests.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{m.Hash, b.BundleHash} {
		if !bytes.Contains(doc, []byte(want)) {
			t.Errorf("docs/manifests.md does not show %s", want)
		}
	}
}

// Invalid UTF-8 (a local file name, a provider's label) becomes U+FFFD: the manifest stays a
// valid protobuf message, so a store can keep it, and its hash recomputes.
func TestInvalidUTF8(t *testing.T) {
	a := newAsset(0)
	a.Object.Name = "r\xe9sum\xe9.pdf"
	a.Object.Metadata["k\xff"] = "v\xfe"
	m := mustNew(t, a)
	if m.Content.Name != "r\ufffdsum\ufffd.pdf" {
		t.Errorf("name %q", m.Content.Name)
	}
	u := fullUpdates(m)[0]
	u.Destinations[0].Path = "Archive/\xe9t\xe9.eml"
	if err := manifest.Apply(m, u); err != nil {
		t.Fatal(err)
	}
	if _, err := proto.Marshal(m); err != nil {
		t.Fatalf("not a valid protobuf message: %v", err)
	}
	served, _ := wire.Marshal(m)
	if m.Destinations[0].GetPath() != "Archive/\ufffdt\ufffd.eml" || independentHash(t, served, "hash") != m.Hash {
		t.Errorf("path %q", m.Destinations[0].GetPath())
	}
}

func TestDraftIsNewWithoutTheHash(t *testing.T) {
	d, err := manifest.Draft(newAsset(3))
	if err != nil {
		t.Fatal(err)
	}
	if d.GetHash() != "" {
		t.Fatalf("a draft has a hash: %q", d.GetHash())
	}
	m := mustNew(t, newAsset(3))
	withoutHash := proto.Clone(m).(*svcv1.Manifest)
	withoutHash.Hash = ""
	if !proto.Equal(d, withoutHash) {
		t.Fatalf("the draft differs from New's manifest beyond the hash:\n%v\n%v", d, withoutHash)
	}
	// Applying the same updates to both gives the same sealed manifest.
	for _, u := range fullUpdates(m) {
		if err := manifest.Apply(d, u); err != nil {
			t.Fatal(err)
		}
		if err := manifest.Apply(m, u); err != nil {
			t.Fatal(err)
		}
	}
	if h, err := manifest.Hash(d); err != nil || d.GetHash() != h || !proto.Equal(d, m) {
		t.Fatalf("draft + updates: hash %q (recomputed %q, %v); equal to New + updates: %v", d.GetHash(), h, err, proto.Equal(d, m))
	}
	if _, err := manifest.Draft(&manifest.Asset{}); !errors.Is(err, manifest.ErrInvalidInput) {
		t.Fatalf("a draft of nothing: %v", err)
	}
}
