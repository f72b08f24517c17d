package drive

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"svc.dev/svc/internal/vendorfake"
)

// Google Docs editors types the fake holds besides DocType.
const (
	SheetType  = "application/vnd.google-apps.spreadsheet"
	SlidesType = "application/vnd.google-apps.presentation"
)

// MaxExport is the most an export may be (Drive's documented 10 MB).
const MaxExport = 10 << 20

// exportFormats are the formats the fake exports each Docs editors type to
// (a subset of what Drive's about.exportFormats lists).
var exportFormats = map[string][]string{
	DocType:                               {"application/vnd.openxmlformats-officedocument.wordprocessingml.document", "application/pdf", "text/plain"},
	SheetType:                             {"application/vnd.openxmlformats-officedocument.spreadsheetml.sheet", "application/pdf", "text/csv"},
	SlidesType:                            {"application/vnd.openxmlformats-officedocument.presentationml.presentation", "application/pdf"},
	"application/vnd.google-apps.drawing": {"image/svg+xml", "image/png", "application/pdf"},
}

// export serves files.export (GET files/ID/export?mimeType=...): a Docs
// editors file rendered in a format Drive offers for its type. The
// rendering is the fake's own (a header naming the format, then the
// document's text), stable for a version: it is not real Office Open XML.
// A file that is not a Docs editors file is 403 fileNotExportable, a format
// the type does not offer 400 badRequest, an export over 10 MB 403
// exportSizeLimitExceeded, as Drive answers them.
func (s *Server) export(w http.ResponseWriter, r *http.Request, id string) {
	want := r.URL.Query().Get("mimeType")
	s.mu.Lock()
	f := s.files[id]
	fail := s.failing[id]
	var body []byte
	var mime string
	var version int64
	if f != nil {
		body, mime, version = f.content, f.mime, f.version
	}
	s.mu.Unlock()
	formats, native := exportFormats[mime]
	switch {
	case fail != 0:
		vendorfake.GoogleError(w, fail, "backendError", "fake: file failing")
	case f == nil:
		vendorfake.GoogleError(w, 404, "notFound", "File not found: "+id+".")
	case !native:
		vendorfake.GoogleError(w, 403, "fileNotExportable", "Export only supports Docs Editors files.")
	case want == "" || !contains(formats, want):
		vendorfake.GoogleError(w, 400, "badRequest", "The requested conversion is not supported.")
	default:
		out := []byte(fmt.Sprintf("%s export of %s version %d\n", want, id, version))
		out = append(out, body...)
		if len(out) > MaxExport {
			vendorfake.GoogleError(w, 403, "exportSizeLimitExceeded", "This file is too large to be exported.")
			return
		}
		w.Header().Set("Content-Type", want)
		w.Header().Set("Content-Length", strconv.Itoa(len(out)))
		_, _ = w.Write(out)
	}
}

func contains(list []string, v string) bool {
	for _, x := range list {
		if strings.EqualFold(x, v) {
			return true
		}
	}
	return false
}

// DocIDs returns the ids of the Docs editors files of a type (DocType,
// SheetType, ...), in creation order.
func (s *Server) DocIDs(mime string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, id := range s.order {
		if f := s.files[id]; f != nil && f.mime == mime {
			out = append(out, id)
		}
	}
	return out
}
