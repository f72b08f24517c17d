// Package dropbox is an in-memory fake of the parts of the Dropbox API v2
// that svc's vendor_c_files provider speaks: files/list_folder and its
// cursor (list_folder/continue, the same cursor for the next page and for
// the changes since), files/get_metadata, files/download (content endpoint,
// Dropbox-API-Arg and Dropbox-API-Result headers), files/delete_v2 with
// parent_rev, files/restore of a revision, files/upload and upload
// sessions (upload_session/start, append_v2 and finish, offsets checked),
// users/get_space_usage, and the OAuth 2 authorization endpoint and token
// endpoint (authorization codes with PKCE, refresh grants).
//
// It follows the documented wire format: RPC endpoints take and return
// JSON with ".tag" unions; route errors are HTTP 409 with
// {"error_summary", "error"}; a bad token is 401 with an AuthError; a
// rate limit is 429 with Retry-After and a RateLimitError; a reset cursor
// is 409 "reset". Content hashes are the API's content_hash. shape_test.go
// checks every shape it serves against the API's stone specification.
//
// New returns an empty account; Seeded one with folders and files.
package dropbox

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"svc.dev/svc/internal/vendorfake"
	"svc.dev/svc/providers/contenthash"
)

// Tokens the fake accepts until Revoke, svc's app key at it, and the
// account's id (which the token endpoint names with a new grant).
const (
	AccessToken  = "dropbox-fake-access-token"
	RefreshToken = "dropbox-fake-refresh-token"
	ClientID     = "svc-dev"
	AccountID    = "dbid:AADfakeAccount000000000000000000000"
)

// Server is a running fake. Its methods are safe for concurrent use.
type Server struct {
	*vendorfake.Grants  // Revoke, ExpireAccess
	*vendorfake.Traffic // Inject, ClearFaults, Requests, RequestTimes
	srv                 *httptest.Server

	mu      sync.Mutex
	seq     int64
	entries map[string]*entry // by path_lower, deleted ones included
	revs    map[string][]byte // content of every revision
	hashes  map[string]string // content_hash of every revision
	nextID  int

	allocated int64
	pageFloor int

	sessions    map[string]*uploadSession // upload sessions by id
	nextSession int
	chunks      []int // data lengths of the upload-session calls accepted
	loseAfter   int   // appends to answer before losing any
	loseAppends int   // appends to store but answer 503
}

// SetPageFloor makes every listing page hold at least n entries whatever
// limit the client asked for (Dropbox documents its limit as
// approximate).
func (s *Server) SetPageFloor(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pageFloor = n
}

// Fault makes matching requests fail (vendorfake.PathFault): a 429 with a
// RateLimitError body, anything else a plain-text answer.
type Fault = vendorfake.PathFault

type entry struct {
	id       string
	display  string // path_display
	folder   bool
	content  []byte
	rev      string
	modified time.Time
	deleted  bool
	seq      int64
}

// New starts an empty account. Close it when done.
func New() *Server {
	s := &Server{
		entries:   make(map[string]*entry),
		revs:      make(map[string][]byte),
		hashes:    make(map[string]string),
		sessions:  make(map[string]*uploadSession),
		Grants:    vendorfake.NewGrants("dropbox-fake-access", AccessToken, RefreshToken),
		Traffic:   &vendorfake.Traffic{},
		allocated: 2 << 40,
	}
	mux := http.NewServeMux()
	for p, h := range s.table() {
		mux.HandleFunc(p, h)
	}
	s.srv = httptest.NewServer(s.middleware(mux))
	return s
}

func (s *Server) table() map[string]http.HandlerFunc {
	return map[string]http.HandlerFunc{
		"POST /oauth2/token":                     s.token,
		"GET /oauth2/authorize":                  s.Authorize(ClientID),
		"POST /2/files/list_folder":              s.listFolder,
		"POST /2/files/list_folder/continue":     s.listFolderContinue,
		"POST /2/files/get_metadata":             s.getMetadata,
		"POST /2/files/download":                 s.download,
		"POST /2/files/delete_v2":                s.delete,
		"POST /2/files/restore":                  s.restore,
		"POST /2/users/get_space_usage":          s.spaceUsage,
		"POST /2/files/upload":                   s.upload,
		"POST /2/files/upload_session/start":     s.sessionStart,
		"POST /2/files/upload_session/append_v2": s.sessionAppend,
		"POST /2/files/upload_session/finish":    s.sessionFinish,
	}
}

// Patterns lists the routes the fake serves, for the shape test to check
// it covers them all.
func (s *Server) Patterns() []string {
	var out []string
	for p := range s.table() {
		out = append(out, p)
	}
	return out
}

// URL is the base address of both the API and the content endpoints (the
// service has api.dropboxapi.com and content.dropboxapi.com; the fake
// serves both routes on one address).
func (s *Server) URL() string { return s.srv.URL }

// TokenURL is the OAuth token endpoint.
func (s *Server) TokenURL() string { return s.srv.URL + "/oauth2/token" }

// AuthURL is the OAuth authorization endpoint (www.dropbox.com's at
// Dropbox), where a connect flow sends the user's browser (it consents at
// once, for ClientID).
func (s *Server) AuthURL() string { return s.srv.URL + "/oauth2/authorize" }

// ProviderConfig is the configuration of a vendor_c_files source on this
// fake: its endpoints, the seeded token and the token endpoint to refresh
// it at, with pacing lifted so tests and demos do not wait.
func (s *Server) ProviderConfig() map[string]string {
	return map[string]string{
		"api_url": s.URL(), "content_url": s.URL(), "access_token": AccessToken, "refresh_token": RefreshToken,
		"client_id": ClientID, "token_url": s.TokenURL(), "requests_per_second": "1000", "burst": "100",
	}
}

// Close stops the server.
func (s *Server) Close() { s.srv.Close() }

// ExpireAccessTokens invalidates the access tokens only: clients must
// refresh.
func (s *Server) ExpireAccessTokens() { s.ExpireAccess() }

func (s *Server) middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/oauth2/") {
			next.ServeHTTP(w, r)
			return
		}
		hit := s.Arrive(r)
		ok := s.Valid(vendorfake.Bearer(r))
		switch {
		case hit != nil && hit.Status == http.StatusTooManyRequests:
			ra := max(hit.RetryAfter, 1)
			w.Header().Set("Retry-After", strconv.Itoa(ra))
			writeJSON(w, http.StatusTooManyRequests, map[string]any{
				"error_summary": "too_many_requests/..",
				"error":         map[string]any{"reason": map[string]any{".tag": "too_many_requests"}, "retry_after": ra},
			})
		case hit != nil:
			if hit.RetryAfter > 0 {
				w.Header().Set("Retry-After", strconv.Itoa(hit.RetryAfter))
			}
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			w.WriteHeader(hit.Status)
			_, _ = io.WriteString(w, "Internal Server Error")
		case !ok:
			writeJSON(w, http.StatusUnauthorized, map[string]any{
				"error_summary": "invalid_access_token/..",
				"error":         map[string]any{".tag": "invalid_access_token"},
			})
		default:
			next.ServeHTTP(w, r)
		}
	})
}

// token serves the token endpoint: the refresh_token grant, and the
// authorization_code grant of a code from the authorization endpoint
// (with PKCE), whose answer names the account.
func (s *Server) token(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err == nil && r.PostForm.Get("grant_type") == "authorization_code" {
		access, refresh, ok := s.Exchange(r)
		if !ok {
			writeJSON(w, http.StatusBadRequest, map[string]any{"error": "invalid_grant", "error_description": "code doesn't exist or has expired"})
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"access_token": access, "token_type": "bearer", "expires_in": 14400,
			"refresh_token": refresh, "scope": "account_info.read files.content.read files.content.write files.metadata.read",
			"uid": "12345678", "account_id": AccountID})
		return
	}
	if r.PostForm.Get("grant_type") != "refresh_token" {
		writeJSON(w, http.StatusBadRequest, map[string]any{"error": "unsupported_grant_type", "error_description": "unsupported grant_type"})
		return
	}
	tok, rotated, ok := s.Refresh(r.PostForm.Get("refresh_token"))
	if !ok {
		writeJSON(w, http.StatusBadRequest, map[string]any{"error": "invalid_grant", "error_description": "refresh token is invalid or revoked"})
		return
	}
	body := map[string]any{"access_token": tok, "token_type": "bearer", "expires_in": 14400}
	if rotated != "" {
		body["refresh_token"] = rotated
	}
	writeJSON(w, http.StatusOK, body)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// routeError writes a route's 409 error: tags is the union path, outermost
// first ("path_lookup", "not_found" is {".tag":"path_lookup",
// "path_lookup":{".tag":"not_found"}}).
func routeError(w http.ResponseWriter, tags ...string) {
	var e map[string]any
	for i := len(tags) - 1; i >= 0; i-- {
		m := map[string]any{".tag": tags[i]}
		if e != nil {
			m[tags[i]] = e
		}
		e = m
	}
	writeJSON(w, http.StatusConflict, map[string]any{"error_summary": strings.Join(tags, "/") + "/...", "error": e})
}

func badRequest(w http.ResponseWriter, msg string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(http.StatusBadRequest)
	_, _ = io.WriteString(w, "Error in call to API function: "+msg)
}

func lower(p string) string { return strings.ToLower(p) }

// AddFolder creates a folder (and its parents) at a path ("/Photos/2024").
func (s *Server) AddFolder(p string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.addFolder(p)
}

func (s *Server) addFolder(p string) {
	if p == "/" || p == "" {
		return
	}
	s.addFolder(path.Dir(p))
	if e := s.entries[lower(p)]; e != nil && !e.deleted {
		return
	}
	s.seq++
	s.nextID++
	s.entries[lower(p)] = &entry{id: fmt.Sprintf("id:fakeFolder%06dAAAA", s.nextID), display: p, folder: true, seq: s.seq}
}

// AddFile writes a file at a path ("/Documents/a.pdf"), creating its
// folders, or a new revision of the file there. It returns the file's rev.
func (s *Server) AddFile(p string, content []byte, modified time.Time) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.addFolder(path.Dir(p))
	return s.write(p, content, modified.UTC().Truncate(time.Second))
}

func (s *Server) write(p string, content []byte, modified time.Time) string {
	s.seq++
	e := s.entries[lower(p)]
	if e == nil || e.folder {
		s.nextID++
		e = &entry{id: fmt.Sprintf("id:fakeFile%06dAAAAAA", s.nextID), display: p}
		s.entries[lower(p)] = e
	}
	e.content, e.deleted, e.seq, e.modified = content, false, s.seq, modified
	e.rev = fmt.Sprintf("5a1c%011x", s.seq)
	s.revs[e.rev] = content
	h := contenthash.NewDropbox()
	h.Write(content)
	s.hashes[e.rev] = hex.EncodeToString(h.Sum(nil))
	return e.rev
}

// Corrupt changes the content served for a file without changing its
// metadata, so a client that verifies content_hash notices.
func (s *Server) Corrupt(p string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.entries[lower(p)]
	c := append([]byte(nil), e.content...)
	c[0] ^= 0xff
	e.content = c // rev and the hash the metadata reports stay those of the revision
}

// Paths lists the display paths of the live files.
func (s *Server) Paths() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, e := range s.entries {
		if !e.deleted && !e.folder {
			out = append(out, e.display)
		}
	}
	slices.Sort(out)
	return out
}

// DisplayPath returns the display path of the live file or folder at a
// path ("" when none).
func (s *Server) DisplayPath(p string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e := s.entries[lower(p)]; e != nil && !e.deleted {
		return e.display
	}
	return ""
}

// Exists reports whether a live file or folder is at a path.
func (s *Server) Exists(p string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.entries[lower(p)]
	return e != nil && !e.deleted
}

func (s *Server) metadata(p string, e *entry) map[string]any {
	name := path.Base(e.display)
	m := map[string]any{"name": name, "path_lower": p, "path_display": e.display}
	switch {
	case e.deleted:
		m[".tag"] = "deleted"
	case e.folder:
		m[".tag"], m["id"] = "folder", e.id
	default:
		m[".tag"], m["id"], m["rev"], m["size"] = "file", e.id, e.rev, len(s.revs[e.rev])
		m["client_modified"] = e.modified.Format("2006-01-02T15:04:05Z")
		m["server_modified"] = e.modified.Format("2006-01-02T15:04:05Z")
		m["content_hash"] = s.hashes[e.rev]
		m["is_downloadable"] = true
	}
	return m
}
