package dropbox

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path"
	"strings"

	"svc.dev/svc/providers"
	"svc.dev/svc/providers/contenthash"
)

// Upload sizes.
const (
	// ChunkUnit is what every upload-session chunk but the last is a
	// multiple of (Dropbox requires multiples of 4 MiB).
	ChunkUnit = 4 << 20
	// DefaultChunk is the default upload_chunk_bytes: content up to it goes
	// in one files/upload, larger content through an upload session in
	// chunks of it.
	DefaultChunk = 48 << 20
	// MaxChunk is the largest upload_chunk_bytes: one request carries at
	// most 150 MiB.
	MaxChunk = 148 << 20
	// maxResumes bounds how often one upload session is resumed at the
	// offset Dropbox reports, or started again after it was lost.
	maxResumes = 5
)

// Write implements providers.Writer.
func (p *Provider) Write(ctx context.Context, req providers.WriteRequest, body io.Reader) (providers.Object, error) {
	clean := path.Clean("/" + req.Path)
	if req.Path == "" || clean == "/" || strings.Contains(req.Path, "\x00") || clean != "/"+strings.TrimPrefix(req.Path, "/") {
		return providers.Object{}, p.err("write", req.Path, fmt.Errorf("path %q: %w", req.Path, providers.ErrInvalidArgument))
	}
	dest := p.root + clean
	if req.Mode == providers.WriteRestore && strings.HasPrefix(req.Path, "/") {
		dest = clean // an object's id: its whole path, root included
	}
	f, err := os.CreateTemp("", "svc-dropbox-upload-*")
	if err != nil {
		return providers.Object{}, p.err("write", req.Path, err)
	}
	defer os.Remove(f.Name())
	defer f.Close()
	sum, hash := sha256.New(), contenthash.NewDropbox()
	n, err := io.Copy(io.MultiWriter(f, sum, hash), body)
	if err != nil {
		return providers.Object{}, p.err("write", req.Path, fmt.Errorf("read content: %w", err))
	}
	switch {
	case req.SizeBytes >= 0 && n != req.SizeBytes:
		return providers.Object{}, p.err("write", req.Path, fmt.Errorf("%d bytes, expected %d: %w", n, req.SizeBytes, providers.ErrInvalidData))
	case req.SHA256 != "" && hex.EncodeToString(sum.Sum(nil)) != req.SHA256:
		return providers.Object{}, p.err("write", req.Path, fmt.Errorf("content does not match its sha256: %w", providers.ErrInvalidData))
	}
	contentHash := hex.EncodeToString(hash.Sum(nil))
	if req.Mode == providers.WriteRestore {
		// A restore to the original place names the file by its id, its
		// lower-case path: put it back under the path as it was displayed.
		var gone metadata
		if err := p.call(ctx, "files/get_metadata", map[string]any{"path": dest, "include_deleted": true}, &gone); err == nil &&
			gone.Tag == "deleted" && strings.EqualFold(gone.PathDisplay, dest) {
			dest = gone.PathDisplay
		}
	}
	commit := commitInfo{Path: dest, Mode: "add", Mute: true}
	if req.Overwrite {
		commit.Mode = "overwrite"
	}
	var m metadata
	if n <= p.chunk {
		err = p.upload(ctx, f, n, commit, contentHash, &m)
	} else {
		err = p.uploadSession(ctx, f, n, commit, &m)
	}
	if err != nil {
		return providers.Object{}, p.err("write", req.Path, err)
	}
	if m.ContentHash != contentHash || m.Size != n {
		return providers.Object{}, p.err("write", req.Path, fmt.Errorf("stored content differs from what was sent: %w", providers.ErrInvalidData))
	}
	o := object(&m)
	o.SHA256 = hex.EncodeToString(sum.Sum(nil))
	return o, nil
}

// commitInfo is the API's CommitInfo: where and how an upload is saved.
type commitInfo struct {
	Path           string `json:"path"`
	Mode           string `json:"mode"`
	Autorename     bool   `json:"autorename"`
	Mute           bool   `json:"mute"`
	StrictConflict bool   `json:"strict_conflict"`
}

// cursor is an UploadSessionCursor: a session and how much of the content
// it holds.
type cursor struct {
	SessionID string `json:"session_id"`
	Offset    int64  `json:"offset"`
}

// upload sends content of n bytes in one files/upload with its
// content_hash, which Dropbox checks on arrival.
func (p *Provider) upload(ctx context.Context, f *os.File, n int64, commit commitInfo, contentHash string, out *metadata) error {
	arg := struct {
		commitInfo
		ContentHash string `json:"content_hash"`
	}{commit, contentHash}
	return p.send(ctx, "files/upload", arg, f, 0, n, out)
}

// uploadSession sends content of n bytes through an upload session:
// upload_session/start, then each chunk with append_v2 (the last one
// closing the session), then finish with the commit. Every chunk carries
// its own content_hash, which Dropbox checks on arrival (the API's
// content_hash on these routes covers the data of the call, not the
// file); the stored file's hash is checked by the caller.
//
// An append is safe to send again at the same offset: if the first one
// arrived, Dropbox answers incorrect_offset with the offset it holds, and
// the upload goes on from there, so vendorhttp resends appends after a 5xx
// or a dropped connection. A session Dropbox no longer knows (not_found:
// sessions last 7 days) is started again from the beginning.
func (p *Provider) uploadSession(ctx context.Context, f *os.File, n int64, commit commitInfo, out *metadata) error {
	var (
		cur     cursor
		resumes int
	)
	start := func() error {
		var res struct {
			SessionID string `json:"session_id"`
		}
		if err := p.send(ctx, "files/upload_session/start", map[string]any{"close": false}, f, 0, 0, &res); err != nil {
			return err
		}
		if res.SessionID == "" {
			return fmt.Errorf("files/upload_session/start: no session_id: %w", providers.ErrTransient)
		}
		cur = cursor{SessionID: res.SessionID}
		return nil
	}
	if err := start(); err != nil {
		return err
	}
	for cur.Offset < n {
		size := min(p.chunk, n-cur.Offset)
		last := cur.Offset+size == n
		h := contenthash.NewDropbox()
		if _, err := io.Copy(h, io.NewSectionReader(f, cur.Offset, size)); err != nil {
			return fmt.Errorf("read content: %w", err)
		}
		arg := map[string]any{"cursor": cur, "close": last, "content_hash": hex.EncodeToString(h.Sum(nil))}
		err := p.send(ctx, "files/upload_session/append_v2", arg, f, cur.Offset, size, nil)
		var re *routeErr
		switch {
		case err == nil:
			cur.Offset += size
			continue
		case !errors.As(err, &re) || resumes >= maxResumes:
			return err
		}
		resumes++
		switch tag, detail := re.tag(); tag {
		case "incorrect_offset":
			// The session holds a different amount than this chunk's
			// offset (an earlier send arrived though its answer was lost):
			// go on from what it holds.
			var off struct {
				Correct *int64 `json:"correct_offset"`
			}
			if json.Unmarshal(detail, &off) != nil || off.Correct == nil || *off.Correct < 0 || *off.Correct > n {
				return err
			}
			cur.Offset = *off.Correct
		case "closed":
			// Only the last chunk closes the session: it arrived, and the
			// session holds the whole content (finish checks the offset).
			if !last {
				return err
			}
			cur.Offset = n
		case "not_found":
			if err := start(); err != nil {
				return err
			}
		default:
			return err
		}
	}
	arg := map[string]any{"cursor": cur, "commit": commit}
	return p.send(ctx, "files/upload_session/finish", arg, f, 0, 0, out)
}

// send posts n bytes of f from off to a content route, with the argument
// in the Dropbox-API-Arg header, and decodes the result into out (nil: the
// route answers null).
func (p *Provider) send(ctx context.Context, route string, arg any, f *os.File, off, n int64, out any) error {
	b, err := json.Marshal(arg)
	if err != nil {
		return fmt.Errorf("%s: %w", route, err)
	}
	body := func() io.ReadCloser { return io.NopCloser(io.NewSectionReader(f, off, n)) }
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, p.content+"/2/"+route, body())
	if err != nil {
		return fmt.Errorf("%s: %w", route, providers.ErrInvalidArgument)
	}
	hreq.ContentLength = n
	if n == 0 {
		hreq.Body = http.NoBody
	}
	hreq.GetBody = func() (io.ReadCloser, error) { return body(), nil }
	hreq.Header.Set("Dropbox-API-Arg", asciiJSON(b))
	hreq.Header.Set("Content-Type", "application/octet-stream")
	resp, err := p.http.Do(hreq)
	if err != nil {
		return transportError(route, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return routeError(route, resp)
	}
	if out == nil {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<10))
		return nil
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(out); err != nil {
		return fmt.Errorf("%s: decode: %v: %w", route, err, providers.ErrTransient)
	}
	return nil
}
