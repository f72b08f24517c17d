package gdrive

import (
	"context"
	"crypto/md5"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"regexp"
	"strings"
	"unicode"

	dr "google.golang.org/api/drive/v3"
	"google.golang.org/api/googleapi"

	"svc.dev/svc/providers"
)

// DefaultUploadChunk is the size of a resumable upload's chunks (config
// upload_chunk_bytes): content up to it is sent in one multipart request,
// larger content through a resumable upload session in chunks of it. Drive
// wants chunks in multiples of 256 KiB and advises resumable uploads for
// files over 5 MB.
const DefaultUploadChunk = 8 << 20

// fileID matches what a Drive file id looks like; a restore whose path is
// one is a restore to the file's original place (svc's engine names that
// place by the object id).
var fileID = regexp.MustCompile(`^[A-Za-z0-9_-]{25,}$`)

// Write stores content in My Drive at req.Path ("Archive/2024/report.pdf"),
// creating the folders on the way. The content is spooled to a temporary
// file and its size and SHA-256 checked before anything is sent (a mismatch
// sends nothing). Up to the upload chunk size it goes in one multipart
// upload; larger content goes through a resumable upload session, chunk by
// chunk (each chunk retried on its own). The stored file's size and
// checksum are checked against what was sent; a file svc created that does
// not match is deleted. Without Overwrite an existing file of that name in
// that folder is ErrAlreadyExists; with it, the content becomes the file's
// new head revision. Every request that creates or changes a file waits on
// the write pacing.
//
// A restore whose path is a file id (the engine's original place) takes the
// file out of the trash and checks that its content is the content given.
func (p *Provider) Write(ctx context.Context, req providers.WriteRequest, body io.Reader) (providers.Object, error) {
	drive, err := driveOf(req.SourceRef)
	if err != nil {
		return providers.Object{}, err
	}
	if req.Mode == providers.WriteRestore && fileID.MatchString(req.Path) {
		return p.restoreByID(ctx, req, body)
	}
	segs, err := splitPath(req.Path)
	if err != nil {
		return providers.Object{}, fail("write", req.Path, err)
	}
	spool, err := os.CreateTemp("", "svc-gdrive-upload-*")
	if err != nil {
		return providers.Object{}, fail("write", req.Path, err)
	}
	defer os.Remove(spool.Name())
	defer spool.Close()
	sum, md := sha256.New(), md5.New()
	n, err := io.Copy(io.MultiWriter(spool, sum, md), body)
	if err != nil {
		return providers.Object{}, fail("write", req.Path, fmt.Errorf("read content: %w", err))
	}
	digest, md5sum := hex.EncodeToString(sum.Sum(nil)), hex.EncodeToString(md.Sum(nil))
	switch {
	case req.SizeBytes >= 0 && n != req.SizeBytes:
		return providers.Object{}, fail("write", req.Path, fmt.Errorf("%d bytes, expected %d: %w", n, req.SizeBytes, providers.ErrInvalidData))
	case req.SHA256 != "" && digest != req.SHA256:
		return providers.Object{}, fail("write", req.Path, fmt.Errorf("content does not match its sha256: %w", providers.ErrInvalidData))
	}
	parent := "root"
	if drive != "" {
		parent = drive // a shared drive's id is its root folder's
	}
	for _, name := range segs[:len(segs)-1] {
		if parent, err = p.folder(ctx, drive, parent, name); err != nil {
			return providers.Object{}, fail("write", req.Path, err)
		}
	}
	name := segs[len(segs)-1]
	existing, err := p.child(ctx, drive, parent, name, false)
	if err != nil {
		return providers.Object{}, fail("write", req.Path, err)
	}
	if existing != "" && !req.Overwrite {
		return providers.Object{}, fail("write", req.Path, fmt.Errorf("a file of that name is there: %w", providers.ErrAlreadyExists))
	}
	if _, err := spool.Seek(0, io.SeekStart); err != nil {
		return providers.Object{}, fail("write", req.Path, err)
	}
	mime := req.MIMEType
	if mime == "" {
		mime = "application/octet-stream"
	}
	media := []googleapi.MediaOption{googleapi.ChunkSize(p.chunk), googleapi.ContentType(mime)}
	if err := p.wait(ctx); err != nil {
		return providers.Object{}, fail("write", req.Path, err)
	}
	var f *dr.File
	if existing != "" {
		f, err = p.svc.Files.Update(existing, &dr.File{}).SupportsAllDrives(true).Media(spool, media...).Fields(googleapi.Field(fileFields)).Context(ctx).Do()
	} else {
		f, err = p.svc.Files.Create(&dr.File{Name: name, Parents: []string{parent}, MimeType: mime}).SupportsAllDrives(true).Media(spool, media...).
			Fields(googleapi.Field(fileFields)).Context(ctx).Do()
	}
	if err != nil {
		return providers.Object{}, fail("write", req.Path, err)
	}
	if f.Size != n || (f.Sha256Checksum != "" && strings.ToLower(f.Sha256Checksum) != digest) ||
		(f.Sha256Checksum == "" && f.Md5Checksum != "" && strings.ToLower(f.Md5Checksum) != md5sum) {
		if existing == "" {
			// svc's own new file: nothing else refers to it.
			_ = p.svc.Files.Delete(f.Id).SupportsAllDrives(true).Context(context.WithoutCancel(ctx)).Do()
		}
		return providers.Object{}, fail("write", req.Path, fmt.Errorf("stored content (%d bytes) differs from what was sent (%d bytes): %w", f.Size, n, providers.ErrInvalidData))
	}
	o, err := p.object(ctx, f)
	if err != nil {
		return providers.Object{}, fail("write", req.Path, err)
	}
	o.SHA256 = digest
	return o, nil
}

// splitPath checks a destination path and returns its segments.
func splitPath(p string) ([]string, error) {
	clean := path.Clean("/" + p)
	if p == "" || clean == "/" || clean != "/"+strings.TrimPrefix(p, "/") || strings.ContainsFunc(p, unicode.IsControl) {
		return nil, fmt.Errorf("path %q: %w", p, providers.ErrInvalidArgument)
	}
	return strings.Split(strings.Trim(clean, "/"), "/"), nil
}

// wait waits for the write pacing.
func (p *Provider) wait(ctx context.Context) error {
	if p.writes == nil {
		return nil
	}
	return p.writes.Wait(ctx)
}

// quote quotes a string for Drive's query language.
func quote(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(s) + "'"
}

// child returns the id of the folder (folder true) or file named name in
// parent (in My Drive, drive "", or a shared drive), not trashed, or ""
// when there is none.
func (p *Provider) child(ctx context.Context, drive, parent, name string, folder bool) (string, error) {
	op := "!="
	if folder {
		op = "="
	}
	res, err := p.files(drive).Q(quote(parent) + " in parents and name = " + quote(name) + " and mimeType " + op + " '" + folderType + "' and trashed = false").
		PageSize(10).Fields("files(id)").Context(ctx).Do()
	if err != nil {
		return "", err
	}
	if len(res.Files) == 0 {
		return "", nil
	}
	return res.Files[0].Id, nil
}

// folder returns the id of the folder named name in parent, creating it
// when there is none.
func (p *Provider) folder(ctx context.Context, drive, parent, name string) (string, error) {
	id, err := p.child(ctx, drive, parent, name, true)
	if err != nil || id != "" {
		return id, err
	}
	if err := p.wait(ctx); err != nil {
		return "", err
	}
	f, err := p.svc.Files.Create(&dr.File{Name: name, Parents: []string{parent}, MimeType: folderType}).SupportsAllDrives(true).Fields("id").Context(ctx).Do()
	if err != nil {
		return "", fmt.Errorf("create folder %q: %w", name, err)
	}
	return f.Id, nil
}

// restoreByID is Write of a restore to a file's original place: the file is
// taken out of the trash (if it is there) and must hold the content given.
// A file deleted for good cannot be put back where it was (its folder went
// with it): that is ErrNotFound, and the content stays where the caller has
// it.
func (p *Provider) restoreByID(ctx context.Context, req providers.WriteRequest, body io.Reader) (providers.Object, error) {
	sum, md := sha256.New(), md5.New()
	n, err := io.Copy(io.MultiWriter(sum, md), body)
	if err != nil {
		return providers.Object{}, fail("write", req.Path, fmt.Errorf("read content: %w", err))
	}
	digest := hex.EncodeToString(sum.Sum(nil))
	if (req.SizeBytes >= 0 && n != req.SizeBytes) || (req.SHA256 != "" && digest != req.SHA256) {
		return providers.Object{}, fail("write", req.Path, fmt.Errorf("content does not match its size or sha256: %w", providers.ErrInvalidData))
	}
	f, err := p.meta(ctx, req.Path)
	if err == nil && f.Trashed {
		f, err = p.setTrashed(ctx, req.Path, false)
	}
	if err != nil {
		err = fail("write", req.Path, err)
		if errors.Is(err, providers.ErrNotFound) {
			return providers.Object{}, fmt.Errorf("%w (deleted for good: restore it to a destination)", err)
		}
		return providers.Object{}, err
	}
	if _, doc := exportOf(f); doc {
		// A Google Docs editors file: the content given is an export of it, and exports
		// are not byte-stable, so there is nothing to compare; the document itself is
		// back, which is more than its export.
	} else if f.Size != n || (f.Sha256Checksum != "" && strings.ToLower(f.Sha256Checksum) != digest) ||
		(f.Sha256Checksum == "" && f.Md5Checksum != "" && strings.ToLower(f.Md5Checksum) != hex.EncodeToString(md.Sum(nil))) {
		return providers.Object{}, fail("write", req.Path, fmt.Errorf("the file at its original place is not the content to restore: %w", providers.ErrAlreadyExists))
	}
	o, err := p.object(ctx, f)
	if err != nil {
		return providers.Object{}, fail("write", req.Path, err)
	}
	o.SHA256 = digest
	return o, nil
}
