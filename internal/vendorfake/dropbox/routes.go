package dropbox

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	"svc.dev/svc/providers/contenthash"
)

type listArgs struct {
	Path           string `json:"path"`
	Recursive      bool   `json:"recursive"`
	IncludeDeleted bool   `json:"include_deleted"`
	Limit          int    `json:"limit"`
}

// cursor: path, recursive, include_deleted, since, until, offset, limit.
type cursor struct {
	Path           string `json:"p"`
	Recursive      bool   `json:"r"`
	IncludeDeleted bool   `json:"d"`
	Since          int64  `json:"s"`
	Until          int64  `json:"u"`
	Offset         int    `json:"o"`
	Limit          int    `json:"l"`
}

func (c cursor) encode() string {
	b, _ := json.Marshal(c)
	return "AAF" + base64.RawURLEncoding.EncodeToString(b)
}

func decodeCursor(v string) (cursor, bool) {
	var c cursor
	b, err := base64.RawURLEncoding.DecodeString(strings.TrimPrefix(v, "AAF"))
	if !strings.HasPrefix(v, "AAF") || err != nil || json.Unmarshal(b, &c) != nil {
		return c, false
	}
	return c, true
}

func decode(w http.ResponseWriter, r *http.Request, v any) bool {
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		badRequest(w, "Bad HTTP \"Content-Type\" header: \""+ct+"\".  Expecting one of \"application/json\", \"application/json; charset=utf-8\", \"text/plain; charset=dropbox-cors-hack\".")
		return false
	}
	if err := json.NewDecoder(r.Body).Decode(v); err != nil {
		badRequest(w, "request body: could not decode input as JSON")
		return false
	}
	return true
}

func (s *Server) listFolder(w http.ResponseWriter, r *http.Request) {
	var a listArgs
	if !decode(w, r, &a) {
		return
	}
	if a.Path != "" && !strings.HasPrefix(a.Path, "/") {
		routeError(w, "path", "malformed_path")
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if a.Path != "" {
		if e := s.entries[lower(a.Path)]; e == nil || e.deleted || !e.folder {
			routeError(w, "path", "not_found")
			return
		}
	}
	if a.Limit <= 0 || a.Limit > 2000 {
		a.Limit = 500
	}
	s.page(w, cursor{Path: lower(a.Path), Recursive: a.Recursive, IncludeDeleted: a.IncludeDeleted, Until: s.seq, Limit: a.Limit})
}

func (s *Server) listFolderContinue(w http.ResponseWriter, r *http.Request) {
	var a struct {
		Cursor string `json:"cursor"`
	}
	if !decode(w, r, &a) {
		return
	}
	c, ok := decodeCursor(a.Cursor)
	if !ok {
		routeError(w, "reset")
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if c.Limit <= 0 {
		c.Limit = 500
	}
	if c.Offset == 0 && c.Since == c.Until {
		// A cursor at the end of a round: a new round of what changed since.
		c.Since, c.Until = c.Until, s.seq
	}
	s.page(w, c)
}

// page serves one page of a round: entries (parents before children) that
// changed in (Since, Until], deleted ones only after the first round.
func (s *Server) page(w http.ResponseWriter, c cursor) {
	var keys []string
	for p, e := range s.entries {
		if e.seq <= c.Since || e.seq > c.Until || (c.Since == 0 && e.deleted) {
			continue
		}
		if c.Path != "" && !strings.HasPrefix(p, c.Path+"/") {
			continue
		}
		if !c.Recursive && path.Dir(p) != c.Path && !(c.Path == "" && path.Dir(p) == "/") {
			continue
		}
		keys = append(keys, p)
	}
	slices.SortFunc(keys, func(a, b string) int {
		if d := strings.Count(a, "/") - strings.Count(b, "/"); d != 0 {
			return d
		}
		return strings.Compare(a, b)
	})
	end := min(len(keys), c.Offset+max(c.Limit, s.pageFloor))
	out := []map[string]any{}
	for _, p := range keys[min(c.Offset, len(keys)):end] {
		out = append(out, s.metadata(p, s.entries[p]))
	}
	next := c
	hasMore := end < len(keys)
	if hasMore {
		next.Offset = end
	} else {
		// The end of a round: the state of the account, whatever the page
		// size (the next round pages by the default).
		next.Since, next.Offset, next.Limit = c.Until, 0, 0
	}
	writeJSON(w, http.StatusOK, map[string]any{"entries": out, "cursor": next.encode(), "has_more": hasMore})
}

// lookup resolves a path or "id:..." to a live entry.
func (s *Server) lookup(p string) (string, *entry) {
	if strings.HasPrefix(p, "id:") {
		for k, e := range s.entries {
			if e.id == p && !e.deleted {
				return k, e
			}
		}
		return "", nil
	}
	e := s.entries[lower(p)]
	if e == nil || e.deleted {
		return "", nil
	}
	return lower(p), e
}

func (s *Server) getMetadata(w http.ResponseWriter, r *http.Request) {
	var a struct {
		Path           string `json:"path"`
		IncludeDeleted bool   `json:"include_deleted"`
	}
	if !decode(w, r, &a) {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	p, e := s.lookup(a.Path)
	if e == nil && a.IncludeDeleted && s.entries[lower(a.Path)] != nil {
		p, e = lower(a.Path), s.entries[lower(a.Path)] // a DeletedMetadata
	}
	if e == nil {
		routeError(w, "path", "not_found")
		return
	}
	writeJSON(w, http.StatusOK, s.metadata(p, e))
}

// download serves files/download on the content endpoint: the argument in
// the Dropbox-API-Arg header, the metadata in Dropbox-API-Result, the
// content as the body.
func (s *Server) download(w http.ResponseWriter, r *http.Request) {
	var a struct {
		Path string `json:"path"`
	}
	arg := r.Header.Get("Dropbox-API-Arg")
	if arg == "" {
		arg = r.URL.Query().Get("arg")
	}
	if err := json.Unmarshal([]byte(arg), &a); err != nil {
		badRequest(w, "Dropbox-API-Arg: could not decode input as JSON")
		return
	}
	s.mu.Lock()
	p, e := s.lookup(a.Path)
	var meta map[string]any
	var content []byte
	if e != nil && !e.folder {
		meta, content = s.metadata(p, e), e.content
	}
	s.mu.Unlock()
	switch {
	case e == nil:
		routeError(w, "path", "not_found")
		return
	case e.folder:
		routeError(w, "path", "not_file")
		return
	}
	delete(meta, ".tag") // the route's result is FileMetadata itself, not the Metadata union
	res, _ := json.Marshal(meta)
	w.Header().Set("Dropbox-API-Result", asciiJSON(res))
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Length", strconv.Itoa(len(content)))
	_, _ = w.Write(content)
}

// asciiJSON escapes non-ASCII characters, as HTTP headers require.
func asciiJSON(b []byte) string {
	var out bytes.Buffer
	for _, r := range string(b) {
		if r < 0x80 {
			out.WriteRune(r)
			continue
		}
		fmt.Fprintf(&out, "\\u%04x", r)
	}
	return out.String()
}

func (s *Server) delete(w http.ResponseWriter, r *http.Request) {
	var a struct {
		Path      string `json:"path"`
		ParentRev string `json:"parent_rev"`
	}
	if !decode(w, r, &a) {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	p, e := s.lookup(a.Path)
	switch {
	case e == nil:
		routeError(w, "path_lookup", "not_found")
		return
	case a.ParentRev != "" && e.folder:
		routeError(w, "path_lookup", "not_file")
		return
	case a.ParentRev != "" && a.ParentRev != e.rev:
		routeError(w, "path_write", "conflict", "file")
		return
	}
	meta := s.metadata(p, e)
	s.seq++
	for k, c := range s.entries {
		if k == p || strings.HasPrefix(k, p+"/") {
			if !c.deleted {
				c.deleted, c.seq = true, s.seq
			}
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"metadata": meta})
}

func (s *Server) restore(w http.ResponseWriter, r *http.Request) {
	var a struct {
		Path string `json:"path"`
		Rev  string `json:"rev"`
	}
	if !decode(w, r, &a) {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	content, ok := s.revs[a.Rev]
	if !ok {
		routeError(w, "invalid_revision")
		return
	}
	if e := s.entries[lower(a.Path)]; e != nil && !e.deleted && e.folder {
		routeError(w, "path_write", "conflict", "folder")
		return
	}
	s.addFolder(path.Dir(a.Path))
	modified := time.Now().UTC().Truncate(time.Second)
	if e := s.entries[lower(a.Path)]; e != nil {
		modified = e.modified
		e.display = a.Path
	}
	s.write(a.Path, content, modified)
	meta := s.metadata(lower(a.Path), s.entries[lower(a.Path)])
	delete(meta, ".tag") // FileMetadata itself
	writeJSON(w, http.StatusOK, meta)
}

func (s *Server) spaceUsage(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var used int64
	for _, e := range s.entries {
		if !e.deleted && !e.folder {
			used += int64(len(e.content))
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"used": used, "allocation": map[string]any{".tag": "individual", "allocated": s.allocated}})
}

// maxPayload is the most data one request to a content route carries.
const maxPayload = 150 << 20

// contentCall reads an upload-style request: its argument from the
// Dropbox-API-Arg header into arg, and its data. It answers bad requests
// itself (ok false); tooLarge reports data over 150 MiB (read no further).
func contentCall(w http.ResponseWriter, r *http.Request, arg any) (data []byte, tooLarge, ok bool) {
	if err := json.Unmarshal([]byte(r.Header.Get("Dropbox-API-Arg")), arg); err != nil {
		badRequest(w, "Dropbox-API-Arg: could not decode input as JSON")
		return nil, false, false
	}
	if ct := r.Header.Get("Content-Type"); ct != "application/octet-stream" {
		badRequest(w, "Bad HTTP \"Content-Type\" header: \""+ct+"\".  Expecting one of \"application/octet-stream\", \"text/plain; charset=dropbox-cors-hack\".")
		return nil, false, false
	}
	data, err := io.ReadAll(io.LimitReader(r.Body, maxPayload+1))
	if err != nil {
		badRequest(w, "could not read the body")
		return nil, false, false
	}
	return data, len(data) > maxPayload, true
}

// hashOK reports whether data matches a call's content_hash ("" matches).
func hashOK(data []byte, want string) bool {
	if want == "" {
		return true
	}
	h := contenthash.NewDropbox()
	h.Write(data)
	return want == hex.EncodeToString(h.Sum(nil))
}

// commitArg is a CommitInfo (UploadArg's fields are its own and
// content_hash).
type commitArg struct {
	Path       string `json:"path"`
	Mode       any    `json:"mode"` // "add", "overwrite", {".tag":"update","update":REV}
	Autorename bool   `json:"autorename"`
}

// conflicts reports whether saving at c's path would conflict with what
// is there: a folder, or a file in mode add, or in mode update at another
// rev. autorename is not served (the fake never renames). Hold s.mu.
func (s *Server) conflicts(c commitArg) bool {
	mode, rev := "add", ""
	if c.Mode != nil {
		mode = tagOf(c.Mode)
	}
	if m, ok := c.Mode.(map[string]any); ok {
		rev, _ = m["update"].(string)
	}
	e := s.entries[lower(c.Path)]
	if e == nil || e.deleted {
		return false
	}
	return e.folder || mode == "add" || (mode == "update" && e.rev != rev)
}

// tagOf returns a union value's tag: a void member may come as its tag
// alone ("add") or as {".tag":"add"}.
func tagOf(v any) string {
	switch u := v.(type) {
	case string:
		return u
	case map[string]any:
		t, _ := u[".tag"].(string)
		return t
	}
	return ""
}

// save writes content at c's path and returns its FileMetadata. Hold s.mu.
func (s *Server) save(c commitArg, content []byte) map[string]any {
	s.addFolder(path.Dir(c.Path))
	s.write(c.Path, content, time.Now().UTC().Truncate(time.Second))
	meta := s.metadata(lower(c.Path), s.entries[lower(c.Path)])
	delete(meta, ".tag") // FileMetadata itself
	return meta
}

// upload serves files/upload on the content endpoint: the UploadArg in
// Dropbox-API-Arg, the content as the body (at most 150 MiB).
func (s *Server) upload(w http.ResponseWriter, r *http.Request) {
	var a struct {
		commitArg
		ContentHash string `json:"content_hash"`
	}
	body, tooLarge, ok := contentCall(w, r, &a)
	switch {
	case !ok:
		return
	case !strings.HasPrefix(a.Path, "/"):
		badRequest(w, "Dropbox-API-Arg: path: not a path")
		return
	case !dataAccepted(w, body, tooLarge, a.ContentHash):
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.conflicts(a.commitArg) {
		writeJSON(w, http.StatusConflict, map[string]any{
			"error_summary": "path/conflict/file/..",
			"error": map[string]any{".tag": "path", "reason": map[string]any{".tag": "conflict", "conflict": map[string]any{".tag": "file"}},
				"upload_session_id": "pid_upload_session:fake"},
		})
		return
	}
	writeJSON(w, http.StatusOK, s.save(a.commitArg, body))
}
