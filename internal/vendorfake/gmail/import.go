package gmail

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	netmail "net/mail"
	"net/textproto"
	"slices"
	"strconv"
	"strings"
	"time"

	"svc.dev/svc/internal/vendorfake"
)

// MaxImport is the largest message the fake's users.messages.import takes
// (the discovery document's maxSize for the method).
const MaxImport = 150 << 20

// upload serves the upload endpoint of users.messages.import,
// POST /upload/gmail/v1/users/{userId}/messages/import, with
// uploadType=multipart: a multipart/related body of the Message resource
// as JSON (its labelIds) and the message/rfc822 bytes, as Google's media
// upload sends it. uploadType=media (the bytes alone) is taken too; the
// resumable protocol is not served.
func (s *Server) upload(w http.ResponseWriter, r *http.Request) {
	if !s.Admit(w, r, 25) {
		return
	}
	rest, ok := strings.CutPrefix(r.URL.Path, "/upload/gmail/v1/users/")
	user, rest, _ := strings.Cut(rest, "/")
	switch {
	case !ok || rest != "messages/import":
		vendorfake.GoogleError(w, 404, "notFound", "Not Found")
		return
	case r.Method != http.MethodPost:
		vendorfake.GoogleError(w, 405, "methodNotAllowed", "Method Not Allowed")
		return
	case user != "me" && user != s.email:
		vendorfake.GoogleError(w, 403, "forbidden", "Delegation denied for "+s.email)
		return
	}
	q := r.URL.Query()
	var meta struct {
		LabelIDs []string `json:"labelIds"`
	}
	var raw []byte
	switch q.Get("uploadType") {
	case "multipart":
		mt, params, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
		if err != nil || mt != "multipart/related" || params["boundary"] == "" {
			vendorfake.GoogleError(w, 400, "badContent", "Bad Request: expected multipart/related")
			return
		}
		mr := multipart.NewReader(r.Body, params["boundary"])
		part, err := mr.NextPart()
		if err != nil {
			vendorfake.GoogleError(w, 400, "badContent", "Bad Request: no metadata part")
			return
		}
		if ct, _, _ := mime.ParseMediaType(part.Header.Get("Content-Type")); ct != "application/json" {
			vendorfake.GoogleError(w, 400, "badContent", "Bad Request: the metadata part is not JSON")
			return
		}
		b, err := io.ReadAll(io.LimitReader(part, 1<<20))
		if err == nil && len(bytes.TrimSpace(b)) > 0 {
			err = json.Unmarshal(b, &meta)
		}
		if err != nil {
			vendorfake.GoogleError(w, 400, "parseError", "Parse Error")
			return
		}
		if part, err = mr.NextPart(); err != nil {
			vendorfake.GoogleError(w, 400, "badContent", "Bad Request: no media part")
			return
		}
		if ct, _, _ := mime.ParseMediaType(part.Header.Get("Content-Type")); !strings.HasPrefix(ct, "message/") {
			vendorfake.GoogleError(w, 400, "badContent", "Media type '"+ct+"' is not supported. Valid media types: [message/*]")
			return
		}
		raw, err = io.ReadAll(io.LimitReader(part, MaxImport+1))
		if err != nil {
			vendorfake.GoogleError(w, 400, "badContent", "Bad Request: media part")
			return
		}
	case "media":
		var err error
		if raw, err = io.ReadAll(io.LimitReader(r.Body, MaxImport+1)); err != nil {
			vendorfake.GoogleError(w, 400, "badContent", "Bad Request")
			return
		}
	default:
		vendorfake.GoogleError(w, 400, "invalid", "Invalid Value: uploadType")
		return
	}
	if len(raw) > MaxImport {
		vendorfake.GoogleError(w, 413, "uploadTooLarge", "Media larger than 157286400 bytes")
		return
	}
	if len(raw) == 0 {
		vendorfake.GoogleError(w, 400, "invalidArgument", "fake: an empty message")
		return
	}
	for _, l := range meta.LabelIDs {
		if l == "DRAFT" || l == "TRASH" {
			vendorfake.GoogleError(w, 400, "invalidArgument", "Invalid label: "+l)
			return
		}
	}
	internal := time.Now().UTC()
	if q.Get("internalDateSource") != "receivedTime" {
		// dateHeader, the default: the Date header when it is valid.
		if d, ok := dateHeader(raw); ok {
			internal = d
		}
	}
	s.mu.Lock()
	for _, l := range meta.LabelIDs {
		if !slices.Contains(systemLabels, l) && !slices.ContainsFunc(s.labels, func(x [2]string) bool { return x[0] == l }) {
			s.mu.Unlock()
			vendorfake.GoogleError(w, 400, "invalidArgument", "Invalid label: "+l)
			return
		}
	}
	id := s.insert(bytes.Clone(raw), slices.Clone(meta.LabelIDs), internal)
	m := s.get(id)
	resp := map[string]any{"id": m.id, "threadId": m.thread, "labelIds": slices.Clone(m.labels)}
	s.imports++
	fault, failing := 0, len(s.afterFail) > 0
	if failing {
		fault, s.afterFail = s.afterFail[0], s.afterFail[1:]
	}
	s.mu.Unlock()
	switch {
	case failing && fault == 0:
		if hj, ok := w.(http.Hijacker); ok {
			if c, _, err := hj.Hijack(); err == nil {
				_ = c.Close()
				return
			}
		}
		panic(http.ErrAbortHandler)
	case failing:
		vendorfake.GoogleError(w, fault, "backendError", "fake: failed after storing the message")
	default:
		s.JSON(w, 200, "Message", resp)
	}
}

// dateHeader reads a message's Date header.
func dateHeader(raw []byte) (time.Time, bool) {
	h, err := textproto.NewReader(bufio.NewReader(bytes.NewReader(raw))).ReadMIMEHeader()
	if err != nil && len(h) == 0 {
		return time.Time{}, false
	}
	d, err := netmail.ParseDate(h.Get("Date"))
	return d.UTC(), err == nil
}

// messageIDOf is a message's Message-ID without its angle brackets.
func (s *Server) messageIDOf(m *message) string {
	for _, h := range s.headOf(m).headers {
		if strings.EqualFold(h.Name, "Message-ID") {
			return strings.Trim(strings.TrimSpace(h.Value), "<>")
		}
	}
	return ""
}

// search reads the q of users.messages.list: the fake knows one operator,
// rfc822msgid: (the Message-ID, with or without its angle brackets).
func search(q string) (msgID string, ok bool) {
	if q == "" {
		return "", true
	}
	v, ok := strings.CutPrefix(strings.TrimSpace(q), "rfc822msgid:")
	v = strings.Trim(strings.Trim(v, `"`), "<>")
	return v, ok && v != "" && !strings.ContainsAny(v, " \t")
}

// createLabel answers users.labels.create: a user label of a new name
// (Gmail's names are unique regardless of case, and the system labels'
// are taken); 409 for a name in use.
func (s *Server) createLabel(w http.ResponseWriter, r *http.Request) {
	var l struct {
		Name                  string `json:"name"`
		LabelListVisibility   string `json:"labelListVisibility"`
		MessageListVisibility string `json:"messageListVisibility"`
	}
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&l); err != nil {
		vendorfake.GoogleError(w, 400, "parseError", "Parse Error")
		return
	}
	name := strings.TrimSpace(l.Name)
	if name == "" || strings.ContainsFunc(name, func(r rune) bool { return r < ' ' }) {
		vendorfake.GoogleError(w, 400, "invalidArgument", "Invalid label name")
		return
	}
	s.mu.Lock()
	taken := slices.ContainsFunc(systemLabels, func(x string) bool { return strings.EqualFold(x, name) }) ||
		slices.ContainsFunc(s.labels, func(x [2]string) bool { return strings.EqualFold(x[1], name) })
	var id string
	if !taken {
		id = "Label_" + strconv.Itoa(s.nextLabel)
		s.nextLabel++
		s.labels = append(s.labels, [2]string{id, name})
	}
	s.mu.Unlock()
	if taken {
		vendorfake.GoogleError(w, 409, "alreadyExists", "Label name exists or conflicts")
		return
	}
	resp := map[string]any{"id": id, "name": name, "type": "user", "labelListVisibility": "labelShow", "messageListVisibility": "show"}
	if l.LabelListVisibility != "" {
		resp["labelListVisibility"] = l.LabelListVisibility
	}
	if l.MessageListVisibility != "" {
		resp["messageListVisibility"] = l.MessageListVisibility
	}
	s.JSON(w, 200, "Label", resp)
}

// modify answers users.messages.modify: addLabelIds and removeLabelIds.
func (s *Server) modify(w http.ResponseWriter, r *http.Request, id string) {
	var req struct {
		Add    []string `json:"addLabelIds"`
		Remove []string `json:"removeLabelIds"`
	}
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&req); err != nil {
		vendorfake.GoogleError(w, 400, "parseError", "Parse Error")
		return
	}
	s.mu.Lock()
	for _, l := range req.Add {
		if l == "DRAFT" || (!slices.Contains(systemLabels, l) && !slices.ContainsFunc(s.labels, func(x [2]string) bool { return x[0] == l })) {
			s.mu.Unlock()
			vendorfake.GoogleError(w, 400, "invalidArgument", "Invalid label: "+l)
			return
		}
	}
	if fail := s.failing[id]; fail != 0 {
		s.mu.Unlock()
		vendorfake.GoogleError(w, fail, "backendError", "fake: message failing")
		return
	}
	m := s.relabel(id, req.Add, req.Remove)
	var resp map[string]any
	if m != nil {
		resp = map[string]any{"id": m.id, "threadId": m.thread, "labelIds": slices.Clone(m.labels), "historyId": strconv.FormatUint(m.history, 10)}
	}
	s.mu.Unlock()
	if m == nil {
		vendorfake.GoogleError(w, 404, "notFound", "Requested entity was not found.")
		return
	}
	s.JSON(w, 200, "Message", resp)
}
