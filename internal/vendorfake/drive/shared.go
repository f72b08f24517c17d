package drive

import (
	"fmt"
	"net/http"

	"svc.dev/svc/internal/vendorfake"
)

// The shared drive Options.SharedFiles seeds.
const (
	SharedDriveID   = "0AFakeSharedDriveTeamProjUk9PVA"
	SharedDriveName = "Team Projects"
)

// allDrives reports whether a request says its client supports shared
// drives (supportsAllDrives=true). Drive answers 404 for a shared drive's
// files to a request that does not.
func allDrives(r *http.Request) bool { return r.URL.Query().Get("supportsAllDrives") == "true" }

// hidden reports whether a file is out of a request's reach: in a shared
// drive, asked for without supportsAllDrives.
func hidden(f *file, r *http.Request) bool { return f != nil && f.drive != "" && !allDrives(r) }

// seedShared makes the shared drive: a folder and n files, the owner an
// organizer, a colleague a file organizer. Callers own s.
func (s *Server) seedShared(n int) {
	specs := s.add("Specs", FolderType, []string{SharedDriveID}, nil)
	s.files[specs].drive = SharedDriveID
	for i := range n {
		parent := SharedDriveID
		if i%2 == 1 {
			parent = specs
		}
		id := s.add(fmt.Sprintf("Spec %02d.txt", i), "text/plain", []string{parent}, []byte(fmt.Sprintf("shared spec %d\n", i)))
		f := s.files[id]
		f.drive = SharedDriveID
		f.perms = []Permission{{ID: "p-owner", Type: "user", Role: "organizer", EmailAddress: s.email},
			{ID: "p-team", Type: "user", Role: "fileOrganizer", EmailAddress: "alex.chen@example.com"}}
	}
}

// The requests driveScope checks, each with the parameters Drive's
// reference gives it.
const (
	scopeFiles      = iota // files.list: corpora, driveId, includeItemsFromAllDrives, supportsAllDrives
	scopeChanges           // changes.list: driveId, includeItemsFromAllDrives, supportsAllDrives
	scopeStartToken        // changes.getStartPageToken: driveId, supportsAllDrives
)

// driveScope checks a request's shared drive parameters: a driveId needs
// supportsAllDrives, and includeItemsFromAllDrives where the method has it
// (and, for files.list, corpora=drive). It returns the drive asked for (""
// for My Drive) and false when it answered the request itself.
func (s *Server) driveScope(w http.ResponseWriter, r *http.Request, kind int) (string, bool) {
	files := kind == scopeFiles
	q := r.URL.Query()
	d := q.Get("driveId")
	switch {
	case d == "" && q.Get("corpora") == "drive":
		vendorfake.GoogleError(w, 400, "invalid", "The driveId parameter must be specified if and only if corpora is set to drive.")
	case d == "":
		return "", true
	case files && q.Get("corpora") != "drive":
		vendorfake.GoogleError(w, 400, "invalid", "The driveId parameter must be specified if and only if corpora is set to drive.")
	case !allDrives(r) || kind != scopeStartToken && q.Get("includeItemsFromAllDrives") != "true":
		vendorfake.GoogleError(w, 403, "teamDrivesParameterNotSupported", "includeItemsFromAllDrives and supportsAllDrives must be set to true when driveId is set.")
	case d != SharedDriveID || !s.hasShared():
		vendorfake.GoogleError(w, 404, "notFound", "Shared drive not found: "+d)
	default:
		return d, true
	}
	return "", false
}

func (s *Server) hasShared() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.shared
}

// sharedRoot answers files.get of the shared drive's id: its root folder.
func (s *Server) sharedRoot(w http.ResponseWriter, r *http.Request) bool {
	if !s.hasShared() {
		return false
	}
	if !allDrives(r) {
		vendorfake.GoogleError(w, 404, "notFound", "File not found: "+SharedDriveID+".")
		return true
	}
	s.JSON(w, 200, "File", map[string]any{"kind": "drive#file", "id": SharedDriveID, "name": SharedDriveName, "mimeType": FolderType, "driveId": SharedDriveID})
	return true
}
