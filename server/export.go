package server

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"time"

	"google.golang.org/protobuf/types/known/structpb"

	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/platform/archive"
	"svc.dev/svc/platform/job"
	"svc.dev/svc/server/internal/rpc"
)

const (
	// exportsDir holds finished export archives, under the data directory.
	exportsDir = "exports"
	// exportURLTTL is how long a download URL served in a job's result stays valid; reading
	// the job again gives a new one (until the archive itself expires).
	exportURLTTL = time.Hour
)

// exportAccount starts an export job of everything the signed-in account owns (spec #7).
func (s *Server) exportAccount(ctx context.Context, _ *svcv1.ExportAccountRequest) (*svcv1.Job, error) {
	c := rpc.From(ctx)
	u := c.User
	if u.Status == statusDeleting {
		return nil, rpc.NewProblem(http.StatusConflict, rpc.CodeInvalidState, "The account is being deleted; cancel the deletion job to export it.")
	}
	tenant := c.Tenant.String()
	// One export at a time per tenant: asking while one is queued or running answers that one.
	s.exportMu.Lock()
	defer s.exportMu.Unlock()
	page, err := s.jobs.List(ctx, tenant, "", 1, func(j *svcv1.Job) bool {
		return j.GetKind() == svcv1.JobKind_JOB_KIND_EXPORT &&
			(j.GetStatus() == svcv1.JobStatus_JOB_STATUS_QUEUED || j.GetStatus() == svcv1.JobStatus_JOB_STATUS_RUNNING)
	})
	if err != nil {
		return nil, err
	}
	if len(page.Items) > 0 {
		return page.Items[0], nil
	}
	if err := s.exports.CheckQuota(ctx, u.ID); err != nil {
		return nil, err
	}
	j, err := s.jobRunner.Create(ctx, tenant, svcv1.JobKind_JOB_KIND_EXPORT)
	if err != nil {
		return nil, err
	}
	s.jobRunner.Go(tenant, j.GetId(), func(ctx context.Context, p *job.Progress) (map[string]any, error) {
		return s.writeExport(ctx, u.ID, j.GetId(), p)
	})
	return j, nil
}

// writeExport writes the archive of a user's account for an export job.
func (s *Server) writeExport(ctx context.Context, userID, jobID string, p *job.Progress) (map[string]any, error) {
	u, err := s.accounts.User(ctx, userID)
	if err != nil {
		return nil, err
	}
	acct, err := s.platformAPI.Account(ctx, u)
	if err != nil {
		return nil, err
	}
	return s.exports.Write(ctx, userID, jobID, acct, p)
}

// addDownloadURL puts a signed, expiring download URL into a finished export's result while
// its archive is kept.
func (s *Server) addDownloadURL(ctx context.Context, j *svcv1.Job) {
	fields := j.GetResult().GetFields()
	exp, err := time.Parse(time.RFC3339, fields["expires_at"].GetStringValue())
	if err != nil {
		return
	}
	now := s.cfg.Now()
	_, gone := os.Stat(s.exports.Path(j.GetId()))
	if !now.Before(exp) || gone != nil { // expired, or replaced by a newer export
		j.Result.Fields["url"] = structpb.NewNullValue()
		return
	}
	until := now.Add(exportURLTTL)
	if until.After(exp) {
		until = exp
	}
	q := url.Values{"expires": {strconv.FormatInt(until.Unix(), 10)}, "sig": {s.exportSig(j.GetId(), until.Unix())}}
	j.Result.Fields["url"] = structpb.NewStringValue(s.publicBase(rpc.HTTPRequest(ctx)) + "/v1/exports/" + j.GetId() + "/archive?" + q.Encode())
	j.Result.Fields["url_expires_at"] = structpb.NewStringValue(until.UTC().Format(time.RFC3339))
}

// exportSig authenticates a download URL: HMAC-SHA256 over the job id and expiry.
func (s *Server) exportSig(jobID string, expires int64) string {
	m := hmac.New(sha256.New, s.exportKey)
	m.Write([]byte("svc/export-url/v1\x00" + jobID + "\x00" + strconv.FormatInt(expires, 10)))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// serveExport streams an export archive to whoever holds a valid, unexpired download URL,
// with Range, If-Range and ETag (the archive's SHA-256), so a broken download resumes.
func (s *Server) serveExport(w http.ResponseWriter, r *http.Request) {
	if !s.rateHeaders(w, r) {
		return
	}
	rid := rpc.RequestID(r.Context())
	jobID := r.PathValue("id")
	expires, err := strconv.ParseInt(r.URL.Query().Get("expires"), 10, 64)
	denied := rpc.NewProblem(http.StatusForbidden, rpc.CodeForbidden, "The download URL is not valid or has expired; read the export job again for a new one.")
	if err != nil || !hmac.Equal([]byte(r.URL.Query().Get("sig")), []byte(s.exportSig(jobID, expires))) ||
		!s.cfg.Now().Before(time.Unix(expires, 0)) {
		rpc.Write(w, rid, denied)
		return
	}
	f, err := os.Open(s.exports.Path(jobID))
	if errors.Is(err, fs.ErrNotExist) {
		rpc.Write(w, rid, rpc.NewProblem(http.StatusNotFound, rpc.CodeNotFound, "The export archive is no longer kept."))
		return
	}
	if err != nil {
		s.log.Error("open export", "job_id", jobID, "err", err)
		rpc.Write(w, rid, rpc.NewProblem(http.StatusInternalServerError, rpc.CodeInternal, "The archive could not be read."))
		return
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		rpc.Write(w, rid, rpc.NewProblem(http.StatusInternalServerError, rpc.CodeInternal, "The archive could not be read."))
		return
	}
	// Archives are sealed at rest; one written before they were is served as it is.
	var content io.ReadSeeker = f
	head := make([]byte, 8)
	if n, _ := f.ReadAt(head, 0); archive.IsSealed(head[:n]) {
		sr, err := archive.OpenSealed(f, st.Size(), s.exports.Key, jobID)
		if err != nil {
			s.log.Error("open sealed export", "job_id", jobID, "err", err)
			rpc.Write(w, rid, rpc.NewProblem(http.StatusInternalServerError, rpc.CodeInternal, "The archive could not be read."))
			return
		}
		content = sr
	}
	w.Header().Set("Content-Type", "application/gzip")
	w.Header().Set("Content-Disposition", `attachment; filename="svc-export-`+jobID+`.tar.gz"`)
	w.Header().Set("ETag", `"`+jobID+`"`)
	w.Header().Set("Cache-Control", "private, no-store")
	http.ServeContent(w, r, "", st.ModTime(), content)
}
