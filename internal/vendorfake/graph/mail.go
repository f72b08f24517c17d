package graph

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/mail"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Folder is a mail folder.
type Folder struct {
	ID             string
	DisplayName    string
	WellKnown      string // "inbox", "junkemail", ...; empty for a user folder
	ParentFolderID string
}

// Message is a message in the fake mailbox: its MIME content and where it
// is filed.
type Message struct {
	ID       string
	FolderID string
	MIME     []byte
	IsRead   bool
	Flagged  bool
	Received time.Time
	// Draft says the message was created through the API (from MIME),
	// which Graph files as a draft.
	Draft bool
	// GeneratedID is the internetMessageId the server gave a message whose
	// MIME has no Message-ID, as Exchange does.
	GeneratedID string
	seq         int64 // last change
}

// internetMessageID is the message's Message-ID as Graph reports it.
func (m *Message) internetMessageID(h mail.Header) string {
	if v := strings.TrimSpace(h.Get("Message-Id")); v != "" {
		return v
	}
	return m.GeneratedID
}

var wellKnown = []struct{ name, display string }{
	{"inbox", "Inbox"}, {"sentitems", "Sent Items"}, {"drafts", "Drafts"}, {"deleteditems", "Deleted Items"},
	{"junkemail", "Junk Email"}, {"archive", "Archive"},
}

func folderID(name string) string {
	return "AAMkAGFolder" + strings.ToUpper(name[:1]) + name[1:] + "AAA="
}

// FolderID returns the id of a well-known folder ("inbox", "junkemail",
// "deleteditems", ...) or of a user folder by display name.
func (s *Server) FolderID(name string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if f := s.folder(name); f != nil {
		return f.ID
	}
	return ""
}

// folder resolves an id, a well-known name or a display name.
func (s *Server) folder(ref string) *Folder {
	for _, f := range s.folders {
		if f.ID == ref || strings.EqualFold(f.WellKnown, ref) || f.DisplayName == ref {
			return f
		}
	}
	return nil
}

// AddFolder adds a user folder under parent (a folder id, well-known name,
// or "" for the top level) and returns its id.
func (s *Server) AddFolder(parent, name string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	pid := "msgfolderroot"
	if p := s.folder(parent); p != nil {
		pid = p.ID
	}
	return s.addFolder(pid, name).ID
}

func (s *Server) addFolder(parentID, name string) *Folder {
	f := &Folder{ID: fmt.Sprintf("AAMkAGFolderUser%03dAAA=", len(s.folders)), DisplayName: name, ParentFolderID: parentID}
	s.folders = append(s.folders, f)
	return f
}

// AddMessage files a MIME message in a folder (id or well-known name) and
// returns its id.
func (s *Server) AddMessage(folder string, content []byte, received time.Time) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	f := s.folder(folder)
	if f == nil {
		panic("graph fake: no folder " + folder)
	}
	s.seq++
	id := fmt.Sprintf("AAMkAGMessage%06dAAA=", len(s.msgs)+1)
	s.msgs[id] = &Message{ID: id, FolderID: f.ID, MIME: content, Received: received.UTC().Truncate(time.Second), seq: s.seq}
	return id
}

// MoveMessage moves a message as another mail client would.
func (s *Server) MoveMessage(id, folder string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	m, f := s.msgs[id], s.folder(folder)
	if m == nil || f == nil {
		panic("graph fake: no message or folder")
	}
	s.move(m, f)
}

// EditMessage changes a message's read state, as another client would,
// which moves its changeKey.
func (s *Server) EditMessage(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := s.msgs[id]
	s.seq++
	m.IsRead = !m.IsRead
	m.seq = s.seq
}

// MessageFolder returns the id of the folder a message is filed in.
func (s *Server) MessageFolder(id string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if m := s.msgs[id]; m != nil {
		return m.FolderID
	}
	return ""
}

func (s *Server) move(m *Message, f *Folder) {
	s.seq++
	if m.FolderID != f.ID {
		s.removed = append(s.removed, removal{seq: s.seq, folder: m.FolderID, id: m.ID})
	}
	m.FolderID = f.ID
	m.seq = s.seq
}

func changeKey(m *Message) string {
	return fmt.Sprintf("CQAAABYAAAD%08d", m.seq)
}

// folderJSON renders a folder; withSize adds PR_MESSAGE_SIZE_EXTENDED
// (the extended property "Long 0x0E08": the bytes of the folder's own
// messages) as singleValueExtendedProperties, as Graph answers a $expand
// of it.
func folderJSON(s *Server, f *Folder, withSize bool) map[string]any {
	out := folderProps(s, f)
	if withSize {
		var size int
		for _, m := range s.msgs {
			if m.FolderID == f.ID {
				size += len(m.MIME)
			}
		}
		out["singleValueExtendedProperties"] = []map[string]any{{"id": folderSizeProperty, "value": strconv.Itoa(size)}}
	}
	return out
}

// folderSizeProperty is PR_MESSAGE_SIZE_EXTENDED (PidTagMessageSizeExtended)
// as Graph names an extended property.
const folderSizeProperty = "Long 0x0E08"

func folderProps(s *Server, f *Folder) map[string]any {
	var children, total, unread int
	for _, c := range s.folders {
		if c.ParentFolderID == f.ID {
			children++
		}
	}
	for _, m := range s.msgs {
		if m.FolderID == f.ID {
			total++
			if !m.IsRead {
				unread++
			}
		}
	}
	return map[string]any{
		"id": f.ID, "displayName": f.DisplayName, "parentFolderId": f.ParentFolderID,
		"childFolderCount": children, "unreadItemCount": unread, "totalItemCount": total, "isHidden": false,
	}
}

func (s *Server) listFolders(w http.ResponseWriter, r *http.Request) {
	s.pageFolders(w, r, "msgfolderroot")
}

func (s *Server) childFolders(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	f := s.folder(r.PathValue("id"))
	s.mu.Unlock()
	if f == nil {
		writeError(w, http.StatusNotFound, "ErrorItemNotFound", "The specified object was not found in the store.")
		return
	}
	s.pageFolders(w, r, f.ID)
}

func (s *Server) pageFolders(w http.ResponseWriter, r *http.Request, parent string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	top, skip := pageSize(r, 10, 1000), 0
	if v := r.URL.Query().Get("$skip"); v != "" {
		skip, _ = strconv.Atoi(v)
	}
	var all []map[string]any
	for _, f := range s.folders {
		if f.ParentFolderID == parent {
			all = append(all, folderJSON(s, f, strings.Contains(r.URL.Query().Get("$expand"), folderSizeProperty)))
		}
	}
	body := map[string]any{"@odata.context": s.srv.URL + "/v1.0/$metadata#users('me')/mailFolders"}
	end := min(len(all), skip+top)
	body["value"] = all[min(skip, len(all)):end]
	if end < len(all) {
		body["@odata.nextLink"] = fmt.Sprintf("%s%s?$top=%d&$skip=%d", s.srv.URL, r.URL.Path, top, end)
	}
	writeJSON(w, http.StatusOK, body)
}

func (s *Server) getFolder(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f := s.folder(r.PathValue("id"))
	if f == nil {
		writeError(w, http.StatusNotFound, "ErrorItemNotFound", "The specified object was not found in the store.")
		return
	}
	writeJSON(w, http.StatusOK, folderJSON(s, f, strings.Contains(r.URL.Query().Get("$expand"), folderSizeProperty)))
}

func recipient(a *mail.Address) map[string]any {
	return map[string]any{"emailAddress": map[string]any{"name": a.Name, "address": a.Address}}
}

func recipients(h mail.Header, key string) []map[string]any {
	out := []map[string]any{}
	list, _ := h.AddressList(key)
	for _, a := range list {
		out = append(out, recipient(a))
	}
	return out
}

// messageJSON renders a message as Graph does, with the selected
// properties (all when sel is empty) and, when expandSize, the
// PR_MESSAGE_SIZE extended property.
func (s *Server) messageJSON(m *Message, sel []string, expandSize bool) map[string]any {
	parsed, err := mail.ReadMessage(bytes.NewReader(m.MIME))
	var h mail.Header
	var body []byte
	if err == nil {
		h = parsed.Header
		body, _ = io.ReadAll(parsed.Body)
	} else {
		h = mail.Header{}
	}
	dec := new(mimeDecoder)
	preview := strings.Join(strings.Fields(string(body)), " ")
	if len(preview) > 255 {
		preview = preview[:255]
	}
	headers := []map[string]any{}
	for k, vs := range h {
		for _, v := range vs {
			headers = append(headers, map[string]any{"name": k, "value": v})
		}
	}
	slices.SortFunc(headers, func(a, b map[string]any) int { return strings.Compare(a["name"].(string), b["name"].(string)) })
	sent := m.Received
	if d, err := h.Date(); err == nil {
		sent = d.UTC()
	}
	ck := changeKey(m)
	out := map[string]any{
		"@odata.type":             "#microsoft.graph.message",
		"@odata.etag":             `W/"` + ck + `"`,
		"id":                      m.ID,
		"createdDateTime":         m.Received.Format(time.RFC3339),
		"lastModifiedDateTime":    m.Received.Add(time.Duration(m.seq) * time.Second).Format(time.RFC3339),
		"changeKey":               ck,
		"categories":              []string{},
		"receivedDateTime":        m.Received.Format(time.RFC3339),
		"sentDateTime":            sent.Format(time.RFC3339),
		"hasAttachments":          strings.Contains(strings.ToLower(h.Get("Content-Type")), "multipart/mixed"),
		"internetMessageId":       m.internetMessageID(h),
		"subject":                 dec.header(h.Get("Subject")),
		"bodyPreview":             preview,
		"importance":              "normal",
		"parentFolderId":          m.FolderID,
		"conversationId":          "AAQkAGConv" + strings.Trim(h.Get("Thread-Topic")+h.Get("In-Reply-To"), "<>@ "),
		"isRead":                  m.IsRead,
		"isDraft":                 m.Draft,
		"inferenceClassification": "focused",
		"webLink":                 "https://outlook.office365.com/owa/?ItemID=" + m.ID,
		"flag":                    map[string]any{"flagStatus": map[bool]string{true: "flagged", false: "notFlagged"}[m.Flagged]},
		"toRecipients":            recipients(h, "To"),
		"ccRecipients":            recipients(h, "Cc"),
		"bccRecipients":           []map[string]any{},
		"replyTo":                 recipients(h, "Reply-To"),
		"internetMessageHeaders":  headers,
	}
	if from, err := mail.ParseAddress(h.Get("From")); err == nil {
		out["from"], out["sender"] = recipient(from), recipient(from)
	}
	if len(sel) > 0 {
		keep := map[string]any{"@odata.type": out["@odata.type"], "@odata.etag": out["@odata.etag"], "id": m.ID}
		for _, k := range sel {
			if v, ok := out[k]; ok {
				keep[k] = v
			}
		}
		out = keep
	}
	if expandSize {
		out["singleValueExtendedProperties"] = []map[string]any{{"id": sizeProperty, "value": strconv.Itoa(len(m.MIME))}}
	}
	return out
}

// sizeProperty is PR_MESSAGE_SIZE (PidTagMessageSize) as Graph names an
// extended property.
const sizeProperty = "Integer 0x0E08"

func selectOf(r *http.Request) []string {
	v := r.URL.Query().Get("$select")
	if v == "" {
		return nil
	}
	return strings.Split(v, ",")
}

func expandsSize(r *http.Request) bool {
	return strings.Contains(r.URL.Query().Get("$expand"), sizeProperty)
}

func (s *Server) getMessage(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := s.msgs[r.PathValue("id")]
	if m == nil {
		writeError(w, http.StatusNotFound, "ErrorItemNotFound", "The specified object was not found in the store.")
		return
	}
	writeJSON(w, http.StatusOK, s.messageJSON(m, selectOf(r), expandsSize(r)))
}

func (s *Server) messageValue(w http.ResponseWriter, r *http.Request) {
	if r.PathValue("value") != "$value" {
		writeError(w, http.StatusBadRequest, "BadRequest", "Resource not found for the segment '"+r.PathValue("value")+"'.")
		return
	}
	s.mu.Lock()
	m := s.msgs[r.PathValue("id")]
	var content []byte
	if m != nil {
		content = m.MIME
	}
	s.mu.Unlock()
	if m == nil {
		writeError(w, http.StatusNotFound, "ErrorItemNotFound", "The specified object was not found in the store.")
		return
	}
	w.Header().Set("Content-Type", "text/plain")
	w.Header().Set("Content-Length", strconv.Itoa(len(content)))
	_, _ = w.Write(content)
}

func (s *Server) moveMessage(w http.ResponseWriter, r *http.Request) {
	var req struct {
		DestinationID string `json:"destinationId"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.DestinationID == "" {
		writeError(w, http.StatusBadRequest, "ErrorInvalidRequest", "destinationId is required.")
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	m, f := s.msgs[r.PathValue("id")], s.folder(req.DestinationID)
	if m == nil || f == nil {
		writeError(w, http.StatusNotFound, "ErrorItemNotFound", "The specified object was not found in the store.")
		return
	}
	s.move(m, f)
	writeJSON(w, http.StatusCreated, s.messageJSON(m, nil, false))
}

// messagesDelta serves GET /me/mailFolders/{id}/messages/delta: a round of
// pages (@odata.nextLink with $skiptoken) ending in an @odata.deltaLink
// whose $deltatoken the next round starts from. A round covers the changes
// up to the moment it started; later ones go to the next round. Messages
// that left the folder appear as {"id", "@removed": {"reason": "deleted"}}.
func (s *Server) messagesDelta(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f := s.folder(r.PathValue("id"))
	if f == nil {
		writeError(w, http.StatusNotFound, "ErrorItemNotFound", "The specified object was not found in the store.")
		return
	}
	q := r.URL.Query()
	var since, until int64
	offset := 0
	sel, expand := q.Get("$select"), q.Get("$expand")
	switch {
	case q.Get("$skiptoken") != "":
		p, ok := decodeToken(q.Get("$skiptoken"), 7)
		if !ok || p[0] != "md" || p[1] != f.ID {
			writeError(w, http.StatusBadRequest, "ErrorInvalidUrlQuery", "The skip token is not valid.")
			return
		}
		since, _ = strconv.ParseInt(p[2], 10, 64)
		until, _ = strconv.ParseInt(p[3], 10, 64)
		offset, _ = strconv.Atoi(p[4])
		sel, expand = p[5], p[6]
	case q.Get("$deltatoken") != "":
		p, ok := decodeToken(q.Get("$deltatoken"), 5)
		var err error
		if ok && p[0] == "mdt" {
			since, err = strconv.ParseInt(p[2], 10, 64)
		}
		if !ok || p[0] != "mdt" || p[1] != f.ID || err != nil || since > s.seq {
			writeError(w, http.StatusGone, "SyncStateNotFound", "The sync state generation is not found. Resync is required.")
			return
		}
		sel, expand = p[3], p[4]
		until = s.seq
	default:
		until = s.seq
	}
	type entry struct {
		id      string
		removed bool
	}
	var all []entry
	var selList []string
	if sel != "" {
		selList = strings.Split(sel, ",")
	}
	for _, m := range s.msgs {
		if m.FolderID == f.ID && m.seq > since && m.seq <= until {
			all = append(all, entry{id: m.ID})
		}
	}
	if since > 0 {
		seen := map[string]bool{}
		for _, e := range all {
			seen[e.id] = true
		}
		for _, rm := range s.removed {
			if rm.folder != f.ID || rm.seq <= since || rm.seq > until || seen[rm.id] {
				continue
			}
			if m := s.msgs[rm.id]; m != nil && m.FolderID == f.ID {
				continue // it came back; listed above if within the round
			}
			seen[rm.id] = true
			all = append(all, entry{id: rm.id, removed: true})
		}
	}
	slices.SortFunc(all, func(a, b entry) int { return strings.Compare(a.id, b.id) })
	n := pageSize(r, 10, 1000)
	n = max(n, s.floor)
	end := min(len(all), offset+n)
	page := make([]map[string]any, 0, n)
	for _, e := range all[min(offset, len(all)):end] {
		if e.removed {
			page = append(page, map[string]any{"@odata.type": "#microsoft.graph.message", "id": e.id, "@removed": map[string]any{"reason": "deleted"}})
		} else {
			page = append(page, s.messageJSON(s.msgs[e.id], selList, strings.Contains(expand, sizeProperty)))
		}
	}
	base := s.srv.URL + "/v1.0/me/mailFolders/" + f.ID + "/messages/delta"
	body := map[string]any{"@odata.context": s.srv.URL + "/v1.0/$metadata#Collection(message)", "value": page}
	if end < len(all) {
		body["@odata.nextLink"] = base + "?$skiptoken=" + encodeToken("md", f.ID, strconv.FormatInt(since, 10), strconv.FormatInt(until, 10), strconv.Itoa(end), sel, expand)
	} else {
		body["@odata.deltaLink"] = base + "?$deltatoken=" + encodeToken("mdt", f.ID, strconv.FormatInt(until, 10), sel, expand)
	}
	writeJSON(w, http.StatusOK, body)
}

type mimeDecoder struct{ mime.WordDecoder }

// header decodes RFC 2047 encoded words, as Graph does for subject.
func (d *mimeDecoder) header(v string) string {
	out, err := d.DecodeHeader(v)
	if err != nil {
		return v
	}
	return out
}
