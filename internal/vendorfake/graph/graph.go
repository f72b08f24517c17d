// Package graph is an in-memory fake of the parts of Microsoft Graph v1.0
// that svc's vendor_b_mail and vendor_b_files providers speak: a mailbox
// (mail folders, messages and their MIME content, per-folder message delta
// queries, moves, folders created and messages created from MIME, a
// folder's messages filtered by internetMessageId), a OneDrive drive (driveItems, the root delta query with
// its token, content behind a pre-authenticated download URL, quickXorHash
// and sha256 hashes, deletion to the recycle bin and restore, quota, simple
// uploads and upload sessions: createUploadSession, fragments PUT with
// Content-Range to a pre-authenticated upload URL that refuses a token,
// 202 with nextExpectedRanges, 416 for a fragment out of place, status
// and cancel) and the Microsoft identity platform's authorization endpoint
// (consenting at once, for ClientID) and token endpoint (authorization
// codes with PKCE, refresh grants).
//
// It follows the documented wire format: paths under /v1.0, JSON bodies,
// @odata.nextLink and @odata.deltaLink paging, "@removed" entries in message
// deltas and "deleted" facets in drive deltas, OData error bodies
// ({"error":{"code","message","innerError"}}), 410 Gone for an unknown delta
// token, 412 for an If-Match that no longer holds, 401 for a bad token, and
// 429/503 with Retry-After from fault injection (a fault may also strike
// after the request was carried out, as a lost answer). shape_test.go checks every
// shape it serves against the entity types of Graph's published metadata.
//
// New returns an empty server; Seeded returns one with a realistic mailbox
// and drive, for tests and for `svc serve --dev`.
package graph

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"time"

	"svc.dev/svc/internal/vendorfake"
)

// Tokens the seeded server accepts until Revoke, and svc's client id at
// its identity platform.
const (
	AccessToken  = "graph-fake-access-token"
	RefreshToken = "graph-fake-refresh-token"
	ClientID     = "svc-dev"
)

// Server is a running fake. Its methods are safe for concurrent use.
type Server struct {
	*vendorfake.Grants  // Revoke, ExpireAccess
	*vendorfake.Traffic // Inject, ClearFaults, Requests, RequestTimes
	srv                 *httptest.Server

	mu      sync.Mutex
	seq     int64 // the change journal's clock
	folders []*Folder
	msgs    map[string]*Message
	removed []removal // messages that left a folder, in seq order
	items   map[string]*Item
	driveID string
	total   int64 // drive quota

	sessions     map[string]*uploadSession // open upload sessions by id
	sessionStats SessionStats

	floor       int    // least page size, whatever the client asks
	createsInto string // where messages created from MIME land; "" the folder asked
	rerenders   bool   // messages created from MIME are served back in a form of the fake's own
	now         func() time.Time
}

// Fault makes matching requests fail (vendorfake.PathFault), answered with
// an OData error body.
type Fault = vendorfake.PathFault

type removal struct {
	seq    int64
	folder string
	id     string
}

// New starts an empty fake (a mailbox with the well-known folders and an
// empty drive). Close it when done.
func New() *Server {
	s := &Server{
		msgs:    make(map[string]*Message),
		items:   make(map[string]*Item),
		Grants:  vendorfake.NewGrants("graph-fake-access", AccessToken, RefreshToken),
		Traffic: &vendorfake.Traffic{},
		driveID: "b!fakeDrive0001",
		total:   5 << 30,
		now:     func() time.Time { return time.Now().UTC().Truncate(time.Second) },
	}
	for _, f := range wellKnown {
		s.folders = append(s.folders, &Folder{ID: folderID(f.name), DisplayName: f.display, WellKnown: f.name, ParentFolderID: "msgfolderroot"})
	}
	s.items[rootID] = &Item{ID: rootID, Name: "root", Folder: true, ETag: etag(rootID, 1), CTag: ctag(rootID, 1), Created: s.now(), Modified: s.now()}
	mux := http.NewServeMux()
	s.routes(mux)
	s.srv = httptest.NewServer(s.middleware(mux))
	return s
}

// URL is the base address: the Graph endpoint is URL()+"/v1.0" and the
// token endpoint URL()+"/oauth2/v2.0/token".
func (s *Server) URL() string { return s.srv.URL }

// Endpoint is the Graph API root to configure providers with.
func (s *Server) Endpoint() string { return s.srv.URL + "/v1.0" }

// TokenURL is the token endpoint to configure providers with.
func (s *Server) TokenURL() string { return s.srv.URL + "/oauth2/v2.0/token" }

// AuthURL is the identity platform's authorization endpoint, where a
// connect flow sends the user's browser (it consents at once, for
// ClientID).
func (s *Server) AuthURL() string { return s.srv.URL + "/oauth2/v2.0/authorize" }

// ProviderConfig is the configuration of a vendor_b_mail or vendor_b_files
// source on this fake: its endpoint, the seeded token and the token
// endpoint to refresh it at (what the connect flow and --oauth-config
// would give), with pacing lifted so tests and demos do not wait.
func (s *Server) ProviderConfig() map[string]string {
	return map[string]string{
		"endpoint": s.Endpoint(), "access_token": AccessToken, "refresh_token": RefreshToken,
		"client_id": ClientID, "token_url": s.TokenURL(), "requests_per_second": "1000", "burst": "100",
	}
}

// Close stops the server.
func (s *Server) Close() { s.srv.Close() }

// SetPageFloor makes every delta page hold at least n entries whatever
// page size the client asked for (Graph documents $top and
// odata.maxpagesize as hints).
func (s *Server) SetPageFloor(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.floor = n
}

// ExpireAccessTokens invalidates the access tokens only: clients must
// refresh.
func (s *Server) ExpireAccessTokens() { s.ExpireAccess() }

func (s *Server) middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/oauth2/v2.0/") || strings.HasPrefix(r.URL.Path, "/_download/") {
			next.ServeHTTP(w, r)
			return
		}
		hit := s.Arrive(r)
		// Upload URLs are pre-authenticated: no token (session checks that).
		ok := s.Valid(vendorfake.Bearer(r)) || strings.HasPrefix(r.URL.Path, "/_upload/")
		if hit != nil {
			if hit.Performed && ok {
				// The request is carried out and its answer lost.
				next.ServeHTTP(httptest.NewRecorder(), r)
			}
			if hit.RetryAfter > 0 {
				w.Header().Set("Retry-After", strconv.Itoa(hit.RetryAfter))
			}
			code := "serviceNotAvailable"
			if hit.Status == http.StatusTooManyRequests {
				code = "TooManyRequests"
			}
			writeError(w, hit.Status, code, "Injected fault.")
			return
		}
		if !ok {
			writeError(w, http.StatusUnauthorized, "InvalidAuthenticationToken", "Access token is empty or invalid.")
			return
		}
		next.ServeHTTP(w, r)
	})
}

// token serves the identity platform's token endpoint for the
// refresh_token grant (RFC 6749 section 6) and the authorization_code
// grant of a code from the authorization endpoint (with PKCE), with its
// error body.
func (s *Server) token(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err == nil && r.PostForm.Get("grant_type") == "authorization_code" {
		access, refresh, ok := s.Exchange(r)
		if !ok {
			oauthError(w, "invalid_grant", "AADSTS54005: OAuth2 Authorization code was already redeemed, please retry with a new valid code or use an existing refresh token.")
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{
			"token_type": "Bearer", "expires_in": 3599, "ext_expires_in": 3599, "access_token": access,
			"refresh_token": refresh, "scope": "Mail.ReadWrite Files.ReadWrite offline_access",
		})
		return
	}
	if r.PostForm.Get("grant_type") != "refresh_token" {
		oauthError(w, "unsupported_grant_type", "AADSTS70003: The app requested an unsupported grant type.")
		return
	}
	tok, rotated, ok := s.Refresh(r.PostForm.Get("refresh_token"))
	if !ok {
		oauthError(w, "invalid_grant", "AADSTS50173: The provided grant has expired due to it being revoked.")
		return
	}
	if rotated == "" {
		rotated = r.PostForm.Get("refresh_token")
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{
		"token_type": "Bearer", "expires_in": 3599, "access_token": tok,
		"refresh_token": rotated,
		"scope":         "Mail.ReadWrite Files.ReadWrite offline_access",
	})
}

func oauthError(w http.ResponseWriter, code, desc string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusBadRequest)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": code, "error_description": desc, "error_codes": []int{50173}})
}

// writeError writes Graph's OData error body.
func writeError(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{
		"code": code, "message": msg,
		"innerError": map[string]any{"date": time.Now().UTC().Format("2006-01-02T15:04:05"), "request-id": "00000000-0000-0000-0000-000000000000", "client-request-id": "00000000-0000-0000-0000-000000000000"},
	}})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json;odata.metadata=minimal;odata.streaming=true;IEEE754Compatible=false;charset=utf-8")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// Patterns lists the routes the fake serves (http.ServeMux patterns), for
// the shape test to check it covers them all.
func (s *Server) Patterns() []string {
	var out []string
	for _, r := range s.table() {
		out = append(out, r.pattern)
	}
	return out
}

type route struct {
	pattern string
	h       http.HandlerFunc
}

func (s *Server) table() []route {
	return []route{
		{"POST /oauth2/v2.0/token", s.token},
		{"GET /oauth2/v2.0/authorize", s.Authorize(ClientID)},
		{"GET /v1.0/me/mailFolders", s.listFolders},
		{"GET /v1.0/me/mailFolders/{id}", s.getFolder},
		{"GET /v1.0/me/mailFolders/{id}/childFolders", s.childFolders},
		{"POST /v1.0/me/mailFolders", s.createFolder},
		{"POST /v1.0/me/mailFolders/{id}/childFolders", s.createFolder},
		{"GET /v1.0/me/mailFolders/{id}/messages", s.listMessages},
		{"POST /v1.0/me/mailFolders/{id}/messages", s.createMessage},
		{"GET /v1.0/me/mailFolders/{id}/messages/delta", s.messagesDelta},
		{"GET /v1.0/me/messages/{id}", s.getMessage},
		{"GET /v1.0/me/messages/{id}/{value}", s.messageValue},
		{"POST /v1.0/me/messages/{id}/move", s.moveMessage},
		{"GET /v1.0/me/drive", s.getDrive},
		{"GET /v1.0/me/drive/root/delta", s.driveDelta},
		{"GET /v1.0/me/drive/items/{id}", s.getItem},
		{"GET /v1.0/me/drive/items/{id}/content", s.itemContent},
		{"DELETE /v1.0/me/drive/items/{id}", s.deleteItem},
		{"POST /v1.0/me/drive/items/{id}/restore", s.restoreItem},
		{"PUT /v1.0/me/drive/{pathContent...}", s.uploadItem},
		{"POST /v1.0/me/drive/{pathSession...}", s.createUploadSession},
		{"/_upload/{id}", s.session},
		{"GET /_download/{id}", s.download},
	}
}

func (s *Server) routes(mux *http.ServeMux) {
	for _, r := range s.table() {
		mux.HandleFunc(r.pattern, r.h)
	}
}

// link tokens: opaque to clients, "kind:a:b:c" base64url inside.
func encodeToken(parts ...string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(strings.Join(parts, "\x1f")))
}

func decodeToken(t string, n int) ([]string, bool) {
	b, err := base64.RawURLEncoding.DecodeString(t)
	if err != nil {
		return nil, false
	}
	parts := strings.Split(string(b), "\x1f")
	return parts, len(parts) == n
}

// pageSize reads the client's page size: Prefer odata.maxpagesize (message
// delta) or $top (drive delta), within [1, max].
func pageSize(r *http.Request, def, limit int) int {
	n := def
	for _, p := range strings.Split(r.Header.Get("Prefer"), ",") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(p), "odata.maxpagesize="); ok {
			if k, err := strconv.Atoi(v); err == nil {
				n = k
			}
		}
	}
	if v := r.URL.Query().Get("$top"); v != "" {
		if k, err := strconv.Atoi(v); err == nil {
			n = k
		}
	}
	return max(1, min(limit, n))
}
