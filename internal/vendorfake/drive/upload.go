package drive

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"strconv"
	"strings"
	"time"

	"svc.dev/svc/internal/vendorfake"
)

// ChunkGranularity is the multiple of bytes every chunk of a resumable
// upload but the last must be (Drive's documented 256 KiB).
const ChunkGranularity = 256 << 10

// maxUpload bounds what the fake stores of one upload.
const maxUpload = 1 << 30

// uploads is the fake's upload state: open resumable sessions and counts
// for tests. Guarded by Server.mu.
type uploads struct {
	sessions  map[string]*session
	multipart int // simple and multipart uploads completed
	resumable int // resumable sessions completed
	chunks    int // chunks received by resumable sessions
	corrupt   bool
}

// session is one resumable upload session.
type session struct {
	target string         // the file id an update replaces; "" for a create
	meta   map[string]any // the initiation's metadata
	mime   string         // X-Upload-Content-Type
	data   []byte
}

// UploadStats are counts of the uploads the fake has completed.
type UploadStats struct {
	// Multipart counts uploads in one request (uploadType multipart or
	// media), Resumable completed resumable sessions and Chunks the chunk
	// requests those sessions received.
	Multipart, Resumable, Chunks int
	// Open is how many resumable sessions are still open.
	Open int
}

// Uploads returns the upload counts so far.
func (s *Server) Uploads() UploadStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	u := &s.uploads
	return UploadStats{Multipart: u.multipart, Resumable: u.resumable, Chunks: u.chunks, Open: len(u.sessions)}
}

// CorruptUploads makes the fake store every later upload with one byte
// flipped, so the stored file's size holds but its checksums differ from
// what the client sent.
func (s *Server) CorruptUploads() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.uploads.corrupt = true
}

// create answers files.create without media: a folder or an empty file
// from the request's metadata.
func (s *Server) create(w http.ResponseWriter, r *http.Request) {
	meta, ok := readMeta(w, io.LimitReader(r.Body, 1<<20))
	if !ok {
		return
	}
	s.store(w, r, "", meta, "", nil, false)
}

// deleteFile answers files.delete: the file is gone for good (no trash).
func (s *Server) deleteFile(w http.ResponseWriter, r *http.Request, id string) {
	s.mu.Lock()
	f, ok := s.files[id]
	ok = ok && !hidden(f, r)
	if ok {
		s.logChange(id, true)
		delete(s.files, id)
	}
	s.mu.Unlock()
	if !ok {
		vendorfake.GoogleError(w, 404, "notFound", "File not found: "+id+".")
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func readMeta(w http.ResponseWriter, r io.Reader) (map[string]any, bool) {
	meta := map[string]any{}
	b, err := io.ReadAll(r)
	if err == nil && len(strings.TrimSpace(string(b))) > 0 {
		err = json.Unmarshal(b, &meta)
	}
	if err != nil {
		vendorfake.GoogleError(w, 400, "parseError", "Parse Error")
		return nil, false
	}
	return meta, true
}

// upload serves the upload endpoint, /upload/drive/v3/files[/ID]:
// uploadType=media (the content alone), multipart (multipart/related: the
// metadata as JSON, then the content) and resumable (an initiation that
// answers a session URI in Location, then the content in chunks sent to
// it with Content-Range, as Drive's upload guide documents).
func (s *Server) upload(w http.ResponseWriter, r *http.Request) {
	if !s.Admit(w, r, 1) {
		return
	}
	rest := strings.TrimPrefix(r.URL.Path, "/upload/drive/v3/files")
	target := strings.TrimPrefix(rest, "/")
	q := r.URL.Query()
	switch {
	case rest != "" && (!strings.HasPrefix(rest, "/") || strings.Contains(target, "/") || target == ""):
		vendorfake.GoogleError(w, 404, "notFound", "Not Found")
	case q.Get("upload_id") != "" && (r.Method == http.MethodPut || r.Method == http.MethodPost):
		s.chunk(w, r, q.Get("upload_id"))
	case !(r.Method == http.MethodPost && target == "" || r.Method == http.MethodPatch && target != ""):
		vendorfake.GoogleError(w, 405, "methodNotAllowed", "Method Not Allowed")
	case q.Get("uploadType") == "media":
		data, err := io.ReadAll(io.LimitReader(r.Body, maxUpload+1))
		if err != nil || len(data) > maxUpload {
			vendorfake.GoogleError(w, 400, "badRequest", "Bad Request")
			return
		}
		s.store(w, r, target, map[string]any{}, r.Header.Get("Content-Type"), data, true)
	case q.Get("uploadType") == "multipart":
		s.multipart(w, r, target)
	case q.Get("uploadType") == "resumable":
		meta, ok := readMeta(w, io.LimitReader(r.Body, 1<<20))
		if !ok {
			return
		}
		var id [16]byte
		_, _ = rand.Read(id[:])
		sid := hex.EncodeToString(id[:])
		s.mu.Lock()
		if s.uploads.sessions == nil {
			s.uploads.sessions = map[string]*session{}
		}
		s.uploads.sessions[sid] = &session{target: target, meta: meta, mime: r.Header.Get("X-Upload-Content-Type")}
		s.mu.Unlock()
		// The session URI keeps the initiation's parameters (supportsAllDrives).
		w.Header().Set("Location", s.URL()+r.URL.Path+"?"+r.URL.RawQuery+"&upload_id="+sid)
		w.Header().Set("X-GUploader-UploadID", sid)
		w.WriteHeader(http.StatusOK)
	default:
		vendorfake.GoogleError(w, 400, "invalid", "Invalid Value: uploadType")
	}
}

// multipart reads a multipart/related upload: metadata, then media.
func (s *Server) multipart(w http.ResponseWriter, r *http.Request, target string) {
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
	meta, ok := readMeta(w, io.LimitReader(part, 1<<20))
	if !ok {
		return
	}
	part, err = mr.NextPart()
	if err != nil {
		vendorfake.GoogleError(w, 400, "badContent", "Bad Request: no media part")
		return
	}
	data, err := io.ReadAll(io.LimitReader(part, maxUpload+1))
	if err != nil || len(data) > maxUpload {
		vendorfake.GoogleError(w, 400, "badContent", "Bad Request: media part")
		return
	}
	s.store(w, r, target, meta, part.Header.Get("Content-Type"), data, true)
}

// chunk takes one chunk of a resumable session: "Content-Range: bytes
// A-B/TOTAL" (the last), "bytes A-B/*" (more to come) or "bytes */TOTAL"
// (the end, or a status query). A chunk that does not start where the
// session is, or a chunk but the last that is not a multiple of 256 KiB,
// is refused; an incomplete session answers 308 with the Range it holds
// (200 with X-Http-Status-Code-Override: 308 when the client sent
// X-GUploader-No-308: yes, as Google's client libraries do).
func (s *Server) chunk(w http.ResponseWriter, r *http.Request, sid string) {
	s.mu.Lock()
	se := s.uploads.sessions[sid]
	s.mu.Unlock()
	if se == nil {
		vendorfake.GoogleError(w, 404, "notFound", "Upload session not found or expired.")
		return
	}
	first, last, total, ok := contentRange(r.Header.Get("Content-Range"))
	if !ok {
		vendorfake.GoogleError(w, 400, "badRequest", "Invalid Content-Range")
		return
	}
	data, err := io.ReadAll(io.LimitReader(r.Body, maxUpload+1))
	if err != nil {
		return
	}
	s.mu.Lock()
	s.uploads.chunks++
	have := int64(len(se.data))
	switch {
	case first < 0: // bytes */TOTAL: no content
	case first != have:
		// Not where the session is: nothing taken, the client learns the Range.
	case int64(len(data)) != last-first+1 || have+int64(len(data)) > maxUpload:
		s.mu.Unlock()
		vendorfake.GoogleError(w, 400, "badRequest", "Content-Range does not match the body")
		return
	case total < 0 && len(data)%ChunkGranularity != 0:
		s.mu.Unlock()
		vendorfake.GoogleError(w, 400, "badRequest", fmt.Sprintf("Chunks must be multiples of %d bytes, but the last", ChunkGranularity))
		return
	default:
		se.data = append(se.data, data...)
	}
	have = int64(len(se.data))
	done := total >= 0 && total == have
	if done {
		delete(s.uploads.sessions, sid)
		s.uploads.resumable++
	}
	s.mu.Unlock()
	if done {
		s.store(w, r, se.target, se.meta, se.mime, se.data, false)
		return
	}
	if total >= 0 && total < have {
		vendorfake.GoogleError(w, 400, "badRequest", "Content-Range total is less than the bytes received")
		return
	}
	if have > 0 {
		w.Header().Set("Range", "bytes=0-"+strconv.FormatInt(have-1, 10))
	}
	if r.Header.Get("X-GUploader-No-308") == "yes" {
		w.Header().Set("X-Http-Status-Code-Override", "308")
		w.WriteHeader(http.StatusOK)
		return
	}
	w.WriteHeader(http.StatusPermanentRedirect) // 308 Resume Incomplete
}

// contentRange parses a chunk's Content-Range; first is -1 for "bytes
// */TOTAL" and total -1 for "/*".
func contentRange(v string) (first, last, total int64, ok bool) {
	rng, tot, found := strings.Cut(strings.TrimPrefix(v, "bytes "), "/")
	if !found || !strings.HasPrefix(v, "bytes ") {
		return 0, 0, 0, false
	}
	total = -1
	if tot != "*" {
		var err error
		if total, err = strconv.ParseInt(tot, 10, 64); err != nil || total < 0 {
			return 0, 0, 0, false
		}
	}
	if rng == "*" {
		return -1, -1, total, total >= 0
	}
	a, b, found := strings.Cut(rng, "-")
	first, err1 := strconv.ParseInt(a, 10, 64)
	last, err2 := strconv.ParseInt(b, 10, 64)
	if !found || err1 != nil || err2 != nil || first < 0 || last < first || total >= 0 && last >= total {
		return 0, 0, 0, false
	}
	return first, last, total, true
}

// store creates a file from metadata and content, or (target set) gives
// the target new content, and answers the File.
// A file in a shared drive, or a new file in a shared drive's folder, needs
// the request's supportsAllDrives (the session's initiation's, for a
// resumable upload); without it Drive answers 404.
func (s *Server) store(w http.ResponseWriter, r *http.Request, target string, meta map[string]any, ctype string, data []byte, single bool) {
	name, _ := meta["name"].(string)
	mimeType, _ := meta["mimeType"].(string)
	if mimeType == "" {
		mimeType, _, _ = strings.Cut(ctype, ";")
	}
	var parents []string
	if ps, ok := meta["parents"].([]any); ok {
		for _, p := range ps {
			if p, ok := p.(string); ok {
				parents = append(parents, p)
			}
		}
	}
	s.mu.Lock()
	if s.uploads.corrupt && len(data) > 0 {
		data = append([]byte(nil), data...)
		data[len(data)/2] ^= 0xff
	}
	if single && data != nil {
		s.uploads.multipart++
	}
	var f *file
	if target != "" {
		if f = s.files[target]; f == nil || hidden(f, r) {
			s.mu.Unlock()
			vendorfake.GoogleError(w, 404, "notFound", "File not found: "+target+".")
			return
		}
		if data != nil {
			f.content = data
		}
		if name != "" {
			f.name = name
		}
		f.version++
		f.mod = time.Now().UTC()
		s.logChange(target, false)
	} else {
		if name == "" {
			name = "Untitled"
		}
		if len(parents) == 0 {
			parents = []string{root}
		}
		drive := ""
		for _, p := range parents {
			pf := s.files[p]
			switch {
			case p == SharedDriveID && s.shared && allDrives(r):
				drive = p
			case p != root && (pf == nil || pf.mime != FolderType || hidden(pf, r)):
				s.mu.Unlock()
				vendorfake.GoogleError(w, 404, "notFound", "File not found: "+p+".")
				return
			case pf != nil:
				drive = pf.drive
			}
		}
		if mimeType == "" {
			mimeType = "application/octet-stream"
		}
		if data == nil && mimeType != FolderType {
			data = []byte{}
		}
		id := s.add(name, mimeType, parents, data)
		f = s.files[id]
		f.mod, f.drive = time.Now().UTC(), drive
		s.changes[len(s.changes)-1].drive = drive // add logged it before its drive was set
	}
	res := s.resource(f)
	s.mu.Unlock()
	s.JSON(w, 200, "File", res)
}
