package dropbox_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"

	"svc.dev/svc/internal/vendorfake"
	"svc.dev/svc/internal/vendorfake/dropbox"
	"svc.dev/svc/providers"
	"svc.dev/svc/providers/contenthash"
	provider "svc.dev/svc/providers/dropbox"
)

// The shape test drives every route of the fake and checks what it
// answers against the Dropbox API's stone specification
// (testdata/stone/subset.stone): each result against the route's result
// type, each 409 error's "error" against the route's error union, 401 and
// 429 bodies against auth.AuthError and auth.RateLimitError, and the
// content routes' Dropbox-API-Arg arguments (the test's own and those svc's
// provider sends) against the routes' argument types. Fields the
// spec does not define, values of the wrong type, strings that break an
// alias's pattern or length, missing required fields and unknown union
// tags all fail it.

type run struct {
	t      *testing.T
	s      *dropbox.Server
	st     stone
	tested vendorfake.Coverage
}

func (r *run) call(route, body string, hdr map[string]string) (*http.Response, []byte) {
	r.t.Helper()
	r.tested.Saw("POST " + route)
	req, _ := http.NewRequest("POST", r.s.URL()+route, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+dropbox.AccessToken)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		r.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, b
}

func (r *run) result(what string, resp *http.Response, b []byte, typ string) map[string]any {
	r.t.Helper()
	if resp.StatusCode != 200 {
		r.t.Fatalf("%s: %d %s", what, resp.StatusCode, b)
	}
	v := vendorfake.DecodeJSON(r.t, b)
	for _, e := range r.st.check(v, typ, "files", what) {
		r.t.Error(e)
	}
	m, _ := v.(map[string]any)
	return m
}

// routeError checks a route error: HTTP 409 with {"error_summary",
// "error", "user_message"}, error an instance of the route's error union.
func (r *run) routeError(what string, resp *http.Response, b []byte, typ, wantSummary string) {
	r.t.Helper()
	r.envelope(what, resp, b, http.StatusConflict, typ, wantSummary)
}

func (r *run) envelope(what string, resp *http.Response, b []byte, status int, typ, wantSummary string) {
	r.t.Helper()
	if resp.StatusCode != status {
		r.t.Errorf("%s: status %d, want %d", what, resp.StatusCode, status)
	}
	m, _ := vendorfake.DecodeJSON(r.t, b).(map[string]any)
	for k := range m {
		if !slices.Contains([]string{"error_summary", "error", "user_message"}, k) {
			r.t.Errorf("%s: %q in an error envelope", what, k)
		}
	}
	if s, _ := m["error_summary"].(string); !strings.HasPrefix(s, wantSummary) {
		r.t.Errorf("%s: error_summary %q, want %s...", what, s, wantSummary)
	}
	for _, e := range r.st.check(m["error"], typ, "files", what+".error") {
		r.t.Error(e)
	}
}

func TestShapes(t *testing.T) {
	st, err := loadStone("testdata/stone/subset.stone")
	if err != nil {
		t.Fatal(err)
	}
	if len(st) < 30 || st["files.FileMetadata"] == nil || len(st.fieldsOf(st["files.FileMetadata"])) < 15 {
		t.Fatalf("the spec subset did not load: %d definitions", len(st))
	}
	s := dropbox.Seeded(dropbox.Seed{Seed: 5, Files: 12})
	defer s.Close()
	r := &run{t: t, s: s, st: st}

	// Token endpoint (RFC 6749 5.1 and 5.2).
	for _, rt := range []string{dropbox.RefreshToken, "revoked"} {
		r.tested.Saw("POST /oauth2/token")
		resp, err := http.PostForm(s.TokenURL(), url.Values{"grant_type": {"refresh_token"}, "refresh_token": {rt}})
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		allowed := []string{"access_token", "token_type", "expires_in", "refresh_token", "scope", "account_id", "uid"}
		if resp.StatusCode != 200 {
			allowed = []string{"error", "error_description", "error_uri"}
		}
		for k := range vendorfake.DecodeJSON(t, b).(map[string]any) {
			if !slices.Contains(allowed, k) {
				t.Errorf("token answer (%d): %q", resp.StatusCode, k)
			}
		}
	}

	// The authorization endpoint and the authorization_code grant: tokens
	// that work and the account's id; the code is single-use.
	r.tested.Saw("GET /oauth2/authorize")
	first, replay := vendorfake.Consent(t, s.AuthURL(), s.TokenURL(), dropbox.ClientID)
	tok, _ := vendorfake.DecodeJSON(t, first.Body).(map[string]any)
	for k := range tok {
		if !slices.Contains([]string{"access_token", "token_type", "expires_in", "refresh_token", "scope", "account_id", "uid", "team_id", "id_token"}, k) {
			t.Errorf("code grant answer: %q", k)
		}
	}
	if first.Status != 200 || tok["refresh_token"] == nil || tok["account_id"] != dropbox.AccountID {
		t.Errorf("code grant: %d %s", first.Status, first.Body)
	}
	for _, e := range st.check(tok["account_id"], "users_common.AccountId", "users", "code grant's account_id") {
		t.Error(e)
	}
	if m, _ := vendorfake.DecodeJSON(t, replay.Body).(map[string]any); replay.Status != 400 || m["error"] != "invalid_grant" {
		t.Errorf("a code used twice: %d %s", replay.Status, replay.Body)
	}
	if access, _ := tok["access_token"].(string); !s.Valid(access) {
		t.Errorf("the code grant's access token is not accepted")
	}

	// list_folder and continue, in pages, to the end of the round.
	resp, b := r.call("/2/files/list_folder", `{"path":"","recursive":true,"limit":5}`, nil)
	page := r.result("list_folder", resp, b, "ListFolderResult")
	var entries []any
	for {
		entries = append(entries, page["entries"].([]any)...)
		if page["has_more"] != true {
			break
		}
		resp, b = r.call("/2/files/list_folder/continue", `{"cursor":"`+page["cursor"].(string)+`"}`, nil)
		page = r.result("list_folder/continue", resp, b, "ListFolderResult")
	}
	cur := page["cursor"].(string)
	var file map[string]any
	for _, e := range entries {
		if m := e.(map[string]any); m[".tag"] == "file" {
			file = m
			break
		}
	}
	p := file["path_lower"].(string)
	resp, b = r.call("/2/files/list_folder", `{"path":"/no such folder"}`, nil)
	r.routeError("list_folder of a missing folder", resp, b, "ListFolderError", "path/not_found")
	resp, b = r.call("/2/files/list_folder/continue", `{"cursor":"AAFnot-a-cursor!"}`, nil)
	r.routeError("continue with a bad cursor", resp, b, "ListFolderContinueError", "reset")

	resp, b = r.call("/2/files/get_metadata", `{"path":"`+p+`"}`, nil)
	meta := r.result("get_metadata", resp, b, "Metadata")
	resp, b = r.call("/2/files/get_metadata", `{"path":"/nope.txt"}`, nil)
	r.routeError("get_metadata of a missing file", resp, b, "GetMetadataError", "path/not_found")

	// download: the result in a header, the content as the body.
	resp, content := r.call("/2/files/download", "", map[string]string{"Dropbox-API-Arg": `{"path":"` + p + `"}`})
	res := vendorfake.DecodeJSON(t, []byte(resp.Header.Get("Dropbox-API-Result")))
	for _, e := range st.check(res, "FileMetadata", "files", "download result") {
		t.Error(e)
	}
	h := contenthash.NewDropbox()
	h.Write(content)
	if hex.EncodeToString(h.Sum(nil)) != meta["content_hash"] {
		t.Errorf("downloaded content does not match content_hash")
	}
	resp, b = r.call("/2/files/download", "", map[string]string{"Dropbox-API-Arg": `{"path":"/nope.txt"}`})
	r.routeError("download of a missing file", resp, b, "DownloadError", "path/not_found")

	// delete_v2: a stale parent_rev, then the right one; restore.
	resp, b = r.call("/2/files/delete_v2", `{"path":"`+p+`","parent_rev":"000000000000001"}`, nil)
	r.routeError("delete with a stale parent_rev", resp, b, "DeleteError", "path_write/conflict")
	resp, b = r.call("/2/files/delete_v2", `{"path":"`+p+`","parent_rev":"`+meta["rev"].(string)+`"}`, nil)
	r.result("delete_v2", resp, b, "DeleteResult")
	resp, b = r.call("/2/files/delete_v2", `{"path":"`+p+`"}`, nil)
	r.routeError("delete of a deleted file", resp, b, "DeleteError", "path_lookup/not_found")
	resp, b = r.call("/2/files/get_metadata", `{"path":"`+p+`","include_deleted":true}`, nil)
	if m := r.result("get_metadata of a deleted file", resp, b, "Metadata"); m[".tag"] != "deleted" {
		t.Errorf("get_metadata of a deleted file with include_deleted: %v", m)
	}
	resp, b = r.call("/2/files/list_folder/continue", `{"cursor":"`+cur+`"}`, nil)
	changes := r.result("changes after a delete", resp, b, "ListFolderResult")
	if es := changes["entries"].([]any); len(es) != 1 || es[0].(map[string]any)[".tag"] != "deleted" {
		t.Errorf("changes after a delete: %v", es)
	}
	resp, b = r.call("/2/files/restore", `{"path":"`+file["path_display"].(string)+`","rev":"`+meta["rev"].(string)+`"}`, nil)
	r.result("restore", resp, b, "FileMetadata")
	resp, b = r.call("/2/files/restore", `{"path":"`+p+`","rev":"0123456789abcdef"}`, nil)
	r.routeError("restore of an unknown revision", resp, b, "RestoreError", "invalid_revision")

	// upload: a new file, the same path again (a conflict), a wrong content_hash.
	up := func(p, mode, hash string) (*http.Response, []byte) {
		arg := `{"path":"` + p + `","mode":"` + mode + `"`
		if hash != "" {
			arg += `,"content_hash":"` + hash + `"`
		}
		return r.content("/2/files/upload", arg+"}", nil)
	}
	resp, b = up("/Uploads/new.txt", "add", "")
	r.result("upload", resp, b, "FileMetadata")
	resp, b = up("/Uploads/new.txt", "add", "")
	r.routeError("upload onto a file", resp, b, "UploadError", "path/conflict")
	resp, b = up("/Uploads/other.txt", "add", strings.Repeat("0", 64))
	r.routeError("upload with a wrong content_hash", resp, b, "UploadError", "content_hash_mismatch")

	r.uploadSessions()

	resp, b = r.call("/2/users/get_space_usage", "", nil)
	if resp.StatusCode != 200 {
		t.Fatalf("get_space_usage: %d", resp.StatusCode)
	}
	for _, e := range st.check(vendorfake.DecodeJSON(t, b), "SpaceUsage", "users", "get_space_usage") {
		t.Error(e)
	}

	// Faults and authentication.
	s.Inject(dropbox.Fault{PathPrefix: "/2/files/get_metadata", Status: http.StatusTooManyRequests, RetryAfter: 2, Times: 1})
	resp, b = r.call("/2/files/get_metadata", `{"path":"`+p+`"}`, nil)
	r.envelope("rate limited", resp, b, http.StatusTooManyRequests, "auth.RateLimitError", "too_many_requests")
	if resp.Header.Get("Retry-After") != "2" {
		t.Errorf("429 without Retry-After")
	}
	s.Revoke()
	resp, b = r.call("/2/files/get_metadata", `{"path":"`+p+`"}`, nil)
	r.envelope("revoked token", resp, b, http.StatusUnauthorized, "auth.AuthError", "invalid_access_token")

	for _, p := range r.tested.Missing(s.Patterns()) {
		t.Errorf("route %s is not checked", p)
	}
}

// argTypes are the stone types of the content routes' arguments.
var argTypes = map[string]string{
	"/2/files/upload":                   "UploadArg",
	"/2/files/upload_session/start":     "UploadSessionStartArg",
	"/2/files/upload_session/append_v2": "UploadSessionAppendArg",
	"/2/files/upload_session/finish":    "UploadSessionFinishArg",
}

// content calls a content route with its argument in Dropbox-API-Arg and
// data as the body, after checking the argument against its stone type.
func (r *run) content(route, arg string, data []byte) (*http.Response, []byte) {
	r.t.Helper()
	for _, e := range r.st.check(vendorfake.DecodeJSON(r.t, []byte(arg)), argTypes[route], "files", route+" argument") {
		r.t.Error(e)
	}
	r.tested.Saw("POST " + route)
	req, _ := http.NewRequest("POST", r.s.URL()+route, bytes.NewReader(data))
	req.Header.Set("Authorization", "Bearer "+dropbox.AccessToken)
	req.Header.Set("Content-Type", "application/octet-stream")
	req.Header.Set("Dropbox-API-Arg", arg)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		r.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, b
}

func dropboxHash(b []byte) string {
	h := contenthash.NewDropbox()
	h.Write(b)
	return hex.EncodeToString(h.Sum(nil))
}

// uploadSessions drives upload_session/start, append_v2 and finish, and
// their errors, then checks the arguments svc's provider sends on each.
func (r *run) uploadSessions() {
	t := r.t
	a, b2 := bytes.Repeat([]byte("a"), 1000), bytes.Repeat([]byte("b"), 500)
	cursor := func(id string, off int) string { return fmt.Sprintf(`{"session_id":%q,"offset":%d}`, id, off) }

	resp, b := r.content("/2/files/upload_session/start", `{"close":false,"content_hash":"`+strings.Repeat("0", 64)+`"}`, a)
	r.routeError("start with a wrong content_hash", resp, b, "UploadSessionStartError", "content_hash_mismatch")
	resp, b = r.content("/2/files/upload_session/start", `{"close":false,"session_type":"sequential","content_hash":"`+dropboxHash(a)+`"}`, a)
	id, _ := r.result("start", resp, b, "UploadSessionStartResult")["session_id"].(string)

	resp, b = r.content("/2/files/upload_session/append_v2", `{"cursor":`+cursor(id, 10)+`}`, b2)
	r.routeError("append at a wrong offset", resp, b, "UploadSessionAppendError", "incorrect_offset")
	if m, _ := vendorfake.DecodeJSON(t, b).(map[string]any); fmt.Sprint(m["error"].(map[string]any)["correct_offset"]) != "1000" {
		t.Errorf("incorrect_offset: %s, want correct_offset 1000", b)
	}
	resp, b = r.content("/2/files/upload_session/append_v2", `{"cursor":`+cursor("pid_upload_session:nope", 0)+`}`, b2)
	r.routeError("append to an unknown session", resp, b, "UploadSessionAppendError", "not_found")
	resp, b = r.content("/2/files/upload_session/append_v2", `{"cursor":`+cursor(id, 1000)+`,"close":true,"content_hash":"`+dropboxHash(b2)+`"}`, b2)
	if resp.StatusCode != 200 || strings.TrimSpace(string(b)) != "null" {
		t.Errorf("append: %d %s, want 200 null (the route's result is Void)", resp.StatusCode, b)
	}
	resp, b = r.content("/2/files/upload_session/append_v2", `{"cursor":`+cursor(id, 1500)+`}`, b2)
	r.routeError("append to a closed session", resp, b, "UploadSessionAppendError", "closed")

	commit := func(p string) string {
		return `{"path":"` + p + `","mode":"add","autorename":false,"mute":true,"strict_conflict":false}`
	}
	resp, b = r.content("/2/files/upload_session/finish", `{"cursor":`+cursor(id, 1000)+`,"commit":`+commit("/Uploads/session.txt")+`}`, nil)
	r.routeError("finish at a wrong offset", resp, b, "UploadSessionFinishError", "lookup_failed/incorrect_offset")
	resp, b = r.content("/2/files/upload_session/finish", `{"cursor":`+cursor(id, 1500)+`,"commit":`+commit("/Uploads/new.txt")+`}`, nil)
	r.routeError("finish onto a file", resp, b, "UploadSessionFinishError", "path/conflict")
	resp, b = r.content("/2/files/upload_session/finish", `{"cursor":`+cursor(id, 1500)+`,"commit":`+commit("/Uploads/session.txt")+`}`, nil)
	if m := r.result("finish", resp, b, "FileMetadata"); m["content_hash"] != dropboxHash(append(a, b2...)) {
		t.Errorf("finish stored %v", m)
	}
	resp, b = r.content("/2/files/upload_session/finish", `{"cursor":`+cursor(id, 1500)+`,"commit":`+commit("/Uploads/again.txt")+`}`, nil)
	r.routeError("finish of a finished session", resp, b, "UploadSessionFinishError", "lookup_failed/not_found")

	// svc's provider, through a session and one upload: each argument it
	// sends is checked against its route's type.
	rec := &argRecorder{}
	cfg := providers.Config(r.s.ProviderConfig())
	cfg["upload_chunk_bytes"] = "4194304"
	p, err := provider.Open(cfg, rec)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{2<<22 + 1, 10} {
		content := bytes.Repeat([]byte("c"), n)
		sum := sha256.Sum256(content)
		if _, err := p.Write(context.Background(), providers.WriteRequest{Path: fmt.Sprintf("Uploads/provider-%d.bin", n), SizeBytes: int64(n),
			SHA256: hex.EncodeToString(sum[:])}, bytes.NewReader(content)); err != nil {
			t.Fatal(err)
		}
	}
	seen := map[string]int{}
	for _, c := range rec.calls() {
		seen[c.route]++
		for _, e := range r.st.check(vendorfake.DecodeJSON(t, []byte(c.arg)), argTypes[c.route], "files", "provider's "+c.route+" argument") {
			t.Error(e)
		}
	}
	if seen["/2/files/upload_session/start"] != 1 || seen["/2/files/upload_session/append_v2"] != 3 ||
		seen["/2/files/upload_session/finish"] != 1 || seen["/2/files/upload"] != 1 {
		t.Errorf("the provider's content calls: %v", seen)
	}
}

type argCall struct{ route, arg string }

// argRecorder is a transport that keeps the Dropbox-API-Arg of every
// content route request.
type argRecorder struct {
	mu   sync.Mutex
	seen []argCall
}

func (a *argRecorder) RoundTrip(r *http.Request) (*http.Response, error) {
	if _, ok := argTypes[r.URL.Path]; ok {
		a.mu.Lock()
		a.seen = append(a.seen, argCall{r.URL.Path, r.Header.Get("Dropbox-API-Arg")})
		a.mu.Unlock()
	}
	return http.DefaultTransport.RoundTrip(r)
}

func (a *argRecorder) calls() []argCall {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]argCall(nil), a.seen...)
}
