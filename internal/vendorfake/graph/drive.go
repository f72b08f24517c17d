package graph

import (
	"crypto/sha1"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io"
	"mime"
	"net/http"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	"svc.dev/svc/providers/contenthash"
)

const rootID = "F00DF00DF00D!101"

// Item is a driveItem: a file or a folder of the fake drive.
type Item struct {
	ID       string
	Name     string
	ParentID string
	Folder   bool
	Content  []byte
	ETag     string
	CTag     string
	Created  time.Time
	Modified time.Time
	Deleted  bool // in the recycle bin
	NoSHA256 bool // as for most OneDrive for Business files: quickXorHash only
	corrupt  []byte
	hashes   map[string]any // of Content, computed once per version
	seq      int64
	version  int
}

func etag(id string, v int) string { return fmt.Sprintf(`"{%s},%d"`, id, v) }
func ctag(id string, v int) string { return fmt.Sprintf(`"c:{%s},%d"`, id, v) }

// RootID is the id of the drive's root folder.
func (s *Server) RootID() string { return rootID }

// AddItem adds a file (content non-nil) or a folder (content nil) under the
// folder at parentPath ("" or "/" for the root, "Documents/2024") and
// returns its id.
func (s *Server) AddItem(parentPath, name string, content []byte, modified time.Time) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	parent := s.itemByPath(parentPath)
	if parent == nil || !parent.Folder {
		panic("graph fake: no folder " + parentPath)
	}
	s.seq++
	id := fmt.Sprintf("F00DF00DF00D!%d", 200+len(s.items))
	modified = modified.UTC().Truncate(time.Second)
	it := &Item{ID: id, Name: name, ParentID: parent.ID, Folder: content == nil, Content: content, Created: modified, Modified: modified, seq: s.seq, version: 1}
	it.ETag, it.CTag = etag(id, 1), ctag(id, 1)
	s.items[id] = it
	return id
}

// SetNoSHA256 makes a file report only its quickXorHash.
func (s *Server) SetNoSHA256(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.items[id].NoSHA256 = true
}

// UpdateItem replaces a file's content, as another client would.
func (s *Server) UpdateItem(id string, content []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	it := s.items[id]
	s.seq++
	it.version++
	it.Content, it.seq, it.Modified, it.hashes = content, s.seq, s.now(), nil
	it.ETag, it.CTag = etag(id, it.version), ctag(id, it.version)
}

// CorruptItem changes a file's content without changing its metadata or
// hashes, so a client that verifies content notices.
func (s *Server) CorruptItem(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	it := s.items[id]
	c := append([]byte(nil), it.Content...)
	if len(c) > 0 {
		c[0] ^= 0xff
	}
	it.corrupt = c
}

// PurgeItem removes an item for good (from the recycle bin too), as
// emptying the recycle bin does.
func (s *Server) PurgeItem(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.items, id)
}

// LiveNames lists the names of the live files and folders.
func (s *Server) LiveNames() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, it := range s.items {
		if !it.Deleted {
			out = append(out, it.Name)
		}
	}
	return out
}

// ItemDeleted reports whether an item is in the recycle bin.
func (s *Server) ItemDeleted(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	it := s.items[id]
	return it != nil && it.Deleted
}

func (s *Server) itemByPath(p string) *Item {
	cur := s.items[rootID]
	for _, seg := range strings.Split(strings.Trim(p, "/"), "/") {
		if seg == "" {
			continue
		}
		var next *Item
		for _, it := range s.items {
			if it.ParentID == cur.ID && it.Name == seg && !it.Deleted {
				next = it
				break
			}
		}
		if next == nil {
			return nil
		}
		cur = next
	}
	return cur
}

func (s *Server) itemPath(it *Item) string {
	var segs []string
	for p := s.items[it.ParentID]; p != nil && p.ID != rootID; p = s.items[p.ParentID] {
		segs = append(segs, p.Name)
	}
	slices.Reverse(segs)
	return "/drive/root:" + strings.TrimSuffix("/"+strings.Join(segs, "/"), "/")
}

func (s *Server) depth(it *Item) int {
	d := 0
	for p := s.items[it.ParentID]; p != nil; p = s.items[p.ParentID] {
		d++
	}
	return d
}

// itemJSON renders a driveItem. withPath adds parentReference.path, which
// Graph leaves out of delta responses.
func (s *Server) itemJSON(it *Item, withPath, download bool) map[string]any {
	out := map[string]any{
		"id": it.ID, "name": it.Name, "eTag": it.ETag, "cTag": it.CTag,
		"createdDateTime": it.Created.Format(time.RFC3339), "lastModifiedDateTime": it.Modified.Format(time.RFC3339),
		"webUrl":         "https://onedrive.live.com/?id=" + it.ID,
		"fileSystemInfo": map[string]any{"createdDateTime": it.Created.Format(time.RFC3339), "lastModifiedDateTime": it.Modified.Format(time.RFC3339)},
		"createdBy":      map[string]any{"user": map[string]any{"displayName": "Fake User", "id": "fake0001"}},
	}
	if it.ID == rootID {
		out["root"] = map[string]any{}
	} else {
		ref := map[string]any{"driveId": s.driveID, "driveType": "personal", "id": it.ParentID}
		if withPath {
			ref["path"] = s.itemPath(it)
		}
		out["parentReference"] = ref
	}
	if it.Deleted {
		out["deleted"] = map[string]any{"state": "deleted"}
		return out
	}
	if it.Folder {
		n := 0
		for _, c := range s.items {
			if c.ParentID == it.ID && !c.Deleted {
				n++
			}
		}
		out["folder"] = map[string]any{"childCount": n}
		out["size"] = s.folderSize(it)
		return out
	}
	out["size"] = int64(len(it.Content))
	mt := mime.TypeByExtension(path.Ext(it.Name))
	if i := strings.IndexByte(mt, ';'); i >= 0 {
		mt = mt[:i]
	}
	if mt == "" {
		mt = "application/octet-stream"
	}
	if it.hashes == nil {
		q := contenthash.NewQuickXor()
		q.Write(it.Content)
		s1 := sha1.Sum(it.Content)
		s256 := sha256.Sum256(it.Content)
		it.hashes = map[string]any{"quickXorHash": base64.StdEncoding.EncodeToString(q.Sum(nil)), "sha1Hash": strings.ToUpper(hex.EncodeToString(s1[:])),
			"sha256Hash": strings.ToUpper(hex.EncodeToString(s256[:]))}
	}
	hashes := map[string]any{"quickXorHash": it.hashes["quickXorHash"], "sha1Hash": it.hashes["sha1Hash"]}
	if !it.NoSHA256 {
		hashes["sha256Hash"] = it.hashes["sha256Hash"]
	}
	out["file"] = map[string]any{"mimeType": mt, "hashes": hashes}
	if download {
		out["@microsoft.graph.downloadUrl"] = s.srv.URL + "/_download/" + it.ID + "?v=" + strconv.Itoa(it.version)
	}
	return out
}

func (s *Server) folderSize(f *Item) int64 {
	var n int64
	for _, c := range s.items {
		if c.ParentID == f.ID && !c.Deleted {
			if c.Folder {
				n += s.folderSize(c)
			} else {
				n += int64(len(c.Content))
			}
		}
	}
	return n
}

func (s *Server) getDrive(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var used, deleted int64
	for _, it := range s.items {
		if it.Folder {
			continue
		}
		if it.Deleted {
			deleted += int64(len(it.Content))
		} else {
			used += int64(len(it.Content))
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"id": s.driveID, "driveType": "personal", "name": "OneDrive",
		"owner": map[string]any{"user": map[string]any{"displayName": "Fake User", "id": "fake0001"}},
		"quota": map[string]any{"total": s.total, "used": used + deleted, "deleted": deleted, "remaining": s.total - used - deleted, "state": "normal"},
	})
}

// driveDelta serves GET /me/drive/root/delta: the whole drive on the first
// round (parents before children), then what changed since the round's
// token, deleted items with a "deleted" facet.
func (s *Server) driveDelta(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	q := r.URL.Query()
	var since, until int64
	offset := 0
	switch {
	case q.Get("$skiptoken") != "":
		p, ok := decodeToken(q.Get("$skiptoken"), 4)
		if !ok || p[0] != "dd" {
			writeError(w, http.StatusBadRequest, "invalidRequest", "Invalid skip token.")
			return
		}
		since, _ = strconv.ParseInt(p[1], 10, 64)
		until, _ = strconv.ParseInt(p[2], 10, 64)
		offset, _ = strconv.Atoi(p[3])
	case q.Get("token") != "":
		p, ok := decodeToken(q.Get("token"), 2)
		var err error
		if ok && p[0] == "ddt" {
			since, err = strconv.ParseInt(p[1], 10, 64)
		}
		if !ok || p[0] != "ddt" || err != nil || since > s.seq {
			writeError(w, http.StatusGone, "resyncRequired", "The delta token is no longer valid; start a new sync.")
			return
		}
		until = s.seq
	default:
		until = s.seq
	}
	var all []*Item
	for _, it := range s.items {
		if since == 0 && it.Deleted {
			continue
		}
		if (it.seq > since || since == 0) && it.seq <= until {
			all = append(all, it)
		}
	}
	slices.SortFunc(all, func(a, b *Item) int {
		if d := s.depth(a) - s.depth(b); d != 0 {
			return d
		}
		return strings.Compare(a.ID, b.ID)
	})
	n := pageSize(r, 200, 1000)
	n = max(n, s.floor)
	end := min(len(all), offset+n)
	page := []map[string]any{}
	for _, it := range all[min(offset, len(all)):end] {
		page = append(page, s.itemJSON(it, false, false))
	}
	base := s.srv.URL + "/v1.0/me/drive/root/delta"
	body := map[string]any{"@odata.context": s.srv.URL + "/v1.0/$metadata#Collection(driveItem)", "value": page}
	if end < len(all) {
		body["@odata.nextLink"] = fmt.Sprintf("%s?$top=%d&$skiptoken=%s", base, n, encodeToken("dd", strconv.FormatInt(since, 10), strconv.FormatInt(until, 10), strconv.Itoa(end)))
	} else {
		body["@odata.deltaLink"] = base + "?token=" + encodeToken("ddt", strconv.FormatInt(until, 10))
	}
	writeJSON(w, http.StatusOK, body)
}

func (s *Server) liveItem(w http.ResponseWriter, id string) *Item {
	it := s.items[id]
	if id == "root" {
		it = s.items[rootID]
	}
	if it == nil || it.Deleted {
		writeError(w, http.StatusNotFound, "itemNotFound", "The resource could not be found.")
		return nil
	}
	return it
}

func (s *Server) getItem(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if it := s.liveItem(w, r.PathValue("id")); it != nil {
		writeJSON(w, http.StatusOK, s.itemJSON(it, true, true))
	}
}

// itemContent answers GET /items/{id}/content with a 302 to a
// pre-authenticated download URL, as Graph does.
func (s *Server) itemContent(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	it := s.liveItem(w, r.PathValue("id"))
	if it == nil {
		return
	}
	if it.Folder {
		writeError(w, http.StatusBadRequest, "invalidRequest", "The item is a folder.")
		return
	}
	w.Header().Set("Location", s.srv.URL+"/_download/"+it.ID+"?v="+strconv.Itoa(it.version))
	w.WriteHeader(http.StatusFound)
}

func (s *Server) download(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	it := s.items[r.PathValue("id")]
	var content []byte
	if it != nil && !it.Deleted {
		content = it.Content
		if it.corrupt != nil {
			content = it.corrupt
		}
	}
	s.mu.Unlock()
	if content == nil {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Length", strconv.Itoa(len(content)))
	_, _ = w.Write(content)
}

// deleteItem moves an item (and a folder's contents) to the recycle bin,
// refusing with 412 when If-Match names another eTag.
func (s *Server) deleteItem(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	it := s.liveItem(w, r.PathValue("id"))
	if it == nil {
		return
	}
	if m := r.Header.Get("If-Match"); m != "" && m != "*" && m != it.ETag {
		writeError(w, http.StatusPreconditionFailed, "preconditionFailed", "ETag does not match current item's value")
		return
	}
	if it.ID == rootID {
		writeError(w, http.StatusForbidden, "accessDenied", "The root cannot be deleted.")
		return
	}
	s.seq++
	s.trash(it)
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) trash(it *Item) {
	it.Deleted, it.seq = true, s.seq
	for _, c := range s.items {
		if c.ParentID == it.ID && !c.Deleted {
			s.trash(c)
		}
	}
}

// restoreItem restores an item from the recycle bin to its parent
// (driveItem: restore).
func (s *Server) restoreItem(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	it := s.items[r.PathValue("id")]
	if it == nil {
		writeError(w, http.StatusNotFound, "itemNotFound", "The resource could not be found.")
		return
	}
	if !it.Deleted {
		writeError(w, http.StatusBadRequest, "invalidRequest", "The item is not in the recycle bin.")
		return
	}
	s.seq++
	it.Deleted, it.seq = false, s.seq
	for p := s.items[it.ParentID]; p != nil && p.Deleted; p = s.items[p.ParentID] {
		p.Deleted, p.seq = false, s.seq
	}
	writeJSON(w, http.StatusOK, s.itemJSON(it, true, false))
}

// uploadItem serves the simple upload, PUT
// /me/drive/root:/{path}:/content, with
// @microsoft.graph.conflictBehavior fail (the default here) or replace,
// creating missing parent folders.
func (s *Server) uploadItem(w http.ResponseWriter, r *http.Request) {
	rest := r.PathValue("pathContent")
	p, ok := strings.CutPrefix(rest, "root:/")
	p, ok2 := strings.CutSuffix(p, ":/content")
	if !ok || !ok2 || p == "" {
		writeError(w, http.StatusBadRequest, "invalidRequest", "Invalid request.")
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 250<<20+1))
	if err != nil || len(body) > 250<<20 {
		writeError(w, http.StatusRequestEntityTooLarge, "requestTooLarge", "The request is too large for a simple upload.")
		return
	}
	replace := r.URL.Query().Get("@microsoft.graph.conflictBehavior") == "replace"
	s.mu.Lock()
	defer s.mu.Unlock()
	s.storeAt(w, p, body, replace)
}

// storeAt stores content at a path, creating missing parent folders, and
// answers the item (201 created, 200 replaced) or a 409 when a file is in
// the way and replace is not set. Callers hold s.mu.
func (s *Server) storeAt(w http.ResponseWriter, p string, body []byte, replace bool) {
	dir, name := path.Split(p)
	parent := s.items[rootID]
	for _, seg := range strings.Split(strings.Trim(dir, "/"), "/") {
		if seg == "" {
			continue
		}
		var next *Item
		for _, it := range s.items {
			if it.ParentID == parent.ID && it.Name == seg && !it.Deleted {
				next = it
			}
		}
		if next == nil {
			s.seq++
			id := fmt.Sprintf("F00DF00DF00D!%d", 200+len(s.items))
			next = &Item{ID: id, Name: seg, ParentID: parent.ID, Folder: true, Created: s.now(), Modified: s.now(), seq: s.seq, version: 1, ETag: etag(id, 1), CTag: ctag(id, 1)}
			s.items[id] = next
		} else if !next.Folder {
			writeError(w, http.StatusConflict, "nameAlreadyExists", "A file is in the way of the path.")
			return
		}
		parent = next
	}
	it := s.childNamed(parent.ID, name)
	status := http.StatusCreated
	s.seq++
	switch {
	case it != nil && (!replace || it.Folder):
		writeError(w, http.StatusConflict, "nameAlreadyExists", "The specified item name already exists.")
		return
	case it != nil:
		status = http.StatusOK
		it.version++
		it.Content, it.seq, it.Modified, it.corrupt, it.hashes = body, s.seq, s.now(), nil, nil
		it.ETag, it.CTag = etag(it.ID, it.version), ctag(it.ID, it.version)
	default:
		id := fmt.Sprintf("F00DF00DF00D!%d", 200+len(s.items))
		it = &Item{ID: id, Name: name, ParentID: parent.ID, Content: body, Created: s.now(), Modified: s.now(), seq: s.seq, version: 1, ETag: etag(id, 1), CTag: ctag(id, 1)}
		s.items[id] = it
	}
	writeJSON(w, status, s.itemJSON(it, true, false))
}

// childNamed returns the live item named name in a folder, or nil.
// Callers hold s.mu.
func (s *Server) childNamed(parent, name string) *Item {
	for _, c := range s.items {
		if c.ParentID == parent && c.Name == name && !c.Deleted {
			return c
		}
	}
	return nil
}
