// Package drive is a local fake of the Google Drive API v3 (the part svc's
// vendor_a_files provider uses), written to Google's documented wire
// format: about.get (storageQuota), files.list (q with the clauses
// "trashed = true|false", "mimeType = / != '...'" and "'ID' in parents"
// joined by "and"; page tokens), files.get (metadata, and content with
// alt=media; Google Docs editors files refuse alt=media with
// fileNotDownloadable), files.export of Docs editors files (export.go),
// files.update (trashed), files.create and files.delete, the upload
// endpoint (media, multipart and resumable upload sessions: upload.go),
// changes.getStartPageToken and changes.list (page tokens,
// newStartPageToken, removed entries), Google's JSON error bodies, and an
// OAuth 2.0 token endpoint at /token.
//
// Files carry md5Checksum and sha256Checksum of their content, version
// (bumped by every change) and permissions. The fields parameter is
// accepted but not applied: the fake answers whole resources, which a
// client asking for fewer fields reads the same. Faults come from the
// embedded vendorfake.Base, FailFile and Corrupt.
package drive

import (
	"crypto/md5"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"svc.dev/svc/internal/vendorfake"
)

// FolderType and DocType are Drive's MIME types of folders and Google Docs.
const (
	FolderType = "application/vnd.google-apps.folder"
	DocType    = "application/vnd.google-apps.document"
)

// Permission is one grant on a file.
type Permission struct {
	ID, Type, Role, EmailAddress, Domain string
	AllowFileDiscovery                   bool
}

type file struct {
	id, name, mime string
	parents        []string
	content        []byte
	version        int64
	created, mod   time.Time
	trashed        bool
	starred        bool
	perms          []Permission
	corrupt        bool
	abusive        bool   // flagged as malware or spam: alt=media is refused
	drive          string // the shared drive holding it; "" for My Drive
}

// Options configures a fake drive.
type Options struct {
	// Files is how many files (besides folders) the drive starts with.
	Files int
	Seed  uint64
	// Email is the owner's address (default sam.rivera@example.com).
	Email string
	// LimitBytes is the storage limit about.get reports (default 15 GB).
	LimitBytes int64
	// SharedFiles, when positive, makes a shared drive (SharedDriveID)
	// holding that many files, the user an organizer.
	SharedFiles int
}

// Server is a fake Drive API. Its URL is the API's root: the vendor_a_files
// provider's endpoint ("{URL}/drive/v3/...") and, at "{URL}/token", its
// OAuth 2.0 token endpoint.
type Server struct {
	*vendorfake.Base
	email string
	limit int64

	mu      sync.Mutex
	files   map[string]*file
	order   []string // ids in creation order
	changes []change
	failing map[string]int
	nextID  int
	uploads uploads
	shared  bool
}

type change struct {
	id      int64
	file    string
	removed bool
	at      time.Time
	drive   string // the file's shared drive
}

// New starts a fake drive, closed with the test.
func New(t interface{ Cleanup(func()) }, opts Options) *Server {
	s := Start(opts)
	t.Cleanup(s.Close)
	return s
}

// Start starts a fake drive; Close stops it.
func Start(opts Options) *Server {
	if opts.Email == "" {
		opts.Email = "sam.rivera@example.com"
	}
	if opts.LimitBytes == 0 {
		opts.LimitBytes = 15 << 30
	}
	s := &Server{Base: vendorfake.NewBase(), email: opts.Email, limit: opts.LimitBytes, files: map[string]*file{}, failing: map[string]int{}}
	s.seed(opts)
	s.Serve(map[string]http.HandlerFunc{"/drive/v3/": s.api, "/upload/drive/v3/": s.upload})
	return s
}

var epoch = time.Date(2026, 10, 1, 9, 0, 0, 0, time.UTC)

// seed makes a drive that looks lived in: folders, documents, photos,
// invoices, shared files, a starred one, a Google Doc.
func (s *Server) seed(opts Options) {
	r := rand.New(rand.NewPCG(opts.Seed, opts.Seed^0x5bd1e995))
	docs := s.add("Documents", FolderType, []string{"root"}, nil)
	photos := s.add("Photos", FolderType, []string{"root"}, nil)
	y2024 := s.add("2024", FolderType, []string{photos}, nil)
	invoices := s.add("Invoices", FolderType, []string{docs}, nil)
	team := s.add("Shared with team", FolderType, []string{"root"}, nil)
	s.add("Trip notes", DocType, []string{docs}, []byte("Day 1: Lisbon. Day 2: Sintra.\n"))
	kinds := []struct {
		dir, ext, mime string
		min, max       int
	}{
		{docs, "pdf", "application/pdf", 2 << 10, 64 << 10},
		{invoices, "pdf", "application/pdf", 1 << 10, 16 << 10},
		{y2024, "jpg", "image/jpeg", 8 << 10, 200 << 10},
		{docs, "txt", "text/plain", 100, 4 << 10},
		{team, "docx", "application/vnd.openxmlformats-officedocument.wordprocessingml.document", 4 << 10, 32 << 10},
		{root, "mp4", "video/mp4", 64 << 10, 300 << 10},
	}
	for i := range opts.Files {
		k := kinds[r.IntN(len(kinds))]
		dir := k.dir
		size := k.min + r.IntN(k.max-k.min)
		content := make([]byte, size)
		for j := range content {
			content[j] = byte(r.Uint32())
		}
		if k.ext == "txt" {
			for j := range content {
				content[j] = "abcdefghij klmnop\n"[int(content[j])%18]
			}
		}
		id := s.add(fmt.Sprintf("%s %03d.%s", map[string]string{"pdf": "Report", "jpg": "IMG", "txt": "Notes", "docx": "Plan", "mp4": "Clip"}[k.ext], i, k.ext), k.mime, []string{dir}, content)
		f := s.files[id]
		f.starred = i%13 == 0
		if dir == team || i%9 == 0 {
			f.perms = append(f.perms, Permission{ID: "p-team", Type: "user", Role: "writer", EmailAddress: "alex.chen@example.com"})
		}
		if i%17 == 0 {
			f.perms = append(f.perms, Permission{ID: "anyoneWithLink", Type: "anyone", Role: "reader"})
		}
	}
	s.add("Budget 2026", SheetType, []string{docs}, []byte("month,amount\nJanuary,1200\n"))
	if opts.SharedFiles > 0 {
		s.shared = true
		s.seedShared(opts.SharedFiles)
	}
	s.changes = nil // the seeded drive is the starting point
}

const root = "root"

// add creates a file and returns its id. Callers hold s.mu or own s.
func (s *Server) add(name, mime string, parents []string, content []byte) string {
	s.nextID++
	id := fmt.Sprintf("1%032x", uint64(s.nextID)*0x9e3779b97f4a7c15)[:33]
	at := epoch.Add(time.Duration(s.nextID) * time.Minute)
	f := &file{id: id, name: name, mime: mime, parents: parents, content: content, version: 1, created: at, mod: at,
		perms: []Permission{{ID: "p-owner", Type: "user", Role: "owner", EmailAddress: s.email}}}
	s.files[id] = f
	s.order = append(s.order, id)
	s.logChange(id, false)
	return id
}

func (s *Server) logChange(id string, removed bool) {
	next := int64(1)
	if n := len(s.changes); n > 0 {
		next = s.changes[n-1].id + 1
	} else {
		next = s.startToken()
	}
	var drive string
	if f := s.files[id]; f != nil {
		drive = f.drive
	}
	s.changes = append(s.changes, change{id: next, file: id, removed: removed, at: time.Now().UTC(), drive: drive})
}

// startToken is the change id the next change gets: the current start page
// token. Seeded drives start at 1000.
func (s *Server) startToken() int64 {
	if n := len(s.changes); n > 0 {
		return s.changes[n-1].id + 1
	}
	if s.nextID == 0 {
		return 1000
	}
	return 1000 + int64(s.nextID)
}

// Add uploads a file (as another client would) into the folder parent
// ("root" for My Drive) and returns its id.
func (s *Server) Add(name, mime, parent string, content []byte) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.add(name, mime, []string{parent}, content)
}

// Rewrite replaces a file's content (as another client would).
func (s *Server) Rewrite(id string, content []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if f := s.files[id]; f != nil {
		f.content, f.mod = content, time.Now().UTC()
		f.version++
		s.logChange(id, false)
	}
}

// Delete deletes a file for good (as another client would).
func (s *Server) Delete(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.files[id]; ok {
		s.logChange(id, true)
		delete(s.files, id)
	}
}

// Trashed reports whether a file is in the trash.
func (s *Server) Trashed(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	f := s.files[id]
	return f != nil && f.trashed
}

// FailFile makes every request about one file answer status (0 heals it).
func (s *Server) FailFile(id string, status int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if status == 0 {
		delete(s.failing, id)
	} else {
		s.failing[id] = status
	}
}

// FlagAbusive marks a file as Drive marks malware or spam: its content is
// refused (403 cannotDownloadAbusiveFile) unless acknowledgeAbuse is set.
func (s *Server) FlagAbusive(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if f := s.files[id]; f != nil {
		f.abusive = true
	}
}

// Corrupt makes a file's content answers differ from its checksums (one
// byte flipped on the wire).
func (s *Server) Corrupt(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if f := s.files[id]; f != nil {
		f.corrupt = true
	}
}

func (s *Server) api(w http.ResponseWriter, r *http.Request) {
	cost := 1
	if !s.Admit(w, r, cost) {
		return
	}
	rest := strings.TrimPrefix(r.URL.Path, "/drive/v3/")
	parts := strings.Split(rest, "/")
	switch {
	case r.Method == "GET" && rest == "about":
		s.about(w)
	case r.Method == "GET" && rest == "files":
		s.list(w, r)
	case r.Method == "GET" && len(parts) == 2 && parts[0] == "files":
		s.get(w, r, parts[1])
	case r.Method == "GET" && len(parts) == 3 && parts[0] == "files" && parts[2] == "export":
		s.export(w, r, parts[1])
	case r.Method == "PATCH" && len(parts) == 2 && parts[0] == "files":
		s.update(w, r, parts[1])
	case r.Method == "POST" && rest == "files":
		s.create(w, r)
	case r.Method == "DELETE" && len(parts) == 2 && parts[0] == "files":
		s.deleteFile(w, r, parts[1])
	case r.Method == "GET" && rest == "changes/startPageToken":
		if _, ok := s.driveScope(w, r, scopeStartToken); !ok {
			return
		}
		s.mu.Lock()
		tok := s.startToken()
		s.mu.Unlock()
		s.JSON(w, 200, "StartPageToken", map[string]any{"kind": "drive#startPageToken", "startPageToken": strconv.FormatInt(tok, 10)})
	case r.Method == "GET" && rest == "changes":
		s.listChanges(w, r)
	default:
		vendorfake.GoogleError(w, 404, "notFound", "Not Found")
	}
}

func (s *Server) about(w http.ResponseWriter) {
	s.mu.Lock()
	var used, trash int64
	for _, f := range s.files {
		used += int64(len(f.content))
		if f.trashed {
			trash += int64(len(f.content))
		}
	}
	s.mu.Unlock()
	other := int64(3 << 20) // mail and photos outside Drive
	s.JSON(w, 200, "About", map[string]any{
		"kind": "drive#about",
		"user": map[string]any{"kind": "drive#user", "displayName": "Sam Rivera", "emailAddress": s.email, "permissionId": "p-owner", "me": true},
		"storageQuota": map[string]any{"limit": strconv.FormatInt(s.limit, 10), "usage": strconv.FormatInt(used+other, 10),
			"usageInDrive": strconv.FormatInt(used, 10), "usageInDriveTrash": strconv.FormatInt(trash, 10)},
	})
}

// resource is a file's JSON. Callers hold s.mu.
func (s *Server) resource(f *file) map[string]any {
	m := map[string]any{"kind": "drive#file", "id": f.id, "name": f.name, "mimeType": f.mime, "parents": f.parents,
		"version": strconv.FormatInt(f.version, 10), "createdTime": f.created.Format(time.RFC3339Nano),
		"modifiedTime": f.mod.Format(time.RFC3339Nano), "trashed": f.trashed, "starred": f.starred,
		"shared": len(f.perms) > 1, "ownedByMe": f.drive == ""}
	if f.drive != "" {
		m["driveId"] = f.drive
	}
	if _, native := exportFormats[f.mime]; f.mime != FolderType && !native {
		md := md5.Sum(f.content)
		sh := sha256.Sum256(f.content)
		m["size"] = strconv.Itoa(len(f.content))
		m["quotaBytesUsed"] = strconv.Itoa(len(f.content))
		m["md5Checksum"] = hex.EncodeToString(md[:])
		m["sha256Checksum"] = hex.EncodeToString(sh[:])
		m["headRevisionId"] = "r" + strconv.FormatInt(f.version, 10)
	}
	var perms []map[string]any
	for _, p := range f.perms {
		pm := map[string]any{"kind": "drive#permission", "id": p.ID, "type": p.Type, "role": p.Role}
		if p.EmailAddress != "" {
			pm["emailAddress"] = p.EmailAddress
		}
		if p.Domain != "" {
			pm["domain"] = p.Domain
		}
		if p.Type == "anyone" || p.Type == "domain" {
			pm["allowFileDiscovery"] = p.AllowFileDiscovery
		}
		perms = append(perms, pm)
	}
	m["permissions"] = perms
	return m
}

// list pages through the files in creation order (the page token is the
// last id listed, so files added meanwhile come at the end).
func (s *Server) list(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	match, err := parseQuery(q.Get("q"))
	if err != nil {
		vendorfake.GoogleError(w, 400, "invalid", "Invalid Value: "+err.Error())
		return
	}
	size := 100
	if v := q.Get("pageSize"); v != "" {
		if size, err = strconv.Atoi(v); err != nil || size < 1 || size > 1000 {
			vendorfake.GoogleError(w, 400, "invalid", "Invalid Value: pageSize")
			return
		}
	}
	drive, ok := s.driveScope(w, r, scopeFiles)
	if !ok {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	pos := 0
	if tok := q.Get("pageToken"); tok != "" {
		i := slices.Index(s.order, strings.TrimPrefix(tok, "~!!~"))
		if !strings.HasPrefix(tok, "~!!~") || i < 0 {
			vendorfake.GoogleError(w, 400, "invalid", "Invalid Value: pageToken")
			return
		}
		pos = i + 1
	}
	files := []map[string]any{}
	last := ""
	for ; pos < len(s.order) && len(files) < size; pos++ {
		last = s.order[pos]
		f := s.files[last]
		if f == nil || f.drive != drive || !matches(match, f) {
			continue
		}
		files = append(files, s.resource(f))
	}
	resp := map[string]any{"kind": "drive#fileList", "incompleteSearch": false, "files": files}
	if pos < len(s.order) {
		resp["nextPageToken"] = "~!!~" + last
	}
	s.JSON(w, 200, "FileList", resp)
}

func (s *Server) get(w http.ResponseWriter, r *http.Request, id string) {
	if id == root && r.URL.Query().Get("alt") == "" {
		// "root" is My Drive's alias: a folder without parents.
		s.JSON(w, 200, "File", map[string]any{"kind": "drive#file", "id": "0AFakeRootFolder", "name": "My Drive", "mimeType": FolderType})
		return
	}
	if id == SharedDriveID && s.sharedRoot(w, r) {
		return
	}
	s.mu.Lock()
	f := s.files[id]
	fail := s.failing[id]
	var res map[string]any
	var content []byte
	var mime string
	var corrupt, abusive bool
	if f != nil {
		res = s.resource(f)
		content, mime, corrupt, abusive = f.content, f.mime, f.corrupt, f.abusive
	}
	s.mu.Unlock()
	switch {
	case fail != 0:
		vendorfake.GoogleError(w, fail, "backendError", "fake: file failing")
		return
	case f == nil || hidden(f, r):
		vendorfake.GoogleError(w, 404, "notFound", "File not found: "+id+".")
		return
	}
	if r.URL.Query().Get("alt") != "media" {
		s.JSON(w, 200, "File", res)
		return
	}
	if abusive && r.URL.Query().Get("acknowledgeAbuse") != "true" {
		vendorfake.GoogleError(w, 403, "cannotDownloadAbusiveFile", "This file has been identified as malware or spam and cannot be downloaded.")
		return
	}
	if _, native := exportFormats[mime]; native || mime == FolderType {
		vendorfake.GoogleError(w, 403, "fileNotDownloadable", "Only files with binary content can be downloaded. Use Export with Docs Editors files.")
		return
	}
	w.Header().Set("Content-Type", mime)
	w.Header().Set("Content-Length", strconv.Itoa(len(content)))
	if corrupt && len(content) > 0 {
		c := slices.Clone(content)
		c[len(c)/2] ^= 0xff
		content = c
	}
	_, _ = w.Write(content)
}

// update applies the fields of a files.update body the fake knows
// (trashed, starred, name).
func (s *Server) update(w http.ResponseWriter, r *http.Request, id string) {
	var body map[string]json.RawMessage
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&body); err != nil {
		vendorfake.GoogleError(w, 400, "parseError", "Parse Error")
		return
	}
	s.mu.Lock()
	f := s.files[id]
	fail := s.failing[id]
	if f == nil || fail != 0 || hidden(f, r) {
		s.mu.Unlock()
		if fail != 0 {
			vendorfake.GoogleError(w, fail, "backendError", "fake: file failing")
		} else {
			vendorfake.GoogleError(w, 404, "notFound", "File not found: "+id+".")
		}
		return
	}
	changed := false
	for k, v := range body {
		switch k {
		case "trashed":
			var b bool
			if json.Unmarshal(v, &b) == nil && b != f.trashed {
				f.trashed, changed = b, true
			}
		case "starred":
			var b bool
			if json.Unmarshal(v, &b) == nil && b != f.starred {
				f.starred, changed = b, true
			}
		case "name":
			var n string
			if json.Unmarshal(v, &n) == nil && n != f.name {
				f.name, changed = n, true
			}
		}
	}
	if changed {
		f.version++
		f.mod = time.Now().UTC()
		s.logChange(id, false)
	}
	res := s.resource(f)
	s.mu.Unlock()
	s.JSON(w, 200, "File", res)
}

// listChanges answers changes.list: each file changed after the token, at
// its latest change, in the order of those changes.
func (s *Server) listChanges(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	from, err := strconv.ParseInt(q.Get("pageToken"), 10, 64)
	if err != nil || from < 1 {
		vendorfake.GoogleError(w, 400, "invalid", "Invalid Value: pageToken")
		return
	}
	size := 100
	if v := q.Get("pageSize"); v != "" {
		if size, err = strconv.Atoi(v); err != nil || size < 1 || size > 1000 {
			vendorfake.GoogleError(w, 400, "invalid", "Invalid Value: pageSize")
			return
		}
	}
	includeRemoved := q.Get("includeRemoved") != "false"
	drive, ok := s.driveScope(w, r, scopeChanges)
	if !ok {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	latest := map[string]int64{}
	for _, c := range s.changes {
		latest[c.file] = c.id
	}
	out := []map[string]any{}
	next := int64(0)
	for _, c := range s.changes {
		if c.id < from || latest[c.file] != c.id || (c.removed && !includeRemoved) || c.drive != drive {
			continue
		}
		if len(out) == size {
			next = c.id
			break
		}
		ch := map[string]any{"kind": "drive#change", "changeType": "file", "time": c.at.Format(time.RFC3339Nano), "removed": c.removed, "fileId": c.file}
		if f := s.files[c.file]; f != nil && !c.removed {
			ch["file"] = s.resource(f)
		}
		out = append(out, ch)
	}
	resp := map[string]any{"kind": "drive#changeList", "changes": out}
	if next != 0 {
		resp["nextPageToken"] = strconv.FormatInt(next, 10)
	} else {
		resp["newStartPageToken"] = strconv.FormatInt(s.startToken(), 10)
	}
	s.JSON(w, 200, "ChangeList", resp)
}
