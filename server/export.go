package server

import (
	"cmp"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"iter"
	"net/http"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"svc.dev/svc"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/manifest"
	"svc.dev/svc/platform"
	"svc.dev/svc/platform/archive"
	"svc.dev/svc/platform/job"
	"svc.dev/svc/storage"
	"svc.dev/svc/vault"
	"svc.dev/svc/wire"
)

const (
	// exportsDir holds finished export archives, under the data directory.
	exportsDir = "exports"
	// ExportRetention is how long an export archive can be downloaded after it was written.
	ExportRetention = 7 * 24 * time.Hour
	// exportURLTTL is how long a download URL served in a job's result stays valid; reading
	// the job again gives a new one (until the archive itself expires).
	exportURLTTL = time.Hour
)

// exportAccount starts an export job of everything the signed-in account owns (spec #7).
func (s *Server) exportAccount(ctx context.Context, _ *svcv1.ExportAccountRequest) (*svcv1.Job, error) {
	c := callerFrom(ctx)
	u := c.User
	if u.Status == statusDeleting {
		return nil, newProblem(http.StatusConflict, codeInvalidState, "The account is being deleted; cancel the deletion job to export it.")
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
	j, err := s.jobRunner.Create(ctx, tenant, svcv1.JobKind_JOB_KIND_EXPORT)
	if err != nil {
		return nil, err
	}
	s.jobRunner.Go(tenant, j.GetId(), func(ctx context.Context, p *job.Progress) (map[string]any, error) {
		return s.writeExport(ctx, u.ID, j.GetId(), p)
	})
	return j, nil
}

// exportPath is where a job's archive is kept.
func (s *Server) exportPath(jobID string) string {
	return filepath.Join(s.cfg.DataDir, exportsDir, jobID+".tar.gz")
}

// exportCounter counts the archive's bytes and hashes them as they are written.
type exportCounter struct {
	w io.Writer
	n int64
	h interface {
		io.Writer
		Sum([]byte) []byte
	}
}

func (c *exportCounter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	c.h.Write(p[:n])
	return n, err
}

// writeExport writes the archive of a user's account: account.json, then for each of the
// user's tenants (live, test) every resource as the API serves it, receipts as their exact
// signed bytes, the manifest bundle, the vault objects with their content, and last
// index.json. One resource or one content stream is in memory at a time.
func (s *Server) writeExport(ctx context.Context, userID, jobID string, p *job.Progress) (map[string]any, error) {
	dir := filepath.Join(s.cfg.DataDir, exportsDir)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("export dir: %w", err)
	}
	f, err := os.CreateTemp(dir, ".partial-"+jobID+"-")
	if err != nil {
		return nil, fmt.Errorf("export file: %w", err)
	}
	// The sweep (purgeExports) leaves the archive of an export in progress alone.
	s.exportsInProgress.Store(filepath.Base(f.Name()), true)
	defer s.exportsInProgress.Delete(filepath.Base(f.Name()))
	defer os.Remove(f.Name())
	defer f.Close()
	now := s.cfg.Now()
	// Sealed at rest (archive.SealedWriter): the archive holds the account's content in full.
	sw, err := archive.NewSealedWriter(f, s.archiveKey, jobID)
	if err != nil {
		return nil, err
	}
	cw := &exportCounter{w: sw, h: sha256.New()} // the size and SHA-256 of what is downloaded
	aw := archive.NewWriter(cw, now)
	x := &exporter{s: s, aw: aw, p: p}
	if err := x.plan(ctx, userID); err != nil {
		return nil, err
	}
	u, err := s.accounts.User(ctx, userID)
	if err != nil {
		return nil, err
	}
	acct, err := s.account(ctx, u)
	if err != nil {
		return nil, err
	}
	if err := x.json("account.json", acct); err != nil {
		return nil, err
	}
	for _, mode := range []platform.Mode{platform.ModeLive, platform.ModeTest} {
		if err := x.tenant(ctx, platform.Tenant{Owner: userID, Mode: mode}); err != nil {
			return nil, err
		}
	}
	if err := aw.Close(); err != nil {
		return nil, fmt.Errorf("export: %w", err)
	}
	if err := sw.Close(); err != nil {
		return nil, fmt.Errorf("export: %w", err)
	}
	if err := f.Sync(); err != nil {
		return nil, fmt.Errorf("export: %w", err)
	}
	if err := f.Close(); err != nil {
		return nil, fmt.Errorf("export: %w", err)
	}
	if err := os.Rename(f.Name(), s.exportPath(jobID)); err != nil {
		return nil, fmt.Errorf("export: %w", err)
	}
	s.removeEarlierExports(ctx, userID, jobID)
	return map[string]any{
		"format":                      archive.Format,
		"media_type":                  "application/gzip",
		"file_name":                   "svc-export-" + jobID + ".tar.gz",
		"size_bytes":                  cw.n,
		"sha256":                      hex.EncodeToString(cw.h.Sum(nil)),
		"files":                       aw.Files() + 1,
		"expires_at":                  now.Add(ExportRetention).UTC().Format(time.RFC3339),
		"objects_failed_verification": failedIDs(x.failed),
	}, nil
}

// exporter writes one archive and reports progress: every resource counts 1, every 64 KiB of
// vault content counts 1.
type exporter struct {
	s          *Server
	aw         *archive.Writer
	p          *job.Progress
	total      int64
	done       int64
	contentFor map[string]bool // archive paths used by vault content
	failed     []failedObject  // objects left out: their content failed verification
}

const exportByteUnit = 64 << 10

// plan counts the work for progress.
func (x *exporter) plan(ctx context.Context, userID string) error {
	x.total = 1
	for _, mode := range []platform.Mode{platform.ModeLive, platform.ModeTest} {
		t := platform.Tenant{Owner: userID, Mode: mode}.String()
		for _, count := range []func(context.Context, string) (int, error){
			countOf(x.s.planHeaders), countOf(x.s.executions), countOf(x.s.sources), countOf(x.s.destinations),
			countOf(x.s.jobs), countOf(x.s.eventLog), countOf(x.s.manifests),
		} {
			n, err := count(ctx, t)
			if err != nil {
				return err
			}
			x.total += int64(n)
		}
		err := svc.EachVaultObject(ctx, x.s.vault, t, func(o vault.Object) error {
			x.total += 1 + o.SizeBytes/exportByteUnit
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

func countOf[T proto.Message](c storage.Records[T]) func(context.Context, string) (int, error) {
	return func(ctx context.Context, tenant string) (int, error) { return c.Count(ctx, tenant, nil) }
}

func (x *exporter) step(ctx context.Context, units int64) {
	x.done += units
	x.p.Fraction(ctx, x.done, x.total)
}

func (x *exporter) json(name string, m proto.Message) error {
	data, err := wire.Marshal(m)
	if err != nil {
		return fmt.Errorf("export %s: %w", name, err)
	}
	return x.aw.AddBytes(name, data)
}

// resources writes every resource of a collection as dir/<id>.json.
func exportResources[T proto.Message](ctx context.Context, x *exporter, c storage.Records[T], tenant, dir string, idOf func(T) string) error {
	for m, err := range c.All(ctx, tenant, nil) {
		if err != nil {
			return err
		}
		if err := x.json(dir+"/"+archive.CleanName(idOf(m))+".json", m); err != nil {
			return err
		}
		x.step(ctx, 1)
	}
	return nil
}

// plans writes every plan of a tenant as dir/<id>.json, whole, as GET /v1/plans/{id} serves
// it: streamed from the store twice (planStore), once to measure it (an archive entry's size
// comes first) and once into the archive, so a plan of any size costs one chunk of memory.
func (x *exporter) plans(ctx context.Context, tenant, dir string) error {
	chunks := func(ctx context.Context, planID string) iter.Seq2[[]*svcv1.PlanObject, error] {
		return x.s.plans.Objects(ctx, tenant, planID)
	}
	for h, err := range x.s.planHeaders.All(ctx, tenant, nil) {
		if err != nil {
			return err
		}
		var size countingWriter
		if err := writePlansJSON(ctx, chunks, &size, h, []*svcv1.Plan{h}); err != nil {
			return fmt.Errorf("export plan %s: %w", h.PlanId, err)
		}
		pr, pw := io.Pipe()
		go func() { pw.CloseWithError(writePlansJSON(ctx, chunks, pw, h, []*svcv1.Plan{h})) }()
		err := x.aw.Add(dir+"/"+archive.CleanName(h.PlanId)+".json", int64(size), pr)
		pr.CloseWithError(io.ErrClosedPipe) // ends the writer if Add stopped early
		if err != nil {
			return fmt.Errorf("export plan %s: %w", h.PlanId, err)
		}
		x.step(ctx, 1)
	}
	return nil
}

// countingWriter counts what is written to it.
type countingWriter int64

func (c *countingWriter) Write(p []byte) (int, error) {
	*c += countingWriter(len(p))
	return len(p), nil
}

func (x *exporter) tenant(ctx context.Context, t platform.Tenant) error {
	s, tenant, root := x.s, t.String(), string(t.Mode)
	if err := x.plans(ctx, tenant, root+"/plans"); err != nil {
		return err
	}
	if err := exportResources(ctx, x, s.sources, tenant, root+"/sources", (*svcv1.Source).GetId); err != nil {
		return err
	}
	if err := exportResources(ctx, x, s.destinations, tenant, root+"/destinations", (*svcv1.Destination).GetDestinationId); err != nil {
		return err
	}
	if err := exportResources(ctx, x, s.jobs, tenant, root+"/jobs", (*svcv1.Job).GetId); err != nil {
		return err
	}
	if err := exportResources(ctx, x, s.eventLog, tenant, root+"/events", (*svcv1.Event).GetId); err != nil {
		return err
	}
	// Executions, each followed by its receipt's exact signed bytes.
	for e, err := range s.executions.All(ctx, tenant, nil) {
		if err != nil {
			return err
		}
		if err := x.json(root+"/executions/"+archive.CleanName(e.GetId())+".json", e); err != nil {
			return err
		}
		if rid := e.GetReceiptId(); rid != "" {
			raw, err := s.store.Receipts().Get(ctx, tenant, rid)
			if err != nil && !errors.Is(err, storage.ErrNotFound) {
				return err
			}
			if err == nil {
				if err := x.aw.AddBytes(root+"/receipts/"+archive.CleanName(rid)+".json", raw); err != nil {
					return err
				}
			}
		}
		x.step(ctx, 1)
	}
	conns, err := s.devs.ConnectionsOfUser(ctx, t.Owner)
	if err != nil {
		return err
	}
	for _, c := range conns {
		if c.Mode == t.Mode {
			if err := x.json(root+"/connections/"+archive.CleanName(c.ID)+".json", connectionProto(c)); err != nil {
				return err
			}
		}
	}
	if err := x.manifestBundle(ctx, tenant, root); err != nil {
		return err
	}
	return x.vaultContent(ctx, tenant, root)
}

// manifestBundle writes the tenant's manifest bundle, streamed through a temporary file (a
// tar entry's size comes before its bytes).
func (x *exporter) manifestBundle(ctx context.Context, tenant, root string) error {
	s := x.s
	n, err := s.manifests.Count(ctx, tenant, nil)
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Join(s.cfg.DataDir, exportsDir), ".bundle-")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	defer tmp.Close()
	head := manifest.BundleHeader{TenantRef: tenant, GeneratedAt: s.cfg.Now().UTC(), Count: int64(n)}
	seq := func(yield func(*svcv1.Manifest, error) bool) {
		i := 0
		for m, err := range s.manifests.All(ctx, tenant, nil) {
			if i == n && err == nil {
				return
			}
			i++
			if !yield(m, err) {
				return
			}
		}
	}
	if _, err := manifest.WriteBundle(tmp, head, iter.Seq2[*svcv1.Manifest, error](seq)); err != nil {
		return fmt.Errorf("export manifests: %w", err)
	}
	size, err := tmp.Seek(0, io.SeekCurrent)
	if err != nil {
		return err
	}
	if _, err := tmp.Seek(0, io.SeekStart); err != nil {
		return err
	}
	if err := x.aw.Add(root+"/manifests/bundle.json", size, tmp); err != nil {
		return err
	}
	x.step(ctx, int64(n))
	return nil
}

// vaultContent writes each vault object's record, and the content of every readable one
// under the path its manifest gives at its source: root/vault/content/<source>/<path>.
func (x *exporter) vaultContent(ctx context.Context, tenant, root string) error {
	s := x.s
	if x.contentFor == nil {
		x.contentFor = map[string]bool{}
	}
	before := len(x.failed)
	err := svc.EachVaultObject(ctx, s.vault, tenant, func(o vault.Object) error {
		if err := x.json(root+"/vault/objects/"+archive.CleanName(o.ID)+".json", o.Proto()); err != nil {
			return err
		}
		if o.State == vault.StateCommitted || o.State == vault.StateCold {
			if err := x.object(ctx, tenant, root, o); err != nil {
				return err
			}
		}
		x.step(ctx, 1+o.SizeBytes/exportByteUnit)
		return nil
	})
	if err != nil || len(x.failed) == before {
		return err
	}
	data, err := json.Marshal(map[string]any{"failed_verification": x.failed[before:]})
	if err != nil {
		return err
	}
	return x.aw.AddBytes(root+"/vault/failed-verification.json", data)
}

// object writes one object's content, read to its end and verified before any of it enters
// the archive (vault.Spool): content that fails verification (it is then marked corrupt) is
// left out and named in the tenant's vault/failed-verification.json and the job's result,
// and the export goes on.
func (x *exporter) object(ctx context.Context, tenant, root string, o vault.Object) error {
	name := x.contentName(ctx, tenant, root, o)
	sp, err := x.s.vault.Spool(ctx, tenant, o.ID, filepath.Join(x.s.cfg.DataDir, exportsDir))
	if errors.Is(err, vault.ErrInvalidData) {
		x.failed = append(x.failed, failedObject{ID: o.ID, Tenant: tenant, Path: name})
		return nil
	}
	if err != nil {
		return fmt.Errorf("export %s: %w", o.ID, err)
	}
	defer sp.Close()
	if err := x.aw.Add(name, sp.Object.SizeBytes, sp); err != nil {
		return fmt.Errorf("export %s: %w", o.ID, err)
	}
	return nil
}

// failedObject is a vault object whose content failed verification during an export.
type failedObject struct {
	ID     string `json:"vault_object_id"`
	Tenant string `json:"-"`
	Path   string `json:"path"`
}

// contentName is the archive path of an object's content: its source, then the path (or
// containers and name) its manifest records, each segment made safe; a path already used
// gets the object id appended.
func (x *exporter) contentName(ctx context.Context, tenant, root string, o vault.Object) string {
	segs := []string{root, "vault", "content", archive.CleanName(cmp.Or(o.SourceID, "unknown-source"))}
	var rel []string
	if m, err := x.s.manifests.Get(ctx, tenant, o.AssetID); err == nil && m.GetSource() != nil {
		src := m.GetSource()
		if p := src.GetPath(); p != "" {
			rel = strings.Split(strings.Trim(p, "/"), "/")
		} else {
			rel = append(append(rel, src.GetContainers()...), cmp.Or(o.Name, src.GetObjectId()))
		}
	}
	if len(rel) == 0 {
		rel = []string{cmp.Or(o.Name, o.ID)}
	}
	for _, r := range rel {
		if r != "" {
			segs = append(segs, archive.CleanName(r))
		}
	}
	name := path.Join(segs...)
	if path.Ext(name) == "" && (o.MIMEType == "message/rfc822" || o.Kind == "message") {
		name += ".eml" // a message opens in a mail program
	}
	if x.contentFor[name] {
		ext := path.Ext(name)
		name = strings.TrimSuffix(name, ext) + " (" + o.ID + ")" + ext
	}
	x.contentFor[name] = true
	return name
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
	_, gone := os.Stat(s.exportPath(j.GetId()))
	if !now.Before(exp) || gone != nil { // expired, or replaced by a newer export
		j.Result.Fields["url"] = structpb.NewNullValue()
		return
	}
	until := now.Add(exportURLTTL)
	if until.After(exp) {
		until = exp
	}
	q := url.Values{"expires": {strconv.FormatInt(until.Unix(), 10)}, "sig": {s.exportSig(j.GetId(), until.Unix())}}
	j.Result.Fields["url"] = structpb.NewStringValue(s.publicBase(httpRequestFrom(ctx)) + "/v1/exports/" + j.GetId() + "/archive?" + q.Encode())
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
	rid := requestIDFrom(r.Context())
	jobID := r.PathValue("id")
	expires, err := strconv.ParseInt(r.URL.Query().Get("expires"), 10, 64)
	denied := newProblem(http.StatusForbidden, codeForbidden, "The download URL is not valid or has expired; read the export job again for a new one.")
	if err != nil || !hmac.Equal([]byte(r.URL.Query().Get("sig")), []byte(s.exportSig(jobID, expires))) ||
		!s.cfg.Now().Before(time.Unix(expires, 0)) {
		writeProblem(w, rid, denied)
		return
	}
	f, err := os.Open(s.exportPath(jobID))
	if errors.Is(err, fs.ErrNotExist) {
		writeProblem(w, rid, newProblem(http.StatusNotFound, codeNotFound, "The export archive is no longer kept."))
		return
	}
	if err != nil {
		s.log.Error("open export", "job_id", jobID, "err", err)
		writeProblem(w, rid, newProblem(http.StatusInternalServerError, codeInternal, "The archive could not be read."))
		return
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		writeProblem(w, rid, newProblem(http.StatusInternalServerError, codeInternal, "The archive could not be read."))
		return
	}
	// Archives are sealed at rest; one written before they were is served as it is.
	var content io.ReadSeeker = f
	head := make([]byte, 8)
	if n, _ := f.ReadAt(head, 0); archive.IsSealed(head[:n]) {
		sr, err := archive.OpenSealed(f, st.Size(), s.archiveKey, jobID)
		if err != nil {
			s.log.Error("open sealed export", "job_id", jobID, "err", err)
			writeProblem(w, rid, newProblem(http.StatusInternalServerError, codeInternal, "The archive could not be read."))
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

// purgeExports removes archives older than ExportRetention and partial files left by a stop.
func (s *Server) purgeExports() {
	dir := filepath.Join(s.cfg.DataDir, exportsDir)
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	cutoff := s.cfg.Now().Add(-ExportRetention)
	for _, e := range entries {
		info, err := e.Info()
		if err != nil {
			continue
		}
		if _, writing := s.exportsInProgress.Load(e.Name()); writing {
			continue // an export in progress: its job renames it when done
		}
		if strings.HasPrefix(e.Name(), ".") || info.ModTime().Before(cutoff) {
			os.Remove(filepath.Join(dir, e.Name()))
		}
	}
}

// failedIDs are the ids of the objects an export left out ([] when none).
func failedIDs(fs []failedObject) []any {
	out := []any{}
	for _, f := range fs {
		out = append(out, f.ID)
	}
	return out
}

// removeEarlierExports removes the archives of the user's earlier exports once a new one is
// made: an account keeps one archive (the newest), so repeated exports cannot fill the disk
// with copies of the account (issue 21, 4).
func (s *Server) removeEarlierExports(ctx context.Context, userID, keep string) {
	for _, mode := range []platform.Mode{platform.ModeLive, platform.ModeTest} {
		t := platform.Tenant{Owner: userID, Mode: mode}.String()
		for j, err := range s.jobs.All(ctx, t, func(j *svcv1.Job) bool { return j.GetKind() == svcv1.JobKind_JOB_KIND_EXPORT }) {
			if err != nil {
				s.log.Error("earlier exports", "err", err)
				return
			}
			if j.GetId() == keep {
				continue
			}
			if err := os.Remove(s.exportPath(j.GetId())); err != nil && !errors.Is(err, fs.ErrNotExist) {
				s.log.Error("remove an earlier export", "job_id", j.GetId(), "err", err)
			}
		}
	}
}
