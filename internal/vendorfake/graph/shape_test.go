package graph_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"

	"svc.dev/svc/internal/vendorfake"
	"svc.dev/svc/internal/vendorfake/graph"
	"svc.dev/svc/providers/contenthash"
)

// The shape test drives every route of the fake and checks each JSON body
// it answers against Microsoft Graph's published metadata (the CSDL from
// which Graph's OpenAPI description is generated; the subset in testdata,
// see testdata/README.md): every property the fake emits must be a
// property of the entity or complex type (or its base types) with a
// compatible EDM type, every enum value a member, every annotation an
// OData control annotation or a term of the schema that applies to the
// type. Collection envelopes may hold only "value" and the OData control
// links; error bodies must be OData errors; token answers RFC 6749's.

type shapeRun struct {
	t      *testing.T
	s      *graph.Server
	sch    *schema
	c      *http.Client
	tested vendorfake.Coverage
}

func (r *shapeRun) do(pattern, method, u string, body io.Reader, hdr map[string]string) (*http.Response, []byte) {
	r.t.Helper()
	r.tested.Saw(pattern)
	if !strings.HasPrefix(u, "http") {
		u = r.s.URL() + u
	}
	req, err := http.NewRequest(method, u, body)
	if err != nil {
		r.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+graph.AccessToken)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := r.c.Do(req)
	if err != nil {
		r.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, b
}

func decodeJSON(t *testing.T, b []byte) map[string]any {
	t.Helper()
	m, ok := vendorfake.DecodeJSON(t, b).(map[string]any)
	if !ok {
		t.Fatalf("not a JSON object: %s", b)
	}
	return m
}

func (r *shapeRun) entity(what string, b []byte, typ string) map[string]any {
	r.t.Helper()
	m := decodeJSON(r.t, b)
	for _, e := range r.sch.check(m, typ, what, false) {
		r.t.Error(e)
	}
	return m
}

// collection checks an OData collection response and returns its items.
func (r *shapeRun) collection(what string, b []byte, typ string) (items []map[string]any, next, delta string) {
	r.t.Helper()
	m := decodeJSON(r.t, b)
	for k, v := range m {
		switch k {
		case "value":
			for _, e := range r.sch.check(v, "Collection("+typ+")", what+".value", false) {
				r.t.Error(e)
			}
		case "@odata.context", "@odata.nextLink", "@odata.deltaLink":
			str, ok := v.(string)
			if _, err := url.Parse(str); !ok || err != nil {
				r.t.Errorf("%s.%s: %v is not a URL", what, k, v)
			}
		default:
			r.t.Errorf("%s: %q is not part of an OData collection response", what, k)
		}
	}
	for _, v := range m["value"].([]any) {
		items = append(items, v.(map[string]any))
	}
	next, _ = m["@odata.nextLink"].(string)
	delta, _ = m["@odata.deltaLink"].(string)
	return items, next, delta
}

// odataError checks Graph's error body against the published OpenAPI
// description's microsoft.graph.ODataErrors schemas (testdata/README.md):
// ODataError {error: MainError} with MainError {code, message (both
// required), target, details: [ErrorDetails {code, message, target}],
// innerError (an object, service-specific)}.
func (r *shapeRun) odataError(what string, resp *http.Response, b []byte, status int) {
	r.t.Helper()
	if resp.StatusCode != status {
		r.t.Errorf("%s: status %d, want %d", what, resp.StatusCode, status)
	}
	m := decodeJSON(r.t, b)
	e, ok := m["error"].(map[string]any)
	if len(m) != 1 || !ok {
		r.t.Fatalf("%s: not an OData error: %s", what, b)
	}
	for k, v := range e {
		switch k {
		case "code", "message", "target":
			if _, ok := v.(string); !ok {
				r.t.Errorf("%s: error.%s is %T", what, k, v)
			}
		case "details":
			list, ok := v.([]any)
			if !ok {
				r.t.Errorf("%s: error.details is %T", what, v)
			}
			for _, d := range list {
				m, _ := d.(map[string]any)
				if _, ok := m["code"].(string); !ok {
					r.t.Errorf("%s: error.details item without a code", what)
				}
				if _, ok := m["message"].(string); !ok {
					r.t.Errorf("%s: error.details item without a message", what)
				}
			}
		case "innerError":
			if _, ok := v.(map[string]any); !ok {
				r.t.Errorf("%s: error.innerError is %T", what, v)
			}
		default:
			r.t.Errorf("%s: error.%s is not part of an OData error", what, k)
		}
	}
	if e["code"] == nil || e["message"] == nil {
		r.t.Errorf("%s: error without code or message: %s", what, b)
	}
}

func TestShapes(t *testing.T) {
	sch, err := loadSchema("testdata/graph-v1.0-subset.csdl.xml")
	if err != nil {
		t.Fatal(err)
	}
	s := graph.Seeded(graph.Seed{Seed: 3, Messages: 14, Files: 6})
	defer s.Close()
	r := &shapeRun{t: t, s: s, sch: sch, c: &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}

	// The token endpoint: RFC 6749 sections 5.1 and 5.2.
	tokenPattern := "POST /oauth2/v2.0/token"
	for _, rt := range []string{graph.RefreshToken, "not-a-grant"} {
		resp, b := r.do(tokenPattern, "POST", "/oauth2/v2.0/token", strings.NewReader(url.Values{"grant_type": {"refresh_token"}, "refresh_token": {rt}}.Encode()), map[string]string{"Content-Type": "application/x-www-form-urlencoded"})
		allowed := []string{"access_token", "token_type", "expires_in", "refresh_token", "scope"}
		if resp.StatusCode != 200 {
			allowed = []string{"error", "error_description", "error_uri", "error_codes", "timestamp", "trace_id", "correlation_id"}
		}
		for k := range decodeJSON(t, b) {
			if !slices.Contains(allowed, k) {
				t.Errorf("token answer (%d): field %q", resp.StatusCode, k)
			}
		}
	}

	// The authorization endpoint and the authorization_code grant: the
	// answer (RFC 6749 section 5.1 and Microsoft's ext_expires_in) carries
	// tokens that work; the code is single-use (section 5.2).
	r.tested.Saw("GET /oauth2/v2.0/authorize")
	r.tested.Saw(tokenPattern)
	first, replay := vendorfake.Consent(t, s.AuthURL(), s.TokenURL(), graph.ClientID)
	tok := decodeJSON(t, first.Body)
	for k := range tok {
		if !slices.Contains([]string{"access_token", "token_type", "expires_in", "ext_expires_in", "refresh_token", "scope", "id_token"}, k) {
			t.Errorf("code grant answer: field %q", k)
		}
	}
	if first.Status != 200 || tok["refresh_token"] == nil {
		t.Errorf("code grant: %d %s", first.Status, first.Body)
	}
	if replay.Status != 400 || decodeJSON(t, replay.Body)["error"] != "invalid_grant" {
		t.Errorf("a code used twice: %d %s", replay.Status, replay.Body)
	}
	if access, _ := tok["access_token"].(string); !s.Valid(access) {
		t.Errorf("the code grant's access token is not accepted")
	}

	// Mail folders, paged.
	_, b := r.do("GET /v1.0/me/mailFolders", "GET", "/v1.0/me/mailFolders?$top=2", nil, nil)
	folders, next, _ := r.collection("mailFolders", b, "graph.mailFolder")
	for next != "" {
		var more []map[string]any
		_, b = r.do("GET /v1.0/me/mailFolders", "GET", next, nil, nil)
		more, next, _ = r.collection("mailFolders (next)", b, "graph.mailFolder")
		folders = append(folders, more...)
	}
	if len(folders) < 6 {
		t.Fatalf("%d top-level folders", len(folders))
	}
	_, b = r.do("GET /v1.0/me/mailFolders/{id}", "GET", "/v1.0/me/mailFolders/inbox", nil, nil)
	r.entity("mailFolder", b, "graph.mailFolder")
	// Folder sizes: PR_MESSAGE_SIZE_EXTENDED expanded (vendor_b_mail's quota).
	_, b = r.do("GET /v1.0/me/mailFolders", "GET", "/v1.0/me/mailFolders?$top=100&$expand=singleValueExtendedProperties($filter=id%20eq%20'Long%200x0E08')", nil, nil)
	sized, _, _ := r.collection("mailFolders with sizes", b, "graph.mailFolder")
	for _, f := range sized {
		if props, _ := f["singleValueExtendedProperties"].([]any); len(props) != 1 {
			t.Errorf("folder %v without its size property", f["displayName"])
		}
	}
	_, b = r.do("GET /v1.0/me/mailFolders/{id}/childFolders", "GET", "/v1.0/me/mailFolders/inbox/childFolders", nil, nil)
	if kids, _, _ := r.collection("childFolders", b, "graph.mailFolder"); len(kids) != 1 {
		t.Errorf("inbox has %d child folders", len(kids))
	}

	// Message delta: full, then with $select and the size property, paged.
	deltaPattern := "GET /v1.0/me/mailFolders/{id}/messages/delta"
	var msgs []map[string]any
	var deltaLink string
	for _, q := range []string{"", "?$select=subject,from,toRecipients,internetMessageHeaders,changeKey,parentFolderId&$expand=singleValueExtendedProperties($filter=id%20eq%20'Integer%200x0E08')"} {
		u := "/v1.0/me/mailFolders/inbox/messages/delta" + q
		msgs = nil
		for u != "" {
			_, b = r.do(deltaPattern, "GET", u, nil, map[string]string{"Prefer": "odata.maxpagesize=3"})
			var page []map[string]any
			page, u, deltaLink = r.collection("messages delta", b, "graph.message")
			msgs = append(msgs, page...)
		}
	}
	if len(msgs) == 0 || deltaLink == "" {
		t.Fatalf("inbox delta: %d messages, deltaLink %q", len(msgs), deltaLink)
	}
	id := msgs[0]["id"].(string)
	_, b = r.do("GET /v1.0/me/messages/{id}", "GET", "/v1.0/me/messages/"+url.PathEscape(id), nil, nil)
	r.entity("message", b, "graph.message")
	resp, b := r.do("GET /v1.0/me/messages/{id}/{value}", "GET", "/v1.0/me/messages/"+url.PathEscape(id)+"/$value", nil, nil)
	if resp.StatusCode != 200 || !bytes.Contains(b, []byte("\n")) || json.Valid(b) {
		t.Errorf("$value: %d, %.80q", resp.StatusCode, b)
	}
	resp, b = r.do("POST /v1.0/me/messages/{id}/move", "POST", "/v1.0/me/messages/"+url.PathEscape(id)+"/move", strings.NewReader(`{"destinationId":"deleteditems"}`), nil)
	if resp.StatusCode != http.StatusCreated {
		t.Errorf("move: %d", resp.StatusCode)
	}
	r.entity("moved message", b, "graph.message")
	_, b = r.do(deltaPattern, "GET", deltaLink, nil, nil)
	changes, _, _ := r.collection("messages delta round 2", b, "graph.message")
	if len(changes) != 1 || changes[0]["@removed"] == nil || changes[0]["id"] != id {
		t.Errorf("delta after a move out of the inbox: %v", changes)
	}
	r.mailWrites()
	resp, b = r.do(deltaPattern, "GET", "/v1.0/me/mailFolders/inbox/messages/delta?$deltatoken=expired", nil, nil)
	r.odataError("expired delta token", resp, b, http.StatusGone)
	resp, b = r.do("GET /v1.0/me/messages/{id}", "GET", "/v1.0/me/messages/nope", nil, nil)
	r.odataError("missing message", resp, b, http.StatusNotFound)

	// The drive.
	_, b = r.do("GET /v1.0/me/drive", "GET", "/v1.0/me/drive", nil, nil)
	r.entity("drive", b, "graph.drive")
	u := "/v1.0/me/drive/root/delta?$top=4"
	var items []map[string]any
	for u != "" {
		_, b = r.do("GET /v1.0/me/drive/root/delta", "GET", u, nil, nil)
		var page []map[string]any
		page, u, deltaLink = r.collection("drive delta", b, "graph.driveItem")
		items = append(items, page...)
	}
	var file map[string]any
	for _, it := range items {
		if it["file"] != nil {
			file = it
			break
		}
	}
	fid := file["id"].(string)
	_, b = r.do("GET /v1.0/me/drive/items/{id}", "GET", "/v1.0/me/drive/items/"+url.PathEscape(fid), nil, nil)
	item := r.entity("driveItem", b, "graph.driveItem")
	resp, _ = r.do("GET /v1.0/me/drive/items/{id}/content", "GET", "/v1.0/me/drive/items/"+url.PathEscape(fid)+"/content", nil, nil)
	if resp.StatusCode != http.StatusFound || resp.Header.Get("Location") == "" {
		t.Fatalf("content: %d, Location %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	resp, content := r.do("GET /_download/{id}", "GET", resp.Header.Get("Location"), nil, nil)
	hashes := item["file"].(map[string]any)["hashes"].(map[string]any)
	q := contenthash.NewQuickXor()
	q.Write(content)
	sum := sha256.Sum256(content)
	if resp.StatusCode != 200 || hashes["quickXorHash"] != base64.StdEncoding.EncodeToString(q.Sum(nil)) ||
		(hashes["sha256Hash"] != nil && hashes["sha256Hash"] != strings.ToUpper(hex.EncodeToString(sum[:]))) {
		t.Errorf("downloaded content does not match the item's hashes %v", hashes)
	}
	resp, b = r.do("DELETE /v1.0/me/drive/items/{id}", "DELETE", "/v1.0/me/drive/items/"+url.PathEscape(fid), nil, map[string]string{"If-Match": `"{other},9"`})
	r.odataError("delete with a stale eTag", resp, b, http.StatusPreconditionFailed)
	resp, _ = r.do("DELETE /v1.0/me/drive/items/{id}", "DELETE", "/v1.0/me/drive/items/"+url.PathEscape(fid), nil, map[string]string{"If-Match": item["eTag"].(string)})
	if resp.StatusCode != http.StatusNoContent {
		t.Errorf("delete: %d", resp.StatusCode)
	}
	_, b = r.do("GET /v1.0/me/drive/root/delta", "GET", deltaLink, nil, nil)
	changes, _, _ = r.collection("drive delta round 2", b, "graph.driveItem")
	if len(changes) != 1 || changes[0]["deleted"] == nil {
		t.Errorf("drive delta after a delete: %v", changes)
	}
	resp, b = r.do("POST /v1.0/me/drive/items/{id}/restore", "POST", "/v1.0/me/drive/items/"+url.PathEscape(fid)+"/restore", strings.NewReader(`{}`), nil)
	if resp.StatusCode != 200 {
		t.Errorf("restore: %d", resp.StatusCode)
	}
	r.entity("restored item", b, "graph.driveItem")
	up := "PUT /v1.0/me/drive/{pathContent...}"
	resp, b = r.do(up, "PUT", "/v1.0/me/drive/root:/Uploads/new%20file.txt:/content", strings.NewReader("hello"), map[string]string{"Content-Type": "text/plain"})
	if resp.StatusCode != http.StatusCreated {
		t.Errorf("upload: %d", resp.StatusCode)
	}
	r.entity("uploaded item", b, "graph.driveItem")
	resp, b = r.do(up, "PUT", "/v1.0/me/drive/root:/Uploads/new%20file.txt:/content?@microsoft.graph.conflictBehavior=fail", strings.NewReader("again"), nil)
	r.odataError("upload onto a file", resp, b, http.StatusConflict)
	resp, b = r.do(up, "PUT", "/v1.0/me/drive/root:/Uploads/new%20file.txt:/content?@microsoft.graph.conflictBehavior=replace", strings.NewReader("again"), nil)
	if resp.StatusCode != http.StatusOK {
		t.Errorf("replacing upload: %d", resp.StatusCode)
	}
	r.entity("replaced item", b, "graph.driveItem")
	resp, b = r.do("GET /v1.0/me/drive/root/delta", "GET", "/v1.0/me/drive/root/delta?token=bogus", nil, nil)
	r.odataError("expired drive token", resp, b, http.StatusGone)
	r.uploadSession()

	// Faults and authentication.
	s.Inject(graph.Fault{PathPrefix: "/v1.0/me/drive", Status: http.StatusTooManyRequests, RetryAfter: 3, Times: 1})
	resp, b = r.do("GET /v1.0/me/drive", "GET", "/v1.0/me/drive", nil, nil)
	r.odataError("throttled", resp, b, http.StatusTooManyRequests)
	if resp.Header.Get("Retry-After") != "3" {
		t.Errorf("throttled without Retry-After")
	}
	req, _ := http.NewRequest("GET", s.Endpoint()+"/me/drive", nil)
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	r.odataError("no token", resp, b, http.StatusUnauthorized)

	for _, p := range r.tested.Missing(s.Patterns()) {
		t.Errorf("route %s is not checked", p)
	}
}

// uploadSession drives an upload session: createUploadSession (an
// uploadSession), fragments PUT to its pre-authenticated URL (202 with an
// uploadSession, then the driveItem), a status query, a cancel, and the
// errors: a token sent to the upload URL, a fragment out of place, a
// conflict at creation.
func (r *shapeRun) uploadSession() {
	t := r.t
	create := "POST /v1.0/me/drive/{pathSession...}"
	resp, b := r.do(create, "POST", "/v1.0/me/drive/root:/Uploads/big.bin:/createUploadSession", strings.NewReader(`{"item":{"@microsoft.graph.conflictBehavior":"fail"}}`), nil)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("createUploadSession: %d %s", resp.StatusCode, b)
	}
	sess := r.entity("uploadSession", b, "graph.uploadSession")
	u, _ := sess["uploadUrl"].(string)
	content := bytes.Repeat([]byte("x"), graph.FragmentGranularity+10)
	put := func(first, last int, hdr map[string]string) (*http.Response, []byte) {
		t.Helper()
		req, _ := http.NewRequest("PUT", u, bytes.NewReader(content[first:last+1]))
		req.Header.Set("Content-Range", "bytes "+strconv.Itoa(first)+"-"+strconv.Itoa(last)+"/"+strconv.Itoa(len(content)))
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		r.tested.Saw("/_upload/{id}")
		resp, err := r.c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, b
	}
	resp, b = put(0, graph.FragmentGranularity-1, map[string]string{"Authorization": "Bearer " + graph.AccessToken})
	r.odataError("a token sent to the upload URL", resp, b, http.StatusUnauthorized)
	resp, b = put(0, graph.FragmentGranularity-1, nil)
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("first fragment: %d %s", resp.StatusCode, b)
	}
	if m := r.entity("uploadSession (202)", b, "graph.uploadSession"); fmt.Sprint(m["nextExpectedRanges"]) != "["+strconv.Itoa(graph.FragmentGranularity)+"-]" {
		t.Errorf("after the first fragment: %v", m)
	}
	resp, b = put(0, graph.FragmentGranularity-1, nil)
	r.odataError("a fragment out of place", resp, b, http.StatusRequestedRangeNotSatisfiable)
	req, _ := http.NewRequest("GET", u, nil)
	resp, err := r.c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	r.entity("uploadSession status", b, "graph.uploadSession")
	resp, b = put(graph.FragmentGranularity, len(content)-1, nil)
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("last fragment: %d %s", resp.StatusCode, b)
	}
	if it := r.entity("uploaded item (session)", b, "graph.driveItem"); it["size"] != json.Number(strconv.Itoa(len(content))) {
		t.Errorf("uploaded item size %v", it["size"])
	}
	resp, b = r.do(create, "POST", "/v1.0/me/drive/root:/Uploads/big.bin:/createUploadSession", strings.NewReader(`{"item":{"@microsoft.graph.conflictBehavior":"fail"}}`), nil)
	r.odataError("createUploadSession onto a file", resp, b, http.StatusConflict)
	_, b = r.do(create, "POST", "/v1.0/me/drive/root:/Uploads/other.bin:/createUploadSession", strings.NewReader(`{}`), nil)
	u, _ = r.entity("uploadSession", b, "graph.uploadSession")["uploadUrl"].(string)
	req, _ = http.NewRequest("DELETE", u, nil)
	if resp, err = r.c.Do(req); err != nil || resp.StatusCode != http.StatusNoContent {
		t.Fatalf("cancel: %v %v", resp, err)
	}
	resp.Body.Close()
	if st := r.s.Sessions(); st.Open != 0 {
		t.Errorf("sessions %+v after the cancel", st)
	}
}

// mailWrites drives what vendor_b_mail's writes use: folder creation at the
// top and under a folder (201 mailFolder, 409 for a name taken), a message
// created from MIME (text/plain, base64: 201 message, a draft, its $value
// the MIME), the folder's messages filtered by internetMessageId, and the
// errors: a body that is not base64 (400 ErrorMimeContentInvalidBase64String),
// one over 4 MB (413), a filter the fake does not know (400).
func (r *shapeRun) mailWrites() {
	t := r.t
	resp, b := r.do("POST /v1.0/me/mailFolders", "POST", "/v1.0/me/mailFolders", strings.NewReader(`{"displayName":"Imported","isHidden":false}`), nil)
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("create folder: %d %s", resp.StatusCode, b)
	}
	top := r.entity("created mailFolder", b, "graph.mailFolder")
	resp, b = r.do("POST /v1.0/me/mailFolders", "POST", "/v1.0/me/mailFolders", strings.NewReader(`{"displayName":"imported"}`), nil)
	r.odataError("create a folder whose name is taken", resp, b, http.StatusConflict)
	child := "POST /v1.0/me/mailFolders/{id}/childFolders"
	resp, b = r.do(child, "POST", "/v1.0/me/mailFolders/"+url.PathEscape(top["id"].(string))+"/childFolders", strings.NewReader(`{"displayName":"2024"}`), nil)
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("create child folder: %d %s", resp.StatusCode, b)
	}
	sub := r.entity("created child mailFolder", b, "graph.mailFolder")
	if sub["parentFolderId"] != top["id"] {
		t.Errorf("child folder's parent %v, want %v", sub["parentFolderId"], top["id"])
	}
	resp, b = r.do(child, "POST", "/v1.0/me/mailFolders/nope/childFolders", strings.NewReader(`{"displayName":"x"}`), nil)
	r.odataError("child folder of a missing folder", resp, b, http.StatusNotFound)

	create := "POST /v1.0/me/mailFolders/{id}/messages"
	folder := url.PathEscape(sub["id"].(string))
	content := "From: Ana <ana@example.com>\r\nTo: bo@example.org\r\nSubject: imported\r\nMessage-ID: <imp'1@example.com>\r\n\r\nbody\r\n"
	resp, b = r.do(create, "POST", "/v1.0/me/mailFolders/"+folder+"/messages", strings.NewReader(base64.StdEncoding.EncodeToString([]byte(content))), map[string]string{"Content-Type": "text/plain"})
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("create message from MIME: %d %s", resp.StatusCode, b)
	}
	m := r.entity("message created from MIME", b, "graph.message")
	if m["isDraft"] != true || m["internetMessageId"] != "<imp'1@example.com>" || m["parentFolderId"] != sub["id"] {
		t.Errorf("message created from MIME: %v", m)
	}
	resp, b = r.do("GET /v1.0/me/messages/{id}/{value}", "GET", "/v1.0/me/messages/"+url.PathEscape(m["id"].(string))+"/$value", nil, nil)
	if resp.StatusCode != 200 || string(b) != content {
		t.Errorf("$value of the created message: %d %q", resp.StatusCode, b)
	}
	resp, b = r.do(create, "POST", "/v1.0/me/mailFolders/"+folder+"/messages", strings.NewReader("not base64!"), map[string]string{"Content-Type": "text/plain"})
	r.odataError("MIME that is not base64", resp, b, http.StatusBadRequest)
	if e, _ := decodeJSON(t, b)["error"].(map[string]any); e["code"] != "ErrorMimeContentInvalidBase64String" {
		t.Errorf("MIME that is not base64: code %v", e["code"])
	}
	resp, b = r.do(create, "POST", "/v1.0/me/mailFolders/"+folder+"/messages", bytes.NewReader(bytes.Repeat([]byte("QUFB"), graph.MaxCreateBody/4+1)), map[string]string{"Content-Type": "text/plain"})
	r.odataError("MIME over 4 MB", resp, b, http.StatusRequestEntityTooLarge)

	list := "GET /v1.0/me/mailFolders/{id}/messages"
	_, b = r.do(list, "GET", "/v1.0/me/mailFolders/"+folder+"/messages?$filter="+url.QueryEscape("internetMessageId eq '<imp''1@example.com>'")+"&$select=id,internetMessageId,parentFolderId", nil, nil)
	if found, _, _ := r.collection("messages by internetMessageId", b, "graph.message"); len(found) != 1 || found[0]["id"] != m["id"] {
		t.Errorf("messages by internetMessageId: %v", found)
	}
	_, b = r.do(list, "GET", "/v1.0/me/mailFolders/inbox/messages?$filter="+url.QueryEscape("internetMessageId eq '<imp''1@example.com>'"), nil, nil)
	if found, _, _ := r.collection("messages by internetMessageId elsewhere", b, "graph.message"); len(found) != 0 {
		t.Errorf("another folder's message found: %v", found)
	}
	u := "/v1.0/me/mailFolders/inbox/messages?$top=2"
	var all []map[string]any
	for u != "" {
		var page []map[string]any
		_, b = r.do(list, "GET", u, nil, nil)
		page, u, _ = r.collection("inbox messages", b, "graph.message")
		all = append(all, page...)
	}
	if len(all) != len(r.s.Messages("inbox")) {
		t.Errorf("listed %d inbox messages, it holds %d", len(all), len(r.s.Messages("inbox")))
	}
	resp, b = r.do(list, "GET", "/v1.0/me/mailFolders/inbox/messages?$filter="+url.QueryEscape("subject eq 'x'"), nil, nil)
	r.odataError("a filter the fake does not serve", resp, b, http.StatusBadRequest)
}
