package graph

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// FragmentGranularity is the multiple of bytes every fragment of an upload
// session but the last must be (Graph's documented 320 KiB), and
// MaxFragment the largest fragment (60 MiB).
const (
	FragmentGranularity = 320 << 10
	MaxFragment         = 60 << 20
)

// maxSession bounds what the fake keeps of one upload session.
const maxSession = 1 << 30

// uploadSession is one open createUploadSession.
type uploadSession struct {
	path    string
	replace bool
	size    int64 // the total the first fragment declared; -1 before it
	data    []byte
	expires time.Time
}

// SessionStats are counts of the fake's upload sessions: created,
// completed, fragments taken, status queries (GET of an upload URL), and
// sessions still open.
type SessionStats struct {
	Created, Completed, Fragments, Queries, Open int
}

// Sessions returns the upload session counts so far.
func (s *Server) Sessions() SessionStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.sessionStats
	st.Open = len(s.sessions)
	return st
}

// createUploadSession serves POST
// /me/drive/root:/{path}:/createUploadSession: the answer is an
// uploadSession whose uploadUrl takes the content in fragments. The body's
// item may set @microsoft.graph.conflictBehavior (fail, the default here,
// or replace); with fail, a file already at the path is refused now and
// again when the last fragment arrives.
func (s *Server) createUploadSession(w http.ResponseWriter, r *http.Request) {
	rest := r.PathValue("pathSession")
	p, ok := strings.CutPrefix(rest, "root:/")
	p, ok2 := strings.CutSuffix(p, ":/createUploadSession")
	if !ok || !ok2 || p == "" {
		writeError(w, http.StatusBadRequest, "invalidRequest", "Invalid request.")
		return
	}
	var body struct {
		Item map[string]any `json:"item"`
	}
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&body); err != nil && err != io.EOF {
		writeError(w, http.StatusBadRequest, "invalidRequest", "Invalid request body.")
		return
	}
	replace := false
	switch body.Item["@microsoft.graph.conflictBehavior"] {
	case nil, "fail":
	case "replace":
		replace = true
	default:
		writeError(w, http.StatusBadRequest, "invalidRequest", "Unsupported conflict behavior.")
		return
	}
	var id [16]byte
	_, _ = rand.Read(id[:])
	sid := hex.EncodeToString(id[:])
	s.mu.Lock()
	if !replace {
		if it := s.itemByPath(p); it != nil && !it.Deleted {
			s.mu.Unlock()
			writeError(w, http.StatusConflict, "nameAlreadyExists", "The specified item name already exists.")
			return
		}
	}
	if s.sessions == nil {
		s.sessions = map[string]*uploadSession{}
	}
	se := &uploadSession{path: p, replace: replace, size: -1, expires: s.now().Add(15 * time.Minute)}
	s.sessions[sid] = se
	s.sessionStats.Created++
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]any{
		"uploadUrl": s.srv.URL + "/_upload/" + sid, "expirationDateTime": se.expires.Format(time.RFC3339),
		"nextExpectedRanges": []string{"0-"},
	})
}

// session answers an upload URL: PUT a fragment, GET the session's status,
// DELETE to cancel it. Upload URLs are pre-authenticated: a request that
// carries an Authorization header is refused with 401, as Graph documents
// it may be.
func (s *Server) session(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Authorization") != "" {
		writeError(w, http.StatusUnauthorized, "unauthenticated", "The upload URL is pre-authenticated: send no Authorization header.")
		return
	}
	sid := r.PathValue("id")
	s.mu.Lock()
	se := s.sessions[sid]
	s.mu.Unlock()
	if se == nil {
		writeError(w, http.StatusNotFound, "itemNotFound", "The upload session was not found.")
		return
	}
	switch r.Method {
	case http.MethodGet:
		s.mu.Lock()
		s.sessionStats.Queries++
		ans := sessionJSON(se)
		s.mu.Unlock()
		writeJSON(w, http.StatusOK, ans)
	case http.MethodDelete:
		s.mu.Lock()
		delete(s.sessions, sid)
		s.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	default:
		s.fragment(w, r, sid, se)
	}
}

func sessionJSON(se *uploadSession) map[string]any {
	return map[string]any{"expirationDateTime": se.expires.Format(time.RFC3339),
		"nextExpectedRanges": []string{strconv.Itoa(len(se.data)) + "-"}}
}

// fragment takes one fragment: "Content-Range: bytes A-B/TOTAL" with the
// body's length B-A+1. A fragment that does not start at the next expected
// byte is 416; one but the last that is not a multiple of 320 KiB, or over
// 60 MiB, is 400. An incomplete session answers 202 with its next expected
// range; the last fragment answers the stored driveItem (201 created, 200
// replaced).
func (s *Server) fragment(w http.ResponseWriter, r *http.Request, sid string, se *uploadSession) {
	first, last, total, ok := fragmentRange(r.Header.Get("Content-Range"))
	if !ok || r.ContentLength != last-first+1 {
		writeError(w, http.StatusBadRequest, "invalidRequest", "Content-Range and Content-Length must describe the fragment.")
		return
	}
	if last-first+1 > MaxFragment || total > maxSession {
		writeError(w, http.StatusRequestEntityTooLarge, "requestTooLarge", "The fragment is too large.")
		return
	}
	data, err := io.ReadAll(io.LimitReader(r.Body, MaxFragment+1))
	if err != nil || int64(len(data)) != last-first+1 {
		writeError(w, http.StatusBadRequest, "invalidRequest", "The body does not match Content-Length.")
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sessionStats.Fragments++
	switch {
	case se.size >= 0 && total != se.size:
		writeError(w, http.StatusBadRequest, "invalidRequest", "The total size changed within the session.")
		return
	case first != int64(len(se.data)):
		writeError(w, http.StatusRequestedRangeNotSatisfiable, "invalidRange", "The fragment does not start at the next expected byte.")
		return
	case last+1 < total && len(data)%FragmentGranularity != 0:
		writeError(w, http.StatusBadRequest, "invalidRequest", "Fragments but the last must be multiples of 320 KiB.")
		return
	}
	se.size = total
	se.data = append(se.data, data...)
	if int64(len(se.data)) < total {
		writeJSON(w, http.StatusAccepted, sessionJSON(se))
		return
	}
	delete(s.sessions, sid)
	s.sessionStats.Completed++
	s.storeAt(w, se.path, se.data, se.replace)
}

// fragmentRange parses "bytes A-B/TOTAL".
func fragmentRange(v string) (first, last, total int64, ok bool) {
	rng, tot, found := strings.Cut(strings.TrimPrefix(v, "bytes "), "/")
	a, b, found2 := strings.Cut(rng, "-")
	var err [3]error
	first, err[0] = strconv.ParseInt(a, 10, 64)
	last, err[1] = strconv.ParseInt(b, 10, 64)
	total, err[2] = strconv.ParseInt(tot, 10, 64)
	if !strings.HasPrefix(v, "bytes ") || !found || !found2 || err[0] != nil || err[1] != nil || err[2] != nil ||
		first < 0 || last < first || last >= total {
		return 0, 0, 0, false
	}
	return first, last, total, true
}
