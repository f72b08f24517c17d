package graph

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/mail"
	"slices"
	"strconv"
	"strings"
)

// MaxCreateBody is the largest request body the fake accepts for a message
// created from MIME: Graph documents 4 MB for a MIME payload and answers
// 413 Request Entity Too Large beyond it. The MIME travels base64-encoded,
// so it holds at most three quarters of this.
const MaxCreateBody = 4 << 20

// createMessage serves POST /me/mailFolders/{id}/messages with a MIME body:
// Content-Type text/plain and the MIME base64-encoded. Graph creates the
// message as a draft in the folder and answers 201 with it. A body that is
// not base64 is 400 ErrorMimeContentInvalidBase64String, one over
// MaxCreateBody 413. The fake does not create messages from JSON.
func (s *Server) createMessage(w http.ResponseWriter, r *http.Request) {
	ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if ct != "text/plain" {
		writeError(w, http.StatusBadRequest, "ErrorInvalidRequest", "The fake creates messages from MIME content only (Content-Type: text/plain).")
		return
	}
	raw, err := io.ReadAll(io.LimitReader(r.Body, MaxCreateBody+1))
	if err != nil {
		writeError(w, http.StatusBadRequest, "ErrorInvalidRequest", "The request body could not be read.")
		return
	}
	if len(raw) > MaxCreateBody {
		// Graph documents the status, not an error code for it.
		writeError(w, http.StatusRequestEntityTooLarge, "RequestEntityTooLarge", "The request payload exceeds the limit of 4 MB.")
		return
	}
	content, err := base64.StdEncoding.DecodeString(string(bytes.TrimSpace(raw)))
	if err != nil || len(content) == 0 {
		writeError(w, http.StatusBadRequest, "ErrorMimeContentInvalidBase64String", "Invalid base64 string for MIME content.")
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	f := s.folder(r.PathValue("id"))
	if f == nil {
		writeError(w, http.StatusNotFound, "ErrorItemNotFound", "The specified object was not found in the store.")
		return
	}
	if s.createsInto != "" {
		f = s.folder(s.createsInto)
	}
	s.seq++
	n := len(s.msgs) + 1
	m := &Message{ID: fmt.Sprintf("AAMkAGMessage%06dAAA=", n), FolderID: f.ID, MIME: content, IsRead: true, Draft: true,
		Received: s.now(), seq: s.seq}
	if h, err := mail.ReadMessage(bytes.NewReader(content)); err != nil || strings.TrimSpace(h.Header.Get("Message-Id")) == "" {
		m.GeneratedID = fmt.Sprintf("<FAKE%06d@fake.outlook.example>", n)
	}
	if s.rerenders {
		m.MIME = rerender(content)
	}
	s.msgs[m.ID] = m
	writeJSON(w, http.StatusCreated, s.messageJSON(m, nil, false))
}

// listMessages serves GET /me/mailFolders/{id}/messages: the folder's
// messages in id order, $top (default 10) and $skip paging with an
// @odata.nextLink, $select, and of $filter only internetMessageId eq
// '...' (a quote in the value doubled, as OData writes it).
func (s *Server) listMessages(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f := s.folder(r.PathValue("id"))
	if f == nil {
		writeError(w, http.StatusNotFound, "ErrorItemNotFound", "The specified object was not found in the store.")
		return
	}
	q := r.URL.Query()
	want, filtered := "", false
	if v := q.Get("$filter"); v != "" {
		rest, ok := strings.CutPrefix(strings.TrimSpace(v), "internetMessageId eq '")
		rest, ok2 := strings.CutSuffix(rest, "'")
		if !ok || !ok2 || strings.Contains(strings.ReplaceAll(rest, "''", ""), "'") {
			writeError(w, http.StatusBadRequest, "BadRequest", "Invalid filter clause.")
			return
		}
		want, filtered = strings.ReplaceAll(rest, "''", "'"), true
	}
	var ids []string
	for _, m := range s.msgs {
		if m.FolderID != f.ID {
			continue
		}
		if filtered {
			h := mail.Header{}
			if parsed, err := mail.ReadMessage(bytes.NewReader(m.MIME)); err == nil {
				h = parsed.Header
			}
			if m.internetMessageID(h) != want {
				continue
			}
		}
		ids = append(ids, m.ID)
	}
	slices.Sort(ids)
	top, skip := pageSize(r, 10, 1000), 0
	if v := q.Get("$skip"); v != "" {
		skip, _ = strconv.Atoi(v)
	}
	end := min(len(ids), skip+top)
	page := []map[string]any{}
	for _, id := range ids[min(skip, len(ids)):end] {
		page = append(page, s.messageJSON(s.msgs[id], selectOf(r), expandsSize(r)))
	}
	body := map[string]any{"@odata.context": s.srv.URL + "/v1.0/$metadata#users('me')/mailFolders('" + f.ID + "')/messages", "value": page}
	if end < len(ids) {
		next := q
		next.Set("$top", strconv.Itoa(top))
		next.Set("$skip", strconv.Itoa(end))
		body["@odata.nextLink"] = s.srv.URL + r.URL.Path + "?" + next.Encode()
	}
	writeJSON(w, http.StatusOK, body)
}

// createFolder serves POST /me/mailFolders (a top-level folder) and POST
// /me/mailFolders/{id}/childFolders: a mailFolder {"displayName", "isHidden"}
// answered 201 with the folder; a name the parent already holds (compared
// as Exchange does, ignoring case) is 409 ErrorFolderExists.
func (s *Server) createFolder(w http.ResponseWriter, r *http.Request) {
	var req struct {
		DisplayName string `json:"displayName"`
		IsHidden    bool   `json:"isHidden"`
	}
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&req); err != nil || strings.TrimSpace(req.DisplayName) == "" {
		writeError(w, http.StatusBadRequest, "ErrorInvalidRequest", "displayName is required.")
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	parent := "msgfolderroot"
	if id := r.PathValue("id"); id != "" {
		f := s.folder(id)
		if f == nil {
			writeError(w, http.StatusNotFound, "ErrorItemNotFound", "The specified object was not found in the store.")
			return
		}
		parent = f.ID
	}
	for _, f := range s.folders {
		if f.ParentFolderID == parent && strings.EqualFold(f.DisplayName, req.DisplayName) {
			writeError(w, http.StatusConflict, "ErrorFolderExists", "A folder with the specified name already exists.")
			return
		}
	}
	s.seq++
	writeJSON(w, http.StatusCreated, folderJSON(s, s.addFolder(parent, req.DisplayName), false))
}

// Rerenders makes messages created from MIME be served back ($value) in a form of the fake's
// own, not the bytes sent, as Exchange keeps a message in its store and renders its MIME anew
// when asked: headers of its own added, line endings made CRLF.
func (s *Server) Rerenders(on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rerenders = on
}

// rerender is the fake's rendering of a message it was given as MIME.
func rerender(content []byte) []byte {
	lf := bytes.ReplaceAll(content, []byte("\r\n"), []byte("\n"))
	out := []byte("X-MS-Exchange-Organization-AuthAs: Internal\r\nX-MS-Has-Attach: \r\n")
	return append(out, bytes.ReplaceAll(lf, []byte("\n"), []byte("\r\n"))...)
}

// CreatesInto makes messages created through the API land in that folder
// (a well-known name such as "drafts"; "" to stop) whatever folder the
// request named, as a third-party report says Exchange Online files
// messages created from MIME.
func (s *Server) CreatesInto(folder string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.createsInto = folder
}

// Messages returns the ids of the messages filed in a folder (id,
// well-known name or display name), sorted.
func (s *Server) Messages(folder string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	f := s.folder(folder)
	if f == nil {
		return nil
	}
	var ids []string
	for _, m := range s.msgs {
		if m.FolderID == f.ID {
			ids = append(ids, m.ID)
		}
	}
	slices.Sort(ids)
	return ids
}

// MessageCount returns how many messages the mailbox holds, in every
// folder.
func (s *Server) MessageCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.msgs)
}

// IsDraft reports whether a message was filed as a draft (created through
// the API).
func (s *Server) IsDraft(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := s.msgs[id]
	return m != nil && m.Draft
}

// FolderPath returns the id of the folder at a path of display names from
// the top of the mailbox ("Inbox/Lists"), or "" when there is none.
func (s *Server) FolderPath(path string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	parent := "msgfolderroot"
	for _, name := range strings.Split(path, "/") {
		found := ""
		for _, f := range s.folders {
			if f.ParentFolderID == parent && f.DisplayName == name {
				found = f.ID
				break
			}
		}
		if found == "" {
			return ""
		}
		parent = found
	}
	return parent
}
