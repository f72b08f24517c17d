package gmail

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"net/textproto"
	"slices"
	"strconv"
	"strings"

	"svc.dev/svc/internal/vendorfake"
	"svc.dev/svc/mail"
)

// quota units per method (Gmail API "Usage limits").
func cost(r *http.Request) int {
	p := r.URL.Path
	switch {
	case r.Method == http.MethodPost && (strings.HasSuffix(p, "/labels") || strings.HasSuffix(p, "/modify")):
		return 5
	case strings.HasSuffix(p, "/profile"), strings.HasSuffix(p, "/labels"):
		return 1
	case strings.HasSuffix(p, "/history"):
		return 2
	case strings.HasSuffix(p, "/batchModify"), strings.HasSuffix(p, "/batchDelete"):
		return 50
	case r.Method == http.MethodDelete:
		return 10
	}
	return 5
}

// api serves /gmail/v1/users/{userId}/...
func (s *Server) api(w http.ResponseWriter, r *http.Request) {
	if !s.Admit(w, r, cost(r)) {
		return
	}
	rest, ok := strings.CutPrefix(r.URL.Path, "/gmail/v1/users/")
	user, rest, _ := strings.Cut(rest, "/")
	if !ok || (user != "me" && user != s.email) {
		vendorfake.GoogleError(w, 403, "forbidden", "Delegation denied for "+s.email)
		return
	}
	parts := strings.Split(rest, "/")
	switch {
	case r.Method == "GET" && rest == "profile":
		s.profile(w)
	case r.Method == "GET" && rest == "labels":
		s.listLabels(w)
	case r.Method == "POST" && rest == "labels":
		s.createLabel(w, r)
	case r.Method == "POST" && len(parts) == 3 && parts[0] == "messages" && parts[2] == "modify":
		s.modify(w, r, parts[1])
	case r.Method == "GET" && rest == "history":
		s.listHistory(w, r)
	case r.Method == "GET" && rest == "messages":
		s.listMessages(w, r)
	case r.Method == "GET" && len(parts) == 2 && parts[0] == "messages":
		s.getMessage(w, r, parts[1])
	case r.Method == "POST" && len(parts) == 3 && parts[0] == "messages" && (parts[2] == "trash" || parts[2] == "untrash"):
		s.trash(w, parts[1], parts[2] == "trash")
	default:
		vendorfake.GoogleError(w, 404, "notFound", "Not Found")
	}
}

func (s *Server) profile(w http.ResponseWriter) {
	n := s.Messages()
	s.mu.Lock()
	h := s.historyID
	s.mu.Unlock()
	s.JSON(w, 200, "Profile", map[string]any{"emailAddress": s.email, "messagesTotal": n, "threadsTotal": n, "historyId": strconv.FormatUint(h, 10)})
}

func (s *Server) listLabels(w http.ResponseWriter) {
	var out []map[string]any
	for _, l := range systemLabels {
		out = append(out, map[string]any{"id": l, "name": l, "type": "system"})
	}
	s.mu.Lock()
	user := slices.Clone(s.labels)
	s.mu.Unlock()
	for _, l := range user {
		out = append(out, map[string]any{"id": l[0], "name": l[1], "type": "user", "messageListVisibility": "show", "labelListVisibility": "labelShow"})
	}
	s.JSON(w, 200, "ListLabelsResponse", map[string]any{"labels": out})
}

// pageSize reads maxResults within [1, max].
func pageSize(r *http.Request, def, most int) (int, bool) {
	v := r.URL.Query().Get("maxResults")
	if v == "" {
		return def, true
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		return 0, false
	}
	return min(n, most), true
}

// listMessages pages through the mailbox newest first. The page token is
// the id listed last, so messages delivered meanwhile do not shift pages.
// Of Gmail's search (q) it knows rfc822msgid:.
func (s *Server) listMessages(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	size, ok := pageSize(r, 100, 500)
	if !ok {
		vendorfake.GoogleError(w, 400, "invalidArgument", "Invalid maxResults")
		return
	}
	spamTrash := q.Get("includeSpamTrash") == "true"
	want := q["labelIds"]
	msgID, ok := search(q.Get("q"))
	if !ok {
		vendorfake.GoogleError(w, 400, "invalidArgument", "fake: the fake's search knows rfc822msgid: only")
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	// Positions: 0..len(inserted)-1 are the inserted ids, then seeded i at
	// len(inserted)+i.
	pos := 0
	if tok := q.Get("pageToken"); tok != "" {
		after, err := base64.RawURLEncoding.DecodeString(tok)
		if err != nil {
			vendorfake.GoogleError(w, 400, "invalidArgument", "Invalid pageToken")
			return
		}
		id := string(after)
		if i := slices.Index(s.inserted, id); i >= 0 {
			pos = i + 1
		} else if i := s.seededIndex(id); i >= 0 {
			pos = len(s.inserted) + i + 1
		} else {
			vendorfake.GoogleError(w, 400, "invalidArgument", "Invalid pageToken")
			return
		}
	}
	total := len(s.inserted) + s.n
	var out []map[string]string
	last := ""
	for ; pos < total && len(out) < size; pos++ {
		var id string
		if pos < len(s.inserted) {
			id = s.inserted[pos]
		} else {
			id = seededID(pos - len(s.inserted))
		}
		last = id
		m := s.get(id)
		if m == nil {
			continue
		}
		if !spamTrash && (slices.Contains(m.labels, "SPAM") || slices.Contains(m.labels, "TRASH")) {
			continue
		}
		if len(want) > 0 && !containsAll(m.labels, want) {
			continue
		}
		if msgID != "" && s.messageIDOf(m) != msgID {
			continue
		}
		out = append(out, map[string]string{"id": m.id, "threadId": m.thread})
	}
	resp := map[string]any{"resultSizeEstimate": total}
	if len(out) > 0 {
		resp["messages"] = out
	}
	if pos < total {
		resp["nextPageToken"] = base64.RawURLEncoding.EncodeToString([]byte(last))
	}
	s.JSON(w, 200, "ListMessagesResponse", resp)
}

func containsAll(have, want []string) bool {
	for _, w := range want {
		if !slices.Contains(have, w) {
			return false
		}
	}
	return true
}

// headOf returns a message's headers and snippet, from the pool's cache
// for seeded messages.
func (s *Server) headOf(m *message) *head {
	read := func(raw []byte) *head {
		h := &head{}
		tp := textproto.NewReader(bufio.NewReader(bytes.NewReader(raw)))
		if mh, err := tp.ReadMIMEHeader(); err == nil || len(mh) > 0 {
			// textproto loses the order; Gmail keeps it. Re-read the
			// block in order for names, taking values from mh.
			for _, line := range strings.Split(string(raw[:headerEnd(raw)]), "\n") {
				name, _, ok := strings.Cut(line, ":")
				if !ok || name == "" || strings.ContainsAny(name[:1], " \t") {
					continue
				}
				vals := mh[textproto.CanonicalMIMEHeaderKey(name)]
				if len(vals) == 0 {
					continue
				}
				h.headers = append(h.headers, header{Name: name, Value: vals[0]})
				mh[textproto.CanonicalMIMEHeaderKey(name)] = vals[1:]
			}
		}
		h.snippet = mail.Read(bytes.NewReader(raw)).Snippet(200)
		return h
	}
	if i := s.seededIndex(m.id); i >= 0 {
		k := i % len(s.pool)
		v, ok := s.heads.Load(k)
		if !ok {
			v, _ = s.heads.LoadOrStore(k, read(s.pool[k].raw))
		}
		ph := v.(*head)
		return &head{headers: append([]header{{"Delivered-To", s.email}, {"X-Fake-Gmail-Id", m.id}}, ph.headers...), snippet: ph.snippet}
	}
	return read(m.raw)
}

func headerEnd(raw []byte) int {
	if i := bytes.Index(raw, []byte("\r\n\r\n")); i >= 0 {
		return i
	}
	if i := bytes.Index(raw, []byte("\n\n")); i >= 0 {
		return i
	}
	return len(raw)
}

func (s *Server) getMessage(w http.ResponseWriter, r *http.Request, id string) {
	s.mu.Lock()
	m := s.get(id)
	fail := s.failing[id]
	var cp message
	if m != nil {
		cp = *m
		cp.labels = slices.Clone(m.labels)
	}
	s.mu.Unlock()
	if fail != 0 {
		vendorfake.GoogleError(w, fail, "backendError", "fake: message failing")
		return
	}
	if m == nil {
		vendorfake.GoogleError(w, 404, "notFound", "Requested entity was not found.")
		return
	}
	format := r.URL.Query().Get("format")
	if format == "" {
		format = "full"
	}
	resp := map[string]any{"id": cp.id, "threadId": cp.thread, "labelIds": cp.labels,
		"historyId": strconv.FormatUint(cp.history, 10), "internalDate": strconv.FormatInt(cp.internal.UnixMilli(), 10),
		"sizeEstimate": len(cp.raw)}
	switch format {
	case "raw":
		resp["raw"] = base64.URLEncoding.EncodeToString(cp.raw)
		resp["snippet"] = s.headOf(&cp).snippet
	case "metadata", "full":
		h := s.headOf(&cp)
		resp["snippet"] = h.snippet
		hs := h.headers
		if want := r.URL.Query()["metadataHeaders"]; len(want) > 0 {
			hs = slices.DeleteFunc(slices.Clone(hs), func(x header) bool {
				return !slices.ContainsFunc(want, func(n string) bool { return strings.EqualFold(n, x.Name) })
			})
		}
		ct := "text/plain"
		for _, x := range h.headers {
			if strings.EqualFold(x.Name, "Content-Type") {
				ct, _, _ = mime.ParseMediaType(x.Value)
			}
		}
		resp["payload"] = map[string]any{"partId": "", "mimeType": ct, "filename": "", "headers": hs, "body": map[string]any{"size": 0}}
	case "minimal":
	default:
		vendorfake.GoogleError(w, 400, "invalidArgument", "Invalid format")
		return
	}
	s.JSON(w, 200, "Message", resp)
}

func (s *Server) trash(w http.ResponseWriter, id string, trash bool) {
	s.mu.Lock()
	if fail := s.failing[id]; fail != 0 {
		s.mu.Unlock()
		vendorfake.GoogleError(w, fail, "backendError", "fake: message failing")
		return
	}
	var m *message
	if trash {
		m = s.relabel(id, []string{"TRASH"}, nil)
	} else {
		m = s.relabel(id, nil, []string{"TRASH"})
	}
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

// listHistory answers history.list: the records after startHistoryId,
// 404 when it is older than the history kept.
func (s *Server) listHistory(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	start, err := strconv.ParseUint(q.Get("startHistoryId"), 10, 64)
	if err != nil {
		vendorfake.GoogleError(w, 400, "invalidArgument", "Invalid startHistoryId")
		return
	}
	size, ok := pageSize(r, 100, 500)
	if !ok {
		vendorfake.GoogleError(w, 400, "invalidArgument", "Invalid maxResults")
		return
	}
	types := q["historyTypes"]
	s.mu.Lock()
	defer s.mu.Unlock()
	if start < s.floor {
		vendorfake.GoogleError(w, 404, "notFound", "Requested entity was not found.")
		return
	}
	from := start
	if tok := q.Get("pageToken"); tok != "" {
		if from, err = strconv.ParseUint(tok, 10, 64); err != nil || from < start {
			vendorfake.GoogleError(w, 400, "invalidArgument", "Invalid pageToken")
			return
		}
	}
	var out []map[string]any
	next := ""
	for _, rec := range s.history {
		if rec.id <= from || (len(types) > 0 && !slices.ContainsFunc(types, func(t string) bool { return strings.EqualFold(t+"s", rec.kind) || strings.EqualFold(t, rec.kind) })) {
			continue
		}
		if len(out) == size {
			next = strconv.FormatUint(rec.id-1, 10)
			break
		}
		msg := map[string]any{"id": rec.msg, "threadId": "t" + rec.msg[1:]}
		if m := s.get(rec.msg); m != nil {
			msg["labelIds"] = slices.Clone(m.labels)
		}
		h := map[string]any{"id": strconv.FormatUint(rec.id, 10), "messages": []any{msg}}
		switch rec.kind {
		case "messagesAdded", "messagesDeleted":
			h[rec.kind] = []any{map[string]any{"message": msg}}
		default:
			h[rec.kind] = []any{map[string]any{"message": msg, "labelIds": rec.labels}}
		}
		out = append(out, h)
	}
	resp := map[string]any{"historyId": strconv.FormatUint(s.historyID, 10)}
	if len(out) > 0 {
		resp["history"] = out
	}
	if next != "" {
		resp["nextPageToken"] = next
	}
	s.JSON(w, 200, "ListHistoryResponse", resp)
}

// MaxBatch is the most calls one batch request may carry (Gmail's limit).
const MaxBatch = 100

// batch serves the batch endpoint: each application/http part is a call,
// answered in a part of the multipart/mixed response with the matching
// Content-ID ("response-" + the call's).
func (s *Server) batch(w http.ResponseWriter, r *http.Request) {
	if !s.Admit(w, r, 0) {
		return
	}
	mt, params, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || mt != "multipart/mixed" || params["boundary"] == "" {
		vendorfake.GoogleError(w, 400, "invalidArgument", "Invalid batch request: want multipart/mixed")
		return
	}
	type call struct {
		id  string
		req *http.Request
	}
	var calls []call
	mr := multipart.NewReader(r.Body, params["boundary"])
	for {
		p, err := mr.NextPart()
		if err == io.EOF {
			break
		}
		if err != nil {
			vendorfake.GoogleError(w, 400, "invalidArgument", "Invalid batch request: "+err.Error())
			return
		}
		if ct, _, _ := mime.ParseMediaType(p.Header.Get("Content-Type")); ct != "application/http" {
			vendorfake.GoogleError(w, 400, "invalidArgument", "Invalid batch part: want application/http")
			return
		}
		req, err := http.ReadRequest(bufio.NewReader(p))
		if err != nil {
			vendorfake.GoogleError(w, 400, "invalidArgument", "Invalid batch part: "+err.Error())
			return
		}
		body, _ := io.ReadAll(req.Body)
		req.Body = io.NopCloser(bytes.NewReader(body))
		if req.Header.Get("Authorization") == "" {
			req.Header.Set("Authorization", r.Header.Get("Authorization"))
		}
		calls = append(calls, call{id: p.Header.Get("Content-ID"), req: req})
	}
	if len(calls) > MaxBatch {
		vendorfake.GoogleError(w, 400, "invalidArgument", fmt.Sprintf("Too many requests in batch: %d, at most %d", len(calls), MaxBatch))
		return
	}
	var out bytes.Buffer
	mw := multipart.NewWriter(&out)
	for _, c := range calls {
		rec := httptest.NewRecorder()
		req := c.req.WithContext(vendorfake.Inner(r.Context()))
		req.RequestURI = ""
		s.api(rec, req)
		h := textproto.MIMEHeader{"Content-Type": {"application/http"}}
		if c.id != "" {
			h.Set("Content-ID", "<response-"+strings.Trim(c.id, "<>")+">")
		}
		pw, _ := mw.CreatePart(h)
		res := rec.Result()
		fmt.Fprintf(pw, "HTTP/1.1 %d %s\r\n", res.StatusCode, http.StatusText(res.StatusCode))
		_ = res.Header.Write(pw)
		fmt.Fprintf(pw, "Content-Length: %d\r\n\r\n", rec.Body.Len())
		_, _ = pw.Write(rec.Body.Bytes())
		_, _ = io.WriteString(pw, "\r\n")
	}
	_ = mw.Close()
	w.Header().Set("Content-Type", "multipart/mixed; boundary="+mw.Boundary())
	_, _ = w.Write(out.Bytes())
}
