package dropbox_test

import (
	"encoding/hex"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"svc.dev/svc/internal/vendorfake"
	"svc.dev/svc/internal/vendorfake/dropbox"
	"svc.dev/svc/providers/contenthash"
)

// The shape test drives every route of the fake and checks what it
// answers against the Dropbox API's stone specification
// (testdata/stone/subset.stone): each result against the route's result
// type, each 409 error's "error" against the route's error union, 401 and
// 429 bodies against auth.AuthError and auth.RateLimitError. Fields the
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
		return r.call("/2/files/upload", "", map[string]string{"Dropbox-API-Arg": arg + "}", "Content-Type": "application/octet-stream"})
	}
	resp, b = up("/Uploads/new.txt", "add", "")
	r.result("upload", resp, b, "FileMetadata")
	resp, b = up("/Uploads/new.txt", "add", "")
	r.routeError("upload onto a file", resp, b, "UploadError", "path/conflict")
	resp, b = up("/Uploads/other.txt", "add", strings.Repeat("0", 64))
	r.routeError("upload with a wrong content_hash", resp, b, "UploadError", "content_hash_mismatch")

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
