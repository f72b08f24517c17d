package server_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"svc.dev/svc/server/devseed"
	"sync/atomic"
	"testing"

	"svc.dev/svc/execute"
	"svc.dev/svc/platform"
	"svc.dev/svc/providers"
	"svc.dev/svc/providers/builtin"
	"svc.dev/svc/server"

	"svc.dev/svc/storage/bolt"
)

var dstIDPattern = regexp.MustCompile(`^dst_[0-9A-HJKMNP-TV-Z]{26}$`)

// readOnlyFiles is a provider that lists and fetches but cannot write; with write set it
// implements Writer and says so (CapabilityMasker), like a plugin whose capabilities change.
type readOnlyFiles struct {
	writable atomic.Bool
}

func (f *readOnlyFiles) Describe(context.Context) (providers.Description, error) {
	return providers.Description{Name: providers.VendorBFiles, ProtocolVersion: providers.ProtocolVersion, DisplayName: "Read-only files",
		OperationClasses: providers.OperationClassesFor(nil), ObjectKinds: []providers.Kind{providers.KindFile},
		MarkerKinds: []providers.MarkerKind{providers.MarkerNone}}, nil
}
func (f *readOnlyFiles) List(context.Context, providers.ListRequest) (providers.Page, error) {
	return providers.Page{Marker: providers.Marker{Kind: providers.MarkerNone}}, nil
}
func (f *readOnlyFiles) Changes(context.Context, providers.ChangesRequest) (providers.ChangePage, error) {
	return providers.ChangePage{}, nil
}
func (f *readOnlyFiles) Fetch(context.Context, providers.FetchRequest) (*providers.Content, error) {
	return nil, providers.ErrNotFound
}

// Supports masks Write unless the provider is writable.
func (f *readOnlyFiles) Supports(c providers.Capability) bool {
	return c != providers.CapWrite || f.writable.Load()
}

// dstEnv is an env whose registry also has the read-only provider, with a local folder
// connected as a source in the dev user's test tenant.
type dstEnv struct {
	*env
	dataDir  string
	folder   string // the local source's folder
	local    string // its source id
	readOnly *readOnlyFiles
}

func newDstEnv(t *testing.T) *dstEnv {
	t.Helper()
	ro := &readOnlyFiles{}
	reg, err := builtin.Registry(builtin.Options{})
	if err != nil {
		t.Fatal(err)
	}
	desc, _ := ro.Describe(context.Background())
	reg.Register(providers.InProcess(desc, func(context.Context, providers.Config) (providers.Provider, error) { return ro, nil }))
	t.Cleanup(func() { reg.Close() })
	var dataDir string
	e := newEnv(t, func(c *server.Config) { c.Providers = reg; dataDir = c.DataDir })
	// The source is the folder "disk" under the provider's root: the destination must carry
	// the source's reference as well as its configuration.
	root := t.TempDir()
	folder := filepath.Join(root, "disk")
	if err := os.Mkdir(folder, 0o700); err != nil {
		t.Fatal(err)
	}
	src, err := e.srv.ConnectSource(context.Background(), e.userTestTenant(), server.SourceSpec{Provider: providers.VendorDLocal,
		Config: providers.Config{"root": root}, SourceRef: "disk", Kind: "folder", DisplayName: "Backup disk"})
	if err != nil {
		t.Fatal(err)
	}
	return &dstEnv{env: e, dataDir: dataDir, folder: folder, local: src.Id, readOnly: ro}
}

func (e *dstEnv) cx() string { return "?connection_id=" + e.creds.ConnectionID }

// create posts a destination with the test key through the seeded connection.
func (e *dstEnv) create(t *testing.T, body string, hdr ...string) *resp {
	t.Helper()
	return e.do("POST", "/v1/destinations"+e.cx(), body, append(e.key(), hdr...)...)
}

func (e *dstEnv) mustCreate(t *testing.T, body string) map[string]any {
	t.Helper()
	r := e.create(t, body)
	if r.status != 201 {
		t.Fatalf("create destination: %d %s", r.status, r.body)
	}
	return r.json(t)
}

// walkDestinations lists path page by page and returns the destination ids in order.
func (e *env) walkDestinations(t *testing.T, path string, hdr []string) []string {
	t.Helper()
	var ids []string
	cursor := ""
	for pages := 0; pages < 100; pages++ {
		p := path
		if cursor != "" {
			p += "&cursor=" + url.QueryEscape(cursor)
		}
		r := e.do("GET", p, "", hdr...)
		if r.status != 200 {
			t.Fatalf("page %d: %d %s", pages, r.status, r.body)
		}
		var pg struct {
			Data []struct {
				DestinationID string `json:"destinationId"`
			} `json:"data"`
			NextCursor *string `json:"next_cursor"`
		}
		if err := json.Unmarshal(r.body, &pg); err != nil {
			t.Fatal(err)
		}
		for _, d := range pg.Data {
			ids = append(ids, d.DestinationID)
		}
		if pg.NextCursor == nil {
			return ids
		}
		cursor = *pg.NextCursor
	}
	t.Fatal("pagination does not end")
	return nil
}

func TestCreateAndReadDestination(t *testing.T) {
	e := newDstEnv(t)
	r := e.create(t, `{"source_id":"`+e.local+`","label":"Backup disk","path_template":"{provider}/{source_id}/{path}",`+
		`"permission_mapping":"owner_only","metadata_mapping":{"labels":"tags"}}`)
	if r.status != 201 {
		t.Fatalf("create: %d %s", r.status, r.body)
	}
	d := r.json(t)
	did, _ := d["destinationId"].(string)
	if !dstIDPattern.MatchString(did) || d["provider"] != "vendor_d_local" || d["label"] != "Backup disk" || d["external"] != true ||
		d["pathTemplate"] != "{provider}/{source_id}/{path}" || d["permissionMapping"] != "owner_only" {
		t.Fatalf("destination: %s", r.body)
	}
	if mm, _ := d["metadataMapping"].(map[string]any); mm["labels"] != "tags" || len(mm) != 1 {
		t.Fatalf("metadataMapping: %s", r.body)
	}
	if kl, ok := d["knownLossiness"].([]any); !ok || len(kl) != 0 {
		t.Fatalf("knownLossiness: %s", r.body)
	}
	// GET returns the same bytes, with the key through the connection and with the user's
	// session on their test tenant.
	for _, hdr := range [][]string{e.key(), with(e.session(), "Svc-Mode", "test")} {
		path := "/v1/destinations/" + did
		if hdr[0] == "Authorization" {
			path += e.cx()
		}
		g := e.do("GET", path, "", hdr...)
		if g.status != 200 || !bytes.Equal(g.body, r.body) {
			t.Fatalf("GET: %d %s, want %s", g.status, g.body, r.body)
		}
	}
	// Omitted options take their defaults.
	d = e.mustCreate(t, `{"source_id":"`+e.local+`","label":"Plain"}`)
	if d["pathTemplate"] != execute.DefaultPathTemplate || d["permissionMapping"] != "preserve_where_supported" ||
		len(d["metadataMapping"].(map[string]any)) != 0 {
		t.Fatalf("defaults: %v", d)
	}
	// A destination is not a source: the sources are the seed's two and the folder.
	var list struct {
		Data []map[string]any `json:"data"`
	}
	json.Unmarshal(e.do("GET", "/v1/sources"+e.cx(), "", e.key()...).body, &list)
	if len(list.Data) != 3 {
		t.Fatalf("%d sources after creating destinations", len(list.Data))
	}
}

func TestListDestinationsPaginates(t *testing.T) {
	e := newDstEnv(t)
	seeded := e.walkDestinations(t, "/v1/destinations"+e.cx()+"&limit=10", e.key())
	if len(seeded) != 1 {
		t.Fatalf("seeded destinations: %v", seeded)
	}
	var made []string
	for i := range 7 {
		d := e.mustCreate(t, `{"source_id":"`+e.local+`","label":"Folder `+string(rune('A'+i))+`"}`)
		made = append(made, d["destinationId"].(string))
	}
	slices.Reverse(made) // newest first
	want := append(made, seeded...)
	for _, limit := range []string{"1", "2", "3", "8", "50"} {
		got := e.walkDestinations(t, "/v1/destinations"+e.cx()+"&limit="+limit, e.key())
		if !slices.Equal(got, want) {
			t.Fatalf("limit %s: %v, want %v", limit, got, want)
		}
	}
	// A cursor is bound to its listing: another principal cannot use it.
	r := e.do("GET", "/v1/destinations"+e.cx()+"&limit=2", "", e.key()...)
	var pg struct {
		NextCursor string `json:"next_cursor"`
	}
	json.Unmarshal(r.body, &pg)
	r = e.do("GET", "/v1/destinations?limit=2&cursor="+url.QueryEscape(pg.NextCursor), "", with(e.session(), "Svc-Mode", "test")...)
	if got := errorPath(t, checkProblem(t, r, 400, "validation_failed")); got != "cursor" {
		t.Fatalf("path %q", got)
	}
	checkProblem(t, e.do("GET", "/v1/destinations"+e.cx()+"&limit=201", "", e.key()...), 400, "validation_failed")
}

func TestDestinationTenancy(t *testing.T) {
	e := newDstEnv(t)
	did := e.mustCreate(t, `{"source_id":"`+e.local+`","label":"Mine"}`)["destinationId"].(string)
	// Another user sees none of it; neither does the same user's live tenant.
	other := e.signUp(t, "other@example.com")
	checkProblem(t, e.do("GET", "/v1/destinations/"+did, "", other...), 404, "not_found")
	if r := e.do("GET", "/v1/destinations", "", other...); r.status != 200 || string(r.body) != `{"data":[],"next_cursor":null}` {
		t.Fatalf("other user's list: %d %s", r.status, r.body)
	}
	// The same user reaches it by id from either mode (resources addressed by id, docs/api.md).
	if r := e.do("GET", "/v1/destinations/"+did, "", e.session()...); r.status != 200 {
		t.Fatalf("the owner's session by id: %d %s", r.status, r.body)
	}
	checkProblem(t, e.do("GET", "/v1/destinations/dst_01JD0000000000000000000000"+e.cx(), "", e.key()...), 404, "not_found")
	checkProblem(t, e.do("GET", "/v1/destinations/src_01JD0000000000000000000000"+e.cx(), "", e.key()...), 400, "validation_failed")
	// The engine's entry point agrees: not found, matching both not-found errors.
	otherTenant := platform.Tenant{Owner: "usr_01JD0000000000000000000000", Mode: platform.ModeTest}
	_, _, _, err := e.srv.OpenDestination(context.Background(), otherTenant, did)
	if !errors.Is(err, platform.ErrNotFound) || !errors.Is(err, bolt.ErrNotFound) {
		t.Fatalf("another tenant's destination opened: %v", err)
	}
}

func TestCreateDestinationValidation(t *testing.T) {
	e := newDstEnv(t)
	ctx := context.Background()
	ro, err := e.srv.ConnectSource(ctx, e.userTestTenant(), server.SourceSpec{Provider: providers.VendorBFiles, SourceRef: "drive",
		Kind: "files", DisplayName: "Read-only drive"})
	if err != nil {
		t.Fatal(err)
	}
	// A source of another user, connected in their test tenant.
	otherCookie := e.signUp(t, "other@example.com")
	acct := e.do("GET", "/v1/account", "", otherCookie...).json(t)
	foreign, err := e.srv.ConnectSource(ctx, platform.Tenant{Owner: acct["id"].(string), Mode: platform.ModeTest},
		server.SourceSpec{Provider: providers.VendorDLocal, Config: providers.Config{"root": t.TempDir()}, Kind: "folder", DisplayName: "Theirs"})
	if err != nil {
		t.Fatal(err)
	}
	src := `"source_id":"` + e.local + `"`
	for _, tc := range []struct {
		name, body, path string
	}{
		{"no label", `{` + src + `}`, "label"},
		{"empty label", `{` + src + `,"label":""}`, "label"},
		{"long label", `{` + src + `,"label":"` + strings.Repeat("é", 81) + `"}`, "label"},
		{"no source", `{"label":"x"}`, "source_id"},
		{"not a source id", `{"source_id":"dst_01JD0000000000000000000000","label":"x"}`, "source_id"},
		{"unknown source", `{"source_id":"src_01JD0000000000000000000000","label":"x"}`, "source_id"},
		{"another user's source", `{"source_id":"` + foreign.Id + `","label":"x"}`, "source_id"},
		{"provider cannot write", `{"source_id":"` + ro.Id + `","label":"x"}`, "source_id"},
		{"absolute template", `{` + src + `,"label":"x","path_template":"/{path}"}`, "path_template"},
		{"unknown placeholder", `{` + src + `,"label":"x","path_template":"{year}/{path}"}`, "path_template"},
		{"template naming no object", `{` + src + `,"label":"x","path_template":"{source_id}/all"}`, "path_template"},
		{"dot-dot template", `{` + src + `,"label":"x","path_template":"../{path}"}`, "path_template"},
		{"empty template", `{` + src + `,"label":"x","path_template":""}`, "path_template"},
		{"unknown permission mapping", `{` + src + `,"label":"x","permission_mapping":"everyone"}`, "permission_mapping"},
		{"empty metadata key", `{` + src + `,"label":"x","metadata_mapping":{"":"a"}}`, "metadata_mapping"},
		{"unknown field", `{` + src + `,"label":"x","provider":"vendor_d_local"}`, "provider"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := checkProblem(t, e.create(t, tc.body), 400, "validation_failed")
			if got := errorPath(t, p); !strings.HasPrefix(got, tc.path) {
				t.Fatalf("path %q, want %q: %v", got, tc.path, p)
			}
		})
	}
	// A disconnected source cannot back a new destination.
	disc, err := e.srv.ConnectSource(ctx, e.userTestTenant(), server.SourceSpec{Provider: providers.VendorDLocal,
		Config: providers.Config{"root": t.TempDir()}, Kind: "folder", DisplayName: "Soon gone"})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.srv.MarkReauth(ctx, e.userTestTenant(), disc.Id); err != nil {
		t.Fatal(err)
	}
	p := checkProblem(t, e.create(t, `{"source_id":"`+disc.Id+`","label":"x"}`), 400, "validation_failed")
	if got := errorPath(t, p); got != "source_id" {
		t.Fatalf("path %q", got)
	}
	// Nothing was created by any of these.
	if ids := e.walkDestinations(t, "/v1/destinations"+e.cx(), e.key()); len(ids) != 1 {
		t.Fatalf("destinations after refusals: %v", ids)
	}
}

func TestDestinationGrantsAndScopes(t *testing.T) {
	e := newDstEnv(t)
	ctx := context.Background()
	devs := e.srv.Developers()
	did := e.mustCreate(t, `{"source_id":"`+e.local+`","label":"Folder"}`)["destinationId"].(string)
	seeded := e.walkDestinations(t, "/v1/destinations"+e.cx(), e.key())[1]

	// A grant limited to another source can neither use this source nor see its destination;
	// the seed's destination, made from no source, stays visible.
	other, err := devs.Connect(ctx, e.creds.ApplicationID, e.creds.UserID, platform.ModeTest,
		platform.Grant{OperationClasses: platform.OperationClasses, SourceIDs: []string{"src_01JD0000000000000000000000"}})
	if err != nil {
		t.Fatal(err)
	}
	cx := "?connection_id=" + other.ID
	checkProblem(t, e.do("POST", "/v1/destinations"+cx, `{"source_id":"`+e.local+`","label":"x"}`, e.key()...), 403, "forbidden")
	checkProblem(t, e.do("GET", "/v1/destinations/"+did+cx, "", e.key()...), 403, "forbidden")
	if ids := e.walkDestinations(t, "/v1/destinations"+cx, e.key()); !slices.Equal(ids, []string{seeded}) {
		t.Fatalf("limited grant lists %v, want only %s", ids, seeded)
	}
	// A grant naming the source reaches both.
	mine, _ := devs.Connect(ctx, e.creds.ApplicationID, e.creds.UserID, platform.ModeTest,
		platform.Grant{OperationClasses: platform.OperationClasses, SourceIDs: []string{e.local}})
	if ids := e.walkDestinations(t, "/v1/destinations?connection_id="+mine.ID, e.key()); len(ids) != 2 {
		t.Fatalf("grant with the source lists %v", ids)
	}
	// Creating needs write, in the grant and in the key's scopes; reading needs discover.
	readOnly, _ := devs.Connect(ctx, e.creds.ApplicationID, e.creds.UserID, platform.ModeTest, platform.Grant{OperationClasses: []string{"discover"}})
	checkProblem(t, e.do("POST", "/v1/destinations?connection_id="+readOnly.ID, `{"source_id":"`+e.local+`","label":"x"}`, e.key()...), 403, "forbidden")
	if r := e.do("GET", "/v1/destinations/"+did+"?connection_id="+readOnly.ID, "", e.key()...); r.status != 200 {
		t.Fatalf("read with discover: %d %s", r.status, r.body)
	}
	_, discoverKey, err := devs.CreateKey(ctx, e.creds.ApplicationID, platform.ModeTest, []string{"discover"})
	if err != nil {
		t.Fatal(err)
	}
	checkProblem(t, e.do("POST", "/v1/destinations"+e.cx(), `{"source_id":"`+e.local+`","label":"x"}`, "Authorization", "Bearer "+discoverKey), 403, "forbidden")
	// No credential at all.
	checkProblem(t, e.do("GET", "/v1/destinations", ""), 401, "unauthenticated")
	// The signed-in user creates one in their test tenant.
	r := e.do("POST", "/v1/destinations", `{"source_id":"`+e.local+`","label":"By the user"}`, with(e.session(), "Svc-Mode", "test")...)
	if r.status != 201 {
		t.Fatalf("user create: %d %s", r.status, r.body)
	}
}

func TestCreateDestinationIdempotency(t *testing.T) {
	e := newDstEnv(t)
	body := `{"source_id":"` + e.local + `","label":"Once"}`
	r1 := e.create(t, body, "Idempotency-Key", "dst-1")
	r2 := e.create(t, `{"label":"Once",  "source_id":"`+e.local+`"}`, "Idempotency-Key", "dst-1")
	if r1.status != 201 || r2.status != 201 || r2.header.Get("Idempotent-Replayed") != "true" || !bytes.Equal(r1.body, r2.body) {
		t.Fatalf("replay: %d %d %q\n%s\n%s", r1.status, r2.status, r2.header.Get("Idempotent-Replayed"), r1.body, r2.body)
	}
	checkProblem(t, e.create(t, `{"source_id":"`+e.local+`","label":"Twice"}`, "Idempotency-Key", "dst-1"), 409, "idempotency_key_reused")
	if ids := e.walkDestinations(t, "/v1/destinations"+e.cx(), e.key()); len(ids) != 2 { // the seed's and this one
		t.Fatalf("destinations after a replay: %v", ids)
	}
	// A refusal is replayed too.
	bad := `{"source_id":"src_01JD0000000000000000000000","label":"x"}`
	checkProblem(t, e.create(t, bad, "Idempotency-Key", "dst-2"), 400, "validation_failed")
	if r := e.create(t, bad, "Idempotency-Key", "dst-2"); r.status != 400 || r.header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("replayed refusal: %d %v", r.status, r.header)
	}
}

func TestOpenDestinationWrites(t *testing.T) {
	e := newDstEnv(t)
	ctx := context.Background()
	did := e.mustCreate(t, `{"source_id":"`+e.local+`","label":"Folder"}`)["destinationId"].(string)
	d, p, ref, err := e.srv.OpenDestination(ctx, e.userTestTenant(), did)
	if err != nil {
		t.Fatal(err)
	}
	if d.GetDestinationId() != did || d.GetLabel() != "Folder" {
		t.Fatalf("destination %v", d)
	}
	w, ok := providers.AsWriter(p)
	if !ok {
		t.Fatal("the destination's provider cannot write")
	}
	content := []byte("exported by svc\n")
	sum := sha256.Sum256(content)
	obj, err := w.Write(ctx, providers.WriteRequest{SourceRef: ref, Path: "exports/2026/hello.txt", Kind: providers.KindFile,
		SizeBytes: int64(len(content)), SHA256: hex.EncodeToString(sum[:]), Mode: providers.WriteCopy}, bytes.NewReader(content))
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(e.folder, "exports", "2026", "hello.txt"))
	if err != nil || !bytes.Equal(got, content) {
		t.Fatalf("on disk: %q, %v (wrote %+v)", got, err, obj)
	}
	// Unknown ids are not found, for the engine and for the API alike.
	if _, _, _, err := e.srv.OpenDestination(ctx, e.userTestTenant(), "dst_01JD0000000000000000000000"); !errors.Is(err, platform.ErrNotFound) {
		t.Fatalf("unknown destination: %v", err)
	}
}

func TestOpenDestinationRefusesAProviderThatStoppedWriting(t *testing.T) {
	ro := &readOnlyFiles{}
	ro.writable.Store(true)
	mw := maskedWriterProvider{ro}
	reg, err := builtin.Registry(builtin.Options{})
	if err != nil {
		t.Fatal(err)
	}
	desc, _ := ro.Describe(context.Background())
	reg.Register(providers.InProcess(desc, func(context.Context, providers.Config) (providers.Provider, error) { return mw, nil }))
	t.Cleanup(func() { reg.Close() })
	e := newEnv(t, func(c *server.Config) { c.Providers = reg })
	ctx := context.Background()
	d, err := e.srv.AddDestination(ctx, e.userTestTenant(), server.DestinationSpec{Provider: providers.VendorBFiles, SourceRef: "drive", Label: "Drive"})
	if err != nil {
		t.Fatal(err)
	}
	ro.writable.Store(false)
	if _, _, _, err := e.srv.OpenDestination(ctx, e.userTestTenant(), d.DestinationId); !errors.Is(err, providers.ErrUnsupported) {
		t.Fatalf("open a destination that cannot write: %v", err)
	}
	// AddDestination refuses it up front.
	if _, err := e.srv.AddDestination(ctx, e.userTestTenant(), server.DestinationSpec{Provider: providers.VendorBFiles, Label: "Drive"}); !errors.Is(err, providers.ErrUnsupported) {
		t.Fatalf("AddDestination of a provider that cannot write: %v", err)
	}
	for _, spec := range []server.DestinationSpec{
		{Provider: providers.VendorDLocal, Config: providers.Config{"root": t.TempDir()}},
		{Provider: providers.VendorDLocal, Config: providers.Config{"root": t.TempDir()}, Label: "x", PathTemplate: "/abs/{path}"},
		{Provider: "nope", Label: "x"},
	} {
		if _, err := e.srv.AddDestination(ctx, e.userTestTenant(), spec); err == nil {
			t.Errorf("AddDestination(%+v) succeeded", spec)
		}
	}
}

// maskedWriterProvider is readOnlyFiles with a Write method that its Supports masks.
type maskedWriterProvider struct{ *readOnlyFiles }

func (maskedWriterProvider) Write(context.Context, providers.WriteRequest, io.Reader) (providers.Object, error) {
	return providers.Object{}, providers.ErrUnsupported
}

func TestSeededDestinationIsALocalFolder(t *testing.T) {
	e := newDstEnv(t)
	ids := e.walkDestinations(t, "/v1/destinations"+e.cx(), e.key())
	if len(ids) != 1 {
		t.Fatalf("seeded destinations: %v", ids)
	}
	d := e.do("GET", "/v1/destinations/"+ids[0]+e.cx(), "", e.key()...).json(t)
	if d["provider"] != "vendor_d_local" || d["label"] != "Local export folder" || d["external"] != true {
		t.Fatalf("seeded destination: %v", d)
	}
	dir := filepath.Join(e.dataDir, devseed.ExportDir)
	fi, err := os.Stat(dir)
	if err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o700 {
		t.Fatalf("dev export folder: %v %v", fi, err)
	}
	// It writes into that folder, and it is no source.
	_, p, ref, err := e.srv.OpenDestination(context.Background(), e.userTestTenant(), ids[0])
	if err != nil {
		t.Fatal(err)
	}
	w, _ := providers.AsWriter(p)
	if _, err := w.Write(context.Background(), providers.WriteRequest{SourceRef: ref, Path: "a/b.txt", SizeBytes: -1}, strings.NewReader("hi")); err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile(filepath.Join(dir, "a", "b.txt")); err != nil || string(got) != "hi" {
		t.Fatalf("dev export folder holds %q, %v", got, err)
	}
	r := e.do("GET", "/v1/sources"+e.cx(), "", e.key()...)
	if strings.Contains(string(r.body), ids[0]) || strings.Contains(string(r.body), "Local export folder") {
		t.Fatalf("the dev destination is listed as a source: %s", r.body)
	}
}
