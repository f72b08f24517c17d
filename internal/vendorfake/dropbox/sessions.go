package dropbox

import (
	"fmt"
	"net/http"
	"strings"
)

// An upload session (files/upload_session/start, append_v2, finish) holds
// the data sent so far, in order: each call's data must come at the
// offset the session is at (else 409 incorrect_offset with the
// correct_offset), a closed session takes no more data, and finish saves
// it at the commit's path. The fake serves sequential sessions only.

type uploadSession struct {
	data   []byte
	closed bool
}

// maxSessionFile is the most one upload session may hold (2^41 - 2^22).
const maxSessionFile = 1<<41 - 1<<22

type sessionCursor struct {
	SessionID string `json:"session_id"`
	Offset    *int64 `json:"offset"`
}

// LoseAppendAnswers makes upload_session/append_v2 calls that succeed,
// after the next `after` of them, store their data but answer 503, n
// times, as when the answer is lost on its way back: the client cannot
// tell whether the data arrived.
func (s *Server) LoseAppendAnswers(after, n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.loseAfter, s.loseAppends = after, n
}

// ForgetSessions drops every upload session, as Dropbox does after 7
// days: later calls with their ids are not_found.
func (s *Server) ForgetSessions() {
	s.mu.Lock()
	defer s.mu.Unlock()
	clear(s.sessions)
}

// SessionChunks returns the length of the data of every upload-session
// call the fake accepted, in order (a start or finish without data is 0).
func (s *Server) SessionChunks() []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]int(nil), s.chunks...)
}

func (s *Server) sessionStart(w http.ResponseWriter, r *http.Request) {
	var a struct {
		Close       bool   `json:"close"`
		SessionType any    `json:"session_type"`
		ContentHash string `json:"content_hash"`
	}
	data, tooLarge, ok := contentCall(w, r, &a)
	switch {
	case !ok:
		return
	case a.SessionType != nil && tagOf(a.SessionType) != "sequential":
		badRequest(w, "session_type: the fake serves sequential sessions only")
		return
	case !dataAccepted(w, data, tooLarge, a.ContentHash):
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.nextSession++
	id := fmt.Sprintf("pid_upload_session:fakeSession%06dAAAAAAAAAAAAAAAA", s.nextSession)
	s.sessions[id] = &uploadSession{data: data, closed: a.Close}
	s.chunks = append(s.chunks, len(data))
	writeJSON(w, http.StatusOK, map[string]any{"session_id": id})
}

// dataAccepted reports whether a content call's data may be stored: not over the route's limit
// (tooLarge, from contentCall) and matching the content_hash the call gave, if any. When not,
// it answers the route error itself.
func dataAccepted(w http.ResponseWriter, data []byte, tooLarge bool, contentHash string) bool {
	switch {
	case tooLarge:
		routeError(w, "payload_too_large")
	case !hashOK(data, contentHash):
		routeError(w, "content_hash_mismatch")
	default:
		return true
	}
	return false
}

// cursorGiven reports whether a session call's cursor names a session and an offset, and
// answers 400 when not.
func cursorGiven(w http.ResponseWriter, c sessionCursor) bool {
	if c.SessionID == "" || c.Offset == nil {
		badRequest(w, "Dropbox-API-Arg: cursor: missing session_id or offset")
		return false
	}
	return true
}

// session looks a cursor's session up for a call bringing data, and
// answers the UploadSessionLookupError itself (under wrap, for finish's
// lookup_failed) when the call cannot go on. Hold s.mu.
func (s *Server) session(w http.ResponseWriter, c sessionCursor, data []byte, wrap ...string) *uploadSession {
	u := s.sessions[c.SessionID]
	switch {
	case u == nil:
		routeError(w, append(wrap, "not_found")...)
	case u.closed && len(wrap) == 0:
		routeError(w, "closed")
	case int64(len(u.data)) != *c.Offset:
		offsetError(w, int64(len(u.data)), wrap...)
	case int64(len(u.data))+int64(len(data)) > maxSessionFile:
		routeError(w, append(wrap, "too_large")...)
	default:
		return u
	}
	return nil
}

// offsetError writes the 409 of an incorrect_offset lookup error, whose
// UploadSessionOffsetError fields sit beside its tag.
func offsetError(w http.ResponseWriter, correct int64, wrap ...string) {
	e := map[string]any{".tag": "incorrect_offset", "correct_offset": correct}
	summary := "incorrect_offset/.."
	if len(wrap) > 0 {
		e = map[string]any{".tag": wrap[0], wrap[0]: e}
		summary = wrap[0] + "/" + summary
	}
	writeJSON(w, http.StatusConflict, map[string]any{"error_summary": summary, "error": e})
}

func (s *Server) sessionAppend(w http.ResponseWriter, r *http.Request) {
	var a struct {
		Cursor      sessionCursor `json:"cursor"`
		Close       bool          `json:"close"`
		ContentHash string        `json:"content_hash"`
	}
	data, tooLarge, ok := contentCall(w, r, &a)
	switch {
	case !ok:
		return
	case !cursorGiven(w, a.Cursor):
		return
	case !dataAccepted(w, data, tooLarge, a.ContentHash):
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	u := s.session(w, a.Cursor, data)
	if u == nil {
		return
	}
	u.data = append(u.data, data...)
	u.closed = a.Close
	s.chunks = append(s.chunks, len(data))
	if s.loseAfter > 0 {
		s.loseAfter--
	} else if s.loseAppends > 0 {
		s.loseAppends--
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = w.Write([]byte("Service Unavailable"))
		return
	}
	writeJSON(w, http.StatusOK, nil) // the route's result is Void: null
}

func (s *Server) sessionFinish(w http.ResponseWriter, r *http.Request) {
	var a struct {
		Cursor      sessionCursor `json:"cursor"`
		Commit      commitArg     `json:"commit"`
		ContentHash string        `json:"content_hash"`
	}
	data, tooLarge, ok := contentCall(w, r, &a)
	switch {
	case !ok:
		return
	case !cursorGiven(w, a.Cursor):
		return
	case !strings.HasPrefix(a.Commit.Path, "/"):
		routeError(w, "path", "malformed_path")
		return
	case !dataAccepted(w, data, tooLarge, a.ContentHash):
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	u := s.session(w, a.Cursor, data, "lookup_failed")
	if u == nil {
		return
	}
	if u.closed && len(data) > 0 {
		routeError(w, "lookup_failed", "closed")
		return
	}
	if s.conflicts(a.Commit) {
		routeError(w, "path", "conflict", "file")
		return
	}
	delete(s.sessions, a.Cursor.SessionID)
	s.chunks = append(s.chunks, len(data))
	writeJSON(w, http.StatusOK, s.save(a.Commit, append(u.data, data...)))
}
