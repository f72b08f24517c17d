package server_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"svc.dev/svc/platform/export"
	"svc.dev/svc/providers"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/platform"
	"svc.dev/svc/platform/archive"
	"svc.dev/svc/server"

	"svc.dev/svc/storage/bolt"
)

// newSeededEnv is newEnv with the dev seed's execution (receipt, vault objects, manifests).
func newSeededEnv(t *testing.T, opts ...func(*server.Config)) *env {
	t.Helper()
	return startEnv(t, nil, opts...)
}

func (e *env) testSession() []string { return with(e.session(), "Svc-Mode", "test") }

// waitJob polls a job until it has finished.
func (e *env) waitJob(t *testing.T, id string, hdr []string) map[string]any {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	last := -1.0
	for {
		j := e.do("GET", "/v1/jobs/"+id, "", hdr...).json(t)
		if p, _ := j["progress"].(float64); p < last {
			t.Fatalf("progress went back from %v to %v", last, p)
		} else {
			last = p
		}
		switch j["status"] {
		case "succeeded", "failed", "cancelled":
			return j
		}
		if time.Now().After(deadline) {
			t.Fatalf("job %s did not finish: %v", id, j)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestAccountFromRealData(t *testing.T) {
	e := newSeededEnv(t)
	a := e.do("GET", "/v1/account", "", e.testSession()...).json(t)
	dev, _ := a["developer"].(map[string]any)
	var srcs struct{ Data []map[string]any }
	json.Unmarshal(e.do("GET", "/v1/sources?connection_id="+e.creds.ConnectionID, "", e.key()...).body, &srcs)
	if a["id"] != e.creds.UserID || a["status"] != "active" || a["plan"] != "free" || len(srcs.Data) == 0 || a["sources_connected"] != float64(len(srcs.Data)) ||
		a["vault_bytes"].(float64) <= 0 || dev == nil || len(dev["org_ids"].([]any)) != 1 || dev["org_ids"].([]any)[0] != e.creds.OrgID {
		t.Fatalf("account (test tenant): %v", a)
	}
	// The live tenant holds nothing yet.
	if a := e.do("GET", "/v1/account", "", e.session()...).json(t); a["sources_connected"] != float64(0) || a["vault_bytes"] != float64(0) {
		t.Fatalf("account (live tenant): %v", a)
	}
	if a := e.do("PATCH", "/v1/account", `{"display_name":"Ana","locale":"es"}`, e.session()...).json(t); a["display_name"] != "Ana" || a["locale"] != "es" {
		t.Fatalf("patched: %v", a)
	}
	checkProblem(t, e.do("PATCH", "/v1/account", `{"display_name":"`+strings.Repeat("x", 81)+`"}`, e.session()...), 400, "validation_failed")
	checkProblem(t, e.do("PATCH", "/v1/account", `{"locale":"fr"}`, e.session()...), 400, "validation_failed")
	if a := e.do("GET", "/v1/account", "", e.session()...).json(t); a["display_name"] != "Ana" {
		t.Fatalf("a refused change changed the account: %v", a)
	}
}

func TestAccountExport(t *testing.T) {
	e := newSeededEnv(t)
	r := e.do("POST", "/v1/account/export", "", with(e.session(), "Idempotency-Key", "exp-1")...)
	if r.status != 202 {
		t.Fatalf("export: %d %s", r.status, r.body)
	}
	j := r.json(t)
	if j["kind"] != "export" || (j["status"] != "queued" && j["status"] != "running") {
		t.Fatalf("export job: %v", j)
	}
	id := j["id"].(string)
	if again := e.do("POST", "/v1/account/export", "", with(e.session(), "Idempotency-Key", "exp-1")...); again.json(t)["id"] != id ||
		again.header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("replay: %s", again.body)
	}
	j = e.waitJob(t, id, e.session())
	res, _ := j["result"].(map[string]any)
	if j["status"] != "succeeded" || j["progress"] != float64(100) || res == nil || res["url"] == nil {
		t.Fatalf("finished export: %v", j)
	}
	u, err := url.Parse(res["url"].(string))
	if err != nil {
		t.Fatal(err)
	}
	dl := e.do("GET", u.RequestURI(), "")
	if dl.status != 200 || dl.header.Get("Content-Type") != "application/gzip" || dl.header.Get("Accept-Ranges") != "bytes" {
		t.Fatalf("download: %d %v", dl.status, dl.header)
	}
	sum := sha256.Sum256(dl.body)
	if hex.EncodeToString(sum[:]) != res["sha256"] || float64(len(dl.body)) != res["size_bytes"] {
		t.Fatalf("archive of %d bytes does not match the job's result %v", len(dl.body), res)
	}
	idx, err := archive.Verify(bytes.NewReader(dl.body), nil)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]archive.Entry{}
	for _, f := range idx.Files {
		files[f.Path] = f
	}
	if _, ok := files["account.json"]; !ok {
		t.Errorf("no account.json in %v", idx.Files)
	}
	// The receipt is there as its exact signed bytes, the vault content with its SHA-256.
	cx := "?connection_id=" + e.creds.ConnectionID
	var xs struct{ Data []map[string]any }
	json.Unmarshal(e.do("GET", "/v1/executions"+cx, "", e.key()...).body, &xs)
	rid := xs.Data[0]["receipt_id"].(string)
	raw := e.do("GET", "/v1/receipts/"+rid+cx, "", e.key()...).body
	rs := sha256.Sum256(raw)
	if f, ok := files["test/receipts/"+rid+".json"]; !ok || f.SHA256 != hex.EncodeToString(rs[:]) {
		t.Errorf("receipt in the archive: %+v", f)
	}
	var vs struct{ Data []map[string]any }
	json.Unmarshal(e.do("GET", "/v1/vault/objects"+cx, "", e.key()...).body, &vs)
	content := map[string]bool{}
	eml := 0
	for path, f := range files {
		if strings.HasPrefix(path, "test/vault/content/") {
			content[f.SHA256] = true
			if strings.HasSuffix(path, ".eml") {
				eml++
			}
		}
	}
	if eml == 0 {
		t.Error("no message is exported as .eml")
	}
	for _, v := range vs.Data {
		if v["state"] == "committed" && !content[v["sha256"].(string)] {
			t.Errorf("vault object %v is not in the archive", v["id"])
		}
		if _, ok := files["test/vault/objects/"+v["id"].(string)+".json"]; !ok {
			t.Errorf("no record of %v", v["id"])
		}
	}
	for _, want := range []string{"test/manifests/bundle.json", "test/plans/", "test/executions/", "test/sources/", "test/connections/", "test/jobs/"} {
		found := false
		for path := range files {
			found = found || strings.HasPrefix(path, want)
		}
		if !found {
			t.Errorf("nothing at %s", want)
		}
	}

	// Resumable: a range, and a range only if the archive is unchanged.
	part := e.do("GET", u.RequestURI(), "", "Range", "bytes=100-199")
	if part.status != 206 || !bytes.Equal(part.body, dl.body[100:200]) {
		t.Fatalf("range: %d, %d bytes", part.status, len(part.body))
	}
	if r := e.do("GET", u.RequestURI(), "", "Range", "bytes=100-199", "If-Range", `"other"`); r.status != 200 {
		t.Fatalf("If-Range with another ETag: %d", r.status)
	}
	// The URL is authenticated and expires; reading the job again gives a fresh one.
	q := u.Query()
	tampered := "x"
	if strings.HasPrefix(q.Get("sig"), "x") {
		tampered = "y" // a change, whatever the signature's first character
	}
	q.Set("sig", tampered+q.Get("sig")[1:])
	checkProblem(t, e.do("GET", u.Path+"?"+q.Encode(), ""), 403, "forbidden")
	e.clock.Advance(2 * time.Hour)
	checkProblem(t, e.do("GET", u.RequestURI(), ""), 403, "forbidden")
	fresh, _ := url.Parse(e.do("GET", "/v1/jobs/"+id, "", e.session()...).json(t)["result"].(map[string]any)["url"].(string))
	if r := e.do("GET", fresh.RequestURI(), ""); r.status != 200 || !bytes.Equal(r.body, dl.body) {
		t.Fatalf("fresh URL: %d", r.status)
	}
	// After the retention period the archive is gone.
	e.clock.Advance(export.Retention)
	if res := e.do("GET", "/v1/jobs/"+id, "", e.session()...).json(t)["result"].(map[string]any); res["url"] != nil {
		t.Fatalf("an expired archive still has a URL: %v", res)
	}

	// The webhook event of completion: svc.job.succeeded about the job, with no URL in it.
	var evs struct{ Data []map[string]any }
	json.Unmarshal(e.do("GET", "/v1/events?types=svc.job.succeeded", "", e.session()...).body, &evs)
	found := false
	for _, ev := range evs.Data {
		if ev["subject"] == id {
			found = true
			if strings.Contains(string(mustJSON(t, ev)), "sig=") {
				t.Errorf("event carries the download URL: %v", ev)
			}
		}
	}
	if !found {
		t.Fatalf("no svc.job.succeeded for %s: %v", id, evs.Data)
	}
	// Another user does not see the job.
	other := e.do("POST", "/v1/auth/sign-up", `{"email":"other@example.com","password":"a long enough password"}`)
	cookie := strings.Split(other.header.Get("Set-Cookie"), ";")[0]
	checkProblem(t, e.do("GET", "/v1/jobs/"+id, "", "Cookie", cookie), 404, "not_found")
	checkProblem(t, e.do("POST", "/v1/jobs/"+id+"/cancel", "", "Cookie", cookie), 404, "not_found")
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestJobsListFiltersAndCancel(t *testing.T) {
	e := newEnv(t)
	var page struct {
		Data       []map[string]any `json:"data"`
		NextCursor *string          `json:"next_cursor"`
	}
	r := e.do("GET", "/v1/jobs", "", e.testSession()...)
	json.Unmarshal(r.body, &page)
	if r.status != 200 || len(page.Data) != 2 || page.Data[0]["kind"] != "export" || page.Data[1]["kind"] != "seed" {
		t.Fatalf("jobs: %s", r.body)
	}
	json.Unmarshal(e.do("GET", "/v1/jobs?kind=seed&status=succeeded", "", e.testSession()...).body, &page)
	if len(page.Data) != 1 || page.Data[0]["kind"] != "seed" || page.Data[0]["progress"] != float64(100) {
		t.Fatalf("seed jobs: %v", page.Data)
	}
	json.Unmarshal(e.do("GET", "/v1/jobs?status=running", "", e.testSession()...).body, &page)
	if len(page.Data) != 0 {
		t.Fatalf("running jobs: %v", page.Data)
	}
	// The application reaches the user's jobs through its connection.
	json.Unmarshal(e.do("GET", "/v1/jobs?limit=1&connection_id="+e.creds.ConnectionID, "", e.key()...).body, &page)
	if len(page.Data) != 1 || page.NextCursor == nil {
		t.Fatalf("first page: %v", page)
	}
	first := page.Data[0]["id"]
	json.Unmarshal(e.do("GET", "/v1/jobs?limit=1&cursor="+url.QueryEscape(*page.NextCursor)+"&connection_id="+e.creds.ConnectionID, "", e.key()...).body, &page)
	if len(page.Data) != 1 || page.Data[0]["id"] == first || page.NextCursor != nil {
		t.Fatalf("second page: %v", page)
	}
	checkProblem(t, e.do("GET", "/v1/jobs?kind=scrub", "", e.testSession()...), 400, "validation_failed")
	checkProblem(t, e.do("GET", "/v1/jobs?limit=0", "", e.testSession()...), 400, "validation_failed")
	checkProblem(t, e.do("GET", "/v1/jobs/job_nope", "", e.testSession()...), 400, "validation_failed")
	checkProblem(t, e.do("GET", "/v1/jobs/job_01JD0000000000000000000000", "", e.testSession()...), 404, "not_found")
	checkProblem(t, e.do("POST", "/v1/jobs/"+first.(string)+"/cancel", "", e.testSession()...), 409, "invalid_state")
	// The application sees the user's export job, but never its download URL: the archive is
	// the whole account, beyond any grant.
	json.Unmarshal(e.do("GET", "/v1/jobs?kind=export&connection_id="+e.creds.ConnectionID, "", e.key()...).body, &page)
	if len(page.Data) != 1 || page.Data[0]["status"] != "succeeded" {
		t.Fatalf("export jobs: %v", page.Data)
	}
	if res := page.Data[0]["result"].(map[string]any); res["url"] != nil || res["sha256"] == nil {
		t.Fatalf("the application got %v", res)
	}
	viaSession := e.do("GET", "/v1/jobs/"+page.Data[0]["id"].(string), "", e.testSession()...).json(t)["result"].(map[string]any)
	if viaSession["url"] == nil {
		t.Fatalf("the user gets no URL: %v", viaSession)
	}
}

func TestAccountDeletion(t *testing.T) {
	grace := 72 * time.Hour
	var dataDir string
	e, _, src, _ := localEnv(t, 5, func(c *server.Config) { c.DeletionGrace = grace; dataDir = c.DataDir })
	x := runLocal(t, e, src) // the application's execution: its receipt is kept
	rid := x["receipt_id"].(string)
	ctx := context.Background()
	userID := e.creds.UserID
	testTenant := platform.Tenant{Owner: userID, Mode: platform.ModeTest}.String()
	cx := "?connection_id=" + e.creds.ConnectionID
	if n, _, _ := e.srv.Vault().List(ctx, testTenant, "", 1000, nil); len(n) == 0 {
		t.Fatal("nothing in the vault to delete")
	}

	if n := vaultFiles(t, dataDir); n == 0 {
		t.Fatal("no vault files before the deletion")
	}
	// A search waits for the index to hold what is vaulted: the tenant has an index on disk.
	if r := e.do("GET", "/v1/vault/search"+cx+"&q=x", "", e.key()...); r.status != 200 {
		t.Fatalf("search: %d %s", r.status, r.body)
	}
	if idx, _ := filepath.Glob(filepath.Join(dataDir, "search", "*"+userID+"*")); len(idx) == 0 {
		t.Fatal("no search index before the deletion")
	}

	// Delete, then change one's mind.
	r := e.do("DELETE", "/v1/account", "", e.session()...)
	j := r.json(t)
	if r.status != 202 || j["kind"] != "deletion" || j["status"] != "queued" {
		t.Fatalf("delete: %d %s", r.status, r.body)
	}
	if a := e.do("GET", "/v1/account", "", e.session()...).json(t); a["status"] != "deleting" {
		t.Fatalf("account: %v", a)
	}
	if again := e.do("DELETE", "/v1/account", "", e.session()...).json(t); again["id"] != j["id"] {
		t.Fatalf("a second DELETE made another job: %v", again)
	}
	checkProblem(t, e.do("POST", "/v1/account/export", "", e.session()...), 409, "invalid_state")
	// Only the user can call the deletion off, not an application with a connection.
	live, err := e.srv.Developers().Connect(ctx, e.creds.ApplicationID, userID, platform.ModeLive,
		platform.Grant{ID: "grt_1", OperationClasses: platform.OperationClasses})
	if err != nil {
		t.Fatal(err)
	}
	liveCx := "?connection_id=" + live.ID
	if g := e.do("GET", "/v1/jobs/"+j["id"].(string)+liveCx, "", e.liveKey()...); g.status != 200 {
		t.Fatalf("the application reads the deletion job: %d %s", g.status, g.body)
	}
	checkProblem(t, e.do("POST", "/v1/jobs/"+j["id"].(string)+"/cancel"+liveCx, "", e.liveKey()...), 403, "forbidden")
	c := e.do("POST", "/v1/jobs/"+j["id"].(string)+"/cancel", "", e.session()...).json(t)
	if c["status"] != "cancelled" {
		t.Fatalf("cancel: %v", c)
	}
	if a := e.do("GET", "/v1/account", "", e.session()...).json(t); a["status"] != "active" {
		t.Fatalf("account after cancelling: %v", a)
	}
	e.clock.Advance(grace + time.Hour)
	if n, err := e.srv.RunDueDeletions(ctx); err != nil || n != 0 {
		t.Fatalf("a cancelled deletion ran: %d %v", n, err)
	}

	// Delete for good: nothing happens before the grace period ends.
	j = e.do("DELETE", "/v1/account", "", e.session()...).json(t)
	e.clock.Advance(grace - time.Minute)
	if n, _ := e.srv.RunDueDeletions(ctx); n != 0 {
		t.Fatal("deleted before the grace period ended")
	}
	if r := e.do("GET", "/v1/plans"+cx, "", e.key()...); r.status != 200 {
		t.Fatalf("the application lost access during the grace period: %d", r.status)
	}
	e.clock.Advance(2 * time.Minute)
	if n, err := e.srv.RunDueDeletions(ctx); err != nil || n != 1 {
		t.Fatalf("due deletion: %d %v", n, err)
	}

	// Every trace is gone: the account, its sessions and the application's connection...
	checkProblem(t, e.do("GET", "/v1/account", "", e.session()...), 401, "unauthenticated")
	if _, err := e.srv.Accounts().User(ctx, userID); !errors.Is(err, platform.ErrNotFound) {
		t.Fatalf("user record: %v", err)
	}
	if r := e.do("GET", "/v1/plans"+cx, "", e.key()...); r.status != 401 && r.status != 404 {
		t.Fatalf("the application still reaches the account: %d %s", r.status, r.body)
	}
	// ... the vault (objects, records and data key) and every record of both tenants ...
	if objs, _, _ := e.srv.Vault().List(ctx, testTenant, "", 1000, nil); len(objs) != 0 {
		t.Fatalf("%d vault objects left", len(objs))
	}
	if n := vaultFiles(t, dataDir); n != 0 {
		t.Errorf("%d vault content files left on disk", n)
	}
	// ... the search index of its mail's words (issue 21, 6) ...
	if left, _ := filepath.Glob(filepath.Join(dataDir, "search", "*"+userID+"*")); len(left) != 0 {
		t.Errorf("search indexes left on disk: %v", left)
	}
	for _, name := range []string{"plans", "executions", "sources", "manifests", "events", "destinations"} {
		col := bolt.NewCollection(server.DBOf(e.srv), name, func() *svcv1.Plan { return &svcv1.Plan{} })
		n := 0
		col.ScanAll(ctx, func(tenant, _ string, _ *svcv1.Plan) bool {
			if strings.HasSuffix(tenant, ":"+userID) {
				n++
			}
			return true
		})
		if n != 0 {
			t.Errorf("%d %s records left", n, name)
		}
	}
	// ... but the receipt the application was given still verifies, and the deletion job says
	// what happened.
	if _, err := server.DBOf(e.srv).GetBlob(ctx, "receipts", testTenant+"/"+rid); err != nil {
		t.Errorf("the application's receipt was not kept: %v", err)
	}
	jobs := bolt.NewCollection(server.DBOf(e.srv), "jobs", func() *svcv1.Job { return &svcv1.Job{} })
	dj, err := jobs.Get(ctx, platform.Tenant{Owner: userID, Mode: platform.ModeLive}.String(), j["id"].(string))
	if err != nil || dj.GetStatus() != svcv1.JobStatus_JOB_STATUS_SUCCEEDED {
		t.Fatalf("deletion job: %v %v", dj, err)
	}
	// The organization's keys no longer work; the email can sign up again.
	checkProblem(t, e.do("GET", "/v1/webhooks", "", e.key()...), 401, "unauthenticated")
}

// vaultFiles counts the files holding content under the data directory's vault (work files in
// tmp/ aside).
func vaultFiles(t *testing.T, dataDir string) int {
	t.Helper()
	n := 0
	filepath.WalkDir(filepath.Join(dataDir, "vault"), func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && filepath.Base(filepath.Dir(path)) != "tmp" {
			t.Logf("vault file %s", path)
			n++
		}
		return nil
	})
	return n
}

// One export at a time: asking while one is queued or running answers that job.
func TestAccountExportOneAtATime(t *testing.T) {
	e := newEnv(t)
	jobs := bolt.NewCollection(server.DBOf(e.srv), "jobs", func() *svcv1.Job { return &svcv1.Job{} })
	live := platform.Tenant{Owner: e.creds.UserID, Mode: platform.ModeLive}.String()
	at := timestamppb.New(e.clock.Now())
	pending := &svcv1.Job{Id: "job_01JD0000000000000000000000", Kind: svcv1.JobKind_JOB_KIND_EXPORT, Status: svcv1.JobStatus_JOB_STATUS_RUNNING,
		CreatedAt: at, UpdatedAt: at}
	if err := jobs.Put(context.Background(), live, pending.Id, pending); err != nil {
		t.Fatal(err)
	}
	r := e.do("POST", "/v1/account/export", "", e.session()...)
	if r.status != 202 || r.json(t)["id"] != pending.Id {
		t.Fatalf("while one runs: %d %s", r.status, r.body)
	}
	// The test tenant has none running: a new one starts there.
	if r := e.do("POST", "/v1/account/export", "", e.testSession()...); r.status != 202 || r.json(t)["id"] == pending.Id {
		t.Fatalf("test tenant: %d %s", r.status, r.body)
	}
}

// Jobs found running at start were cut short by a crash: an export fails as interrupted, a
// deletion goes back to queued to run again.
func TestJobsInterruptedByACrash(t *testing.T) {
	dir := t.TempDir()
	clk := &clock{t: time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)}
	cfg := server.Config{DataDir: dir, Password: cheapPasswords, Now: clk.Now}
	srv, err := server.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	jobs := bolt.NewCollection(server.DBOf(srv), "jobs", func() *svcv1.Job { return &svcv1.Job{} })
	at := timestamppb.New(clk.Now())
	ctx := context.Background()
	for _, j := range []*svcv1.Job{
		{Id: "job_01JD0000000000000000000001", Kind: svcv1.JobKind_JOB_KIND_EXPORT, Status: svcv1.JobStatus_JOB_STATUS_RUNNING, Progress: 40, CreatedAt: at, UpdatedAt: at},
		{Id: "job_01JD0000000000000000000002", Kind: svcv1.JobKind_JOB_KIND_DELETION, Status: svcv1.JobStatus_JOB_STATUS_RUNNING, CreatedAt: at, UpdatedAt: at},
	} {
		if err := jobs.Put(ctx, "live:usr_01JD0000000000000000000000", j.Id, j); err != nil {
			t.Fatal(err)
		}
	}
	srv.Close()
	srv, err = server.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	jobs = bolt.NewCollection(server.DBOf(srv), "jobs", func() *svcv1.Job { return &svcv1.Job{} })
	ex, _ := jobs.Get(ctx, "live:usr_01JD0000000000000000000000", "job_01JD0000000000000000000001")
	if ex.GetStatus() != svcv1.JobStatus_JOB_STATUS_FAILED || !strings.HasPrefix(ex.GetError(), "interrupted") || ex.GetProgress() != 40 || ex.GetFinishedAt() == nil {
		t.Fatalf("export after the crash: %v", ex)
	}
	del, _ := jobs.Get(ctx, "live:usr_01JD0000000000000000000000", "job_01JD0000000000000000000002")
	if del.GetStatus() != svcv1.JobStatus_JOB_STATUS_QUEUED {
		t.Fatalf("deletion after the crash: %v", del)
	}
}

// Content that fails verification while it is exported fails the export, naming the object
// (now marked corrupt), rather than handing out an archive without it.
func TestAccountExportOfCorruptContent(t *testing.T) {
	var dataDir string
	e, _, src, _ := localEnv(t, 3, func(c *server.Config) { dataDir = c.DataDir })
	runLocal(t, e, src)
	if n := corruptVaultFiles(t, dataDir); n == 0 {
		t.Fatal("nothing to corrupt")
	}
	r := e.do("POST", "/v1/account/export", "", e.testSession()...)
	j := e.waitJob(t, r.json(t)["id"].(string), e.testSession())
	// The objects that fail verification are left out and named; the rest is exported.
	res, _ := j["result"].(map[string]any)
	failed, _ := res["objects_failed_verification"].([]any)
	if j["status"] != "succeeded" || len(failed) == 0 {
		t.Fatalf("export of corrupt content: %v", j)
	}
	u, err := url.Parse(res["url"].(string))
	if err != nil {
		t.Fatal(err)
	}
	dl := e.do("GET", u.RequestURI(), "")
	idx, err := archive.Verify(bytes.NewReader(dl.body), nil)
	if err != nil {
		t.Fatal(err)
	}
	named, content := false, 0
	for _, f := range idx.Files {
		if strings.HasSuffix(f.Path, "/vault/failed-verification.json") {
			named = true
		}
		if strings.Contains(f.Path, "/vault/content/") {
			content++
		}
	}
	if !named {
		t.Errorf("the archive does not name the objects that failed verification: %v", idx.Files)
	}
	// At rest the archive is sealed: it reads as nothing without the server's key.
	if onDisk, err := os.ReadFile(filepath.Join(dataDir, "exports", j["id"].(string)+".tar.gz")); err != nil || !archive.IsSealed(onDisk) || bytes.Contains(onDisk, dl.body[:64]) {
		t.Errorf("the archive at rest is not sealed (%v)", err)
	}
	// The three objects are each either exported (verified) or named as failed, never both.
	if content+len(failed) != 3 {
		t.Errorf("%d content entries and %d failed objects, want 3 in all", content, len(failed))
	}
}

// The application connected to the user hears of the export's completion by webhook:
// svc.job.succeeded about the job, with its size and SHA-256 and no download URL.
func TestAccountExportWebhook(t *testing.T) {
	e := newEnv(t, func(c *server.Config) { c.Dev = true })
	rcv := newReceiver(t)
	r := e.do("POST", "/v1/webhooks", `{"url":"`+rcv.ts.URL+`/hook","event_types":["svc.job.succeeded"],"mode":"test"}`, e.key()...)
	secret, _ := r.json(t)["secret"].(string)
	if r.status != 201 {
		t.Fatalf("webhook: %d %s", r.status, r.body)
	}
	j := e.do("POST", "/v1/account/export", "", e.testSession()...).json(t)
	j = e.waitJob(t, j["id"].(string), e.testSession())
	h, body := rcv.wait(t, 0)
	signed(t, h, body, secret)
	var evs []map[string]any
	if err := json.Unmarshal(body, &evs); err != nil || len(evs) != 1 {
		t.Fatalf("delivery: %s", body)
	}
	data, _ := evs[0]["data"].(map[string]any)
	res, _ := data["result"].(map[string]any)
	if evs[0]["type"] != "svc.job.succeeded" || evs[0]["subject"] != j["id"] || data["kind"] != "export" ||
		res["sha256"] != j["result"].(map[string]any)["sha256"] || res["url"] != nil || strings.Contains(string(body), "sig=") {
		t.Fatalf("event: %s", body)
	}
}

// An account keeps one export archive: a new export replaces the one before, whose job then
// offers no download (issue 21, 4: repeated exports filled the disk).
func TestNewExportReplacesTheOld(t *testing.T) {
	var dataDir string
	e := newEnv(t, func(c *server.Config) { dataDir = c.DataDir })
	first := e.waitJob(t, e.do("POST", "/v1/account/export", "", e.session()...).json(t)["id"].(string), e.session())
	second := e.waitJob(t, e.do("POST", "/v1/account/export", "", e.session()...).json(t)["id"].(string), e.session())
	if first["status"] != "succeeded" || second["status"] != "succeeded" || first["id"] == second["id"] {
		t.Fatalf("exports: %v, %v", first["status"], second["status"])
	}
	if _, err := os.Stat(filepath.Join(dataDir, "exports", first["id"].(string)+".tar.gz")); !os.IsNotExist(err) {
		t.Errorf("the first archive is still kept: %v", err)
	}
	again := e.do("GET", "/v1/jobs/"+first["id"].(string), "", e.session()...).json(t)
	if res, _ := again["result"].(map[string]any); res["url"] != nil {
		t.Errorf("the replaced export still offers a download: %v", res["url"])
	}
	if res, _ := second["result"].(map[string]any); res["url"] == nil {
		t.Errorf("the new export offers no download: %v", second)
	}
}

// Exports have a daily byte quota per account: once the archives of the last 24 hours hold
// it, a new export is refused with a problem saying when the next can start (issue 21, 4).
func TestExportDailyQuota(t *testing.T) {
	e := newEnv(t, func(c *server.Config) { c.ExportDailyBytes = 1 })
	refused := func(what string, creds []string) {
		t.Helper()
		r := e.do("POST", "/v1/account/export", "", creds...)
		if p := r.json(t); r.status != 409 || p["code"] != "limit_reached" || !strings.Contains(fmt.Sprint(p["detail"]), "next export can start") {
			t.Fatalf("%s: %d %s", what, r.status, r.body)
		}
	}
	// The dev seed's export, made a moment ago, holds the day's bytes, for both modes.
	refused("after the seed's export", e.session())
	refused("test mode", e.testSession())
	e.clock.Advance(24*time.Hour + time.Second)
	r := e.do("POST", "/v1/account/export", "", e.session()...)
	if r.status != 202 {
		t.Fatalf("a day later: %d %s", r.status, r.body)
	}
	if j := e.waitJob(t, r.json(t)["id"].(string), e.session()); j["status"] != "succeeded" {
		t.Fatalf("a day later: %v", j)
	}
	refused("after that export", e.session())
}

// A deletion that comes due while one of the account's executions runs stops it before it
// erases, and afterwards nothing of the account is left in the store or on disk but what
// docs/account.md says is kept (issue 21, 5).
func TestDeletionRacingAnExecution(t *testing.T) {
	var dataDir string
	e := newEnv(t, func(c *server.Config) { c.DeletionGrace = time.Hour; dataDir = c.DataDir })
	ctx := context.Background()
	userID := e.creds.UserID
	src, err := e.srv.ConnectSource(ctx, e.userTestTenant(), server.SourceSpec{Provider: providers.Simulated, SourceRef: "files/race",
		Kind: "drive", DisplayName: "Slow drive", Config: providers.Config{"objects": "300", "latency": "25ms"}})
	if err != nil {
		t.Fatal(err)
	}
	cx := "?connection_id=" + e.creds.ConnectionID
	p := e.do("POST", "/v1/plans"+cx, `{"intent":"svc","source_ids":["`+src.Id+`"]}`, e.key()...).json(t)
	e.do("POST", "/v1/plans/"+p["planId"].(string)+"/authorize"+cx, `{"plan_hash":"`+p["hash"].(string)+`"}`, e.key()...)
	exe := e.do("POST", "/v1/plans/"+p["planId"].(string)+"/execute"+cx, "", e.key()...).json(t)["id"].(string)
	testTenant := e.userTestTenant().String()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if objs, _, _ := e.srv.Vault().List(ctx, testTenant, "", 1, nil); len(objs) > 0 {
			break // the execution is vaulting
		}
		if time.Now().After(deadline) {
			t.Fatal("the execution vaulted nothing")
		}
	}
	j := e.do("DELETE", "/v1/account", "", e.session()...).json(t)
	e.clock.Advance(2 * time.Hour)
	if x := e.do("GET", "/v1/executions/"+exe+cx, "", e.key()...).json(t); x["status"] != "running" {
		t.Fatalf("the execution is %v before the deletion runs: the test did not race", x["status"])
	}
	if n, err := e.srv.RunDueDeletions(ctx); err != nil || n != 1 {
		t.Fatalf("due deletion: %d %v", n, err)
	}
	time.Sleep(200 * time.Millisecond) // anything still running would write now
	if n := vaultFiles(t, dataDir); n != 0 {
		t.Errorf("%d vault content files left on disk", n)
	}
	filepath.WalkDir(dataDir, func(path string, d os.DirEntry, err error) error {
		if err == nil && strings.Contains(path, userID) {
			t.Errorf("left on disk: %s", path)
		}
		return nil
	})
	live := platform.Tenant{Owner: userID, Mode: platform.ModeLive}.String()
	server.DBOf(e.srv).Scan(func(bucket string, k, v []byte) bool {
		if !bytes.Contains(k, []byte(userID)) && !bytes.Contains(v, []byte(userID)) {
			return true
		}
		key := string(k)
		switch {
		case key == live+"/"+j["id"].(string) || key == j["id"].(string):
			return true // the deletion job's record (and its owner) says what happened
		case bucket == "blob_receipts" || (bucket == "resource_owners" && strings.HasPrefix(key, "rcp_")):
			return true // receipts an application was given keep verifying
		case bucket == "orgs":
			return true // the organizations the user created stay, their keys revoked
		case bucket == "res_events" && strings.HasPrefix(key, "app:"):
			return true // an application's own event stream (it was told of its connection)
		}
		t.Errorf("left in the store: %s %q", bucket, k)
		return true
	})
}
