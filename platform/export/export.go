// Package export writes an account's export archive (spec #7): every resource the account
// owns as the API serves it, receipts as their exact signed bytes, the manifest bundle, and
// the vault's content, each object verified before it enters the archive. The archive is
// sealed at rest (archive.SealedWriter) and kept in one directory, one archive per account.
package export

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"iter"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"google.golang.org/protobuf/proto"

	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/id"
	"svc.dev/svc/manifest"
	"svc.dev/svc/plan"
	"svc.dev/svc/platform"
	"svc.dev/svc/platform/archive"
	"svc.dev/svc/platform/job"
	"svc.dev/svc/storage"
	"svc.dev/svc/vault"
	"svc.dev/svc/wire"
)

// Retention is how long an archive can be downloaded after it was written.
const Retention = 7 * 24 * time.Hour

// DefaultDailyBytes is how many bytes of export archives an account may have written in
// any 24 hours before a new export is refused.
const DefaultDailyBytes = 64 << 30

// byteUnit is how many bytes of vault content count one unit of progress.
const byteUnit = 64 << 10

// Store is what an export reads: the account's resources, plans, receipts and connections.
type Store interface {
	Resources() storage.Resources
	Plans() storage.Plans
	Receipts() storage.Receipts
	ConnectionsOf(ctx context.Context, userID string) ([]*platform.Connection, error)
}

// Exports writes and keeps the archives of account exports in one directory.
type Exports struct {
	Dir   string
	Store Store
	Vault *vault.Vault
	// Key seals archives at rest (archive.NewSealedWriter).
	Key []byte
	// Connection renders a connection as the API serves it.
	Connection func(*platform.Connection) proto.Message
	Now        func() time.Time
	// DailyBytes bounds the bytes of archives an account may have written in any 24 hours
	// (0: DefaultDailyBytes; negative: no bound).
	DailyBytes int64

	writing sync.Map // file names of the archives being written: the sweep keeps them
}

// Path is where the archive of an export job is kept.
func (e *Exports) Path(jobID string) string { return filepath.Join(e.Dir, jobID+".tar.gz") }

// Write writes the archive of a user's account for the export job jobID: account.json (the
// account as the API serves it), then for each of the user's tenants (live, test) every
// resource, receipts as their exact signed bytes, the manifest bundle, the vault objects
// with their content, and last index.json. One resource or one content stream is in memory
// at a time. The archive replaces the user's earlier ones. The result is the job's.
func (e *Exports) Write(ctx context.Context, userID, jobID string, account proto.Message, p *job.Progress) (map[string]any, error) {
	if err := os.MkdirAll(e.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("export dir: %w", err)
	}
	f, err := os.CreateTemp(e.Dir, ".partial-"+jobID+"-")
	if err != nil {
		return nil, fmt.Errorf("export file: %w", err)
	}
	e.writing.Store(filepath.Base(f.Name()), true)
	defer e.writing.Delete(filepath.Base(f.Name()))
	defer os.Remove(f.Name())
	defer f.Close()
	now := e.Now()
	sw, err := archive.NewSealedWriter(f, e.Key, jobID)
	if err != nil {
		return nil, err
	}
	cw := &counter{w: sw, h: sha256.New()} // the size and SHA-256 of what is downloaded
	aw := archive.NewWriter(cw, now)
	x := &writer{e: e, aw: aw, p: p, contentFor: map[string]bool{}}
	if err := x.plan(ctx, userID); err != nil {
		return nil, err
	}
	if err := x.json("account.json", account); err != nil {
		return nil, err
	}
	for _, t := range tenants(userID) {
		if err := x.tenant(ctx, t); err != nil {
			return nil, err
		}
	}
	for _, c := range []io.Closer{aw, sw} {
		if err := c.Close(); err != nil {
			return nil, fmt.Errorf("export: %w", err)
		}
	}
	if err := f.Sync(); err != nil {
		return nil, fmt.Errorf("export: %w", err)
	}
	if err := f.Close(); err != nil {
		return nil, fmt.Errorf("export: %w", err)
	}
	if err := os.Rename(f.Name(), e.Path(jobID)); err != nil {
		return nil, fmt.Errorf("export: %w", err)
	}
	if err := e.removeEarlier(ctx, userID, jobID); err != nil {
		return nil, err
	}
	failed := []any{}
	for _, o := range x.failed {
		failed = append(failed, o.ID)
	}
	return map[string]any{
		"format":                      archive.Format,
		"media_type":                  "application/gzip",
		"file_name":                   "svc-export-" + jobID + ".tar.gz",
		"size_bytes":                  cw.n,
		"sha256":                      hex.EncodeToString(cw.h.Sum(nil)),
		"files":                       aw.Files() + 1,
		"expires_at":                  now.Add(Retention).UTC().Format(time.RFC3339),
		"objects_failed_verification": failed,
	}, nil
}

// QuotaError refuses an export: the account's archives of the last 24 hours already hold
// its daily bytes.
type QuotaError struct {
	Used, Limit int64
	// Next is when the oldest archive counted leaves the window.
	Next time.Time
}

func (e *QuotaError) Error() string {
	return fmt.Sprintf("the account's exports of the last 24 hours hold %d bytes of its %d a day; the next export can start at %s",
		e.Used, e.Limit, e.Next.UTC().Format(time.RFC3339))
}

// CheckQuota returns a *QuotaError when the user's exports finished in the last 24 hours
// (in either mode) already hold the daily bytes.
func (e *Exports) CheckQuota(ctx context.Context, userID string) error {
	limit := cmp.Or(e.DailyBytes, DefaultDailyBytes)
	if limit < 0 {
		return nil
	}
	since := e.Now().Add(-24 * time.Hour)
	var used int64
	var oldest time.Time
	done := func(j *svcv1.Job) bool {
		return j.GetKind() == svcv1.JobKind_JOB_KIND_EXPORT && j.GetStatus() == svcv1.JobStatus_JOB_STATUS_SUCCEEDED &&
			j.GetFinishedAt().AsTime().After(since)
	}
	for _, t := range tenants(userID) {
		for j, err := range e.Store.Resources().Jobs().All(ctx, t.String(), done) {
			if err != nil {
				return fmt.Errorf("export quota: %w", err)
			}
			used += int64(j.GetResult().GetFields()["size_bytes"].GetNumberValue())
			if at := j.GetFinishedAt().AsTime(); oldest.IsZero() || at.Before(oldest) {
				oldest = at
			}
		}
	}
	if used < limit {
		return nil
	}
	return &QuotaError{Used: used, Limit: limit, Next: oldest.Add(24 * time.Hour)}
}

// Purge removes archives older than Retention and partial files a stop left behind; the
// archive of an export in progress is left alone.
func (e *Exports) Purge() {
	entries, err := os.ReadDir(e.Dir)
	if err != nil {
		return
	}
	cutoff := e.Now().Add(-Retention)
	for _, ent := range entries {
		info, err := ent.Info()
		if err != nil {
			continue
		}
		if _, writing := e.writing.Load(ent.Name()); writing {
			continue // its job renames it when done
		}
		if strings.HasPrefix(ent.Name(), ".") || info.ModTime().Before(cutoff) {
			os.Remove(filepath.Join(e.Dir, ent.Name()))
		}
	}
}

// Writing marks a file name of the exports directory as an archive being written (for
// tests of the sweep).
func (e *Exports) Writing(name string) func() {
	e.writing.Store(name, true)
	return func() { e.writing.Delete(name) }
}

// Remove removes the archive of an export job, if it is still kept.
func (e *Exports) Remove(jobID string) error {
	if err := os.Remove(e.Path(jobID)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove export %s: %w", jobID, err)
	}
	return nil
}

// removeEarlier removes the archives of the user's earlier exports once a new one is made:
// an account keeps one archive (the newest), so repeated exports cannot fill the disk with
// copies of the account.
func (e *Exports) removeEarlier(ctx context.Context, userID, keep string) error {
	isExport := func(j *svcv1.Job) bool { return j.GetKind() == svcv1.JobKind_JOB_KIND_EXPORT }
	for _, t := range tenants(userID) {
		for j, err := range e.Store.Resources().Jobs().All(ctx, t.String(), isExport) {
			if err != nil {
				return fmt.Errorf("earlier exports: %w", err)
			}
			if j.GetId() != keep {
				if err := e.Remove(j.GetId()); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

func tenants(userID string) []platform.Tenant {
	return []platform.Tenant{{Owner: userID, Mode: platform.ModeLive}, {Owner: userID, Mode: platform.ModeTest}}
}

// counter counts the archive's bytes and hashes them as they are written.
type counter struct {
	w io.Writer
	n int64
	h hash.Hash
}

func (c *counter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	c.h.Write(p[:n])
	return n, err
}

// writer writes one archive and reports progress: every resource counts 1, every 64 KiB of
// vault content counts 1.
type writer struct {
	e          *Exports
	aw         *archive.Writer
	p          *job.Progress
	total      int64
	done       int64
	contentFor map[string]bool // archive paths used by vault content
	failed     []failedObject  // objects left out: their content failed verification
}

// failedObject is a vault object whose content failed verification during an export.
type failedObject struct {
	ID   string `json:"vault_object_id"`
	Path string `json:"path"`
}

// plan counts the work for progress.
func (x *writer) plan(ctx context.Context, userID string) error {
	x.total = 1
	res := x.e.Store.Resources()
	for _, t := range tenants(userID) {
		tenant := t.String()
		for _, count := range []func(context.Context, string) (int, error){
			countOf(res.PlanHeaders()), countOf(res.Executions()), countOf(res.Sources()), countOf(res.Destinations()),
			countOf(res.Jobs()), countOf(res.EventLog()), countOf(res.Manifests()),
		} {
			n, err := count(ctx, tenant)
			if err != nil {
				return err
			}
			x.total += int64(n)
		}
		err := x.e.Vault.Each(ctx, tenant, func(o vault.Object) error {
			x.total += 1 + o.SizeBytes/byteUnit
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

func (x *writer) step(ctx context.Context, units int64) {
	x.done += units
	x.p.Fraction(ctx, x.done, x.total)
}

func (x *writer) json(name string, m proto.Message) error {
	data, err := wire.Marshal(m)
	if err != nil {
		return fmt.Errorf("export %s: %w", name, err)
	}
	return x.aw.AddBytes(name, data)
}

// resources writes every resource of a collection as dir/<id>.json.
func resources[T proto.Message](ctx context.Context, x *writer, c storage.Records[T], tenant, dir string, idOf func(T) string) error {
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
// it: streamed from the store twice, once to measure it (an archive entry's size comes
// first) and once into the archive, so a plan of any size costs one chunk of memory.
func (x *writer) plans(ctx context.Context, tenant, dir string) error {
	chunks := func(ctx context.Context, planID string) iter.Seq2[[]*svcv1.PlanObject, error] {
		return x.e.Store.Plans().Objects(ctx, tenant, planID)
	}
	for h, err := range x.e.Store.Resources().PlanHeaders().All(ctx, tenant, nil) {
		if err != nil {
			return err
		}
		var size countingWriter
		if err := plan.WriteJSON(ctx, chunks, &size, h, []*svcv1.Plan{h}); err != nil {
			return fmt.Errorf("export plan %s: %w", h.PlanId, err)
		}
		pr, pw := io.Pipe()
		go func() { pw.CloseWithError(plan.WriteJSON(ctx, chunks, pw, h, []*svcv1.Plan{h})) }()
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

func (x *writer) tenant(ctx context.Context, t platform.Tenant) error {
	res, tenant, root := x.e.Store.Resources(), t.String(), string(t.Mode)
	if err := x.plans(ctx, tenant, root+"/plans"); err != nil {
		return err
	}
	if err := resources(ctx, x, res.Sources(), tenant, root+"/sources", (*svcv1.Source).GetId); err != nil {
		return err
	}
	if err := resources(ctx, x, res.Destinations(), tenant, root+"/destinations", (*svcv1.Destination).GetDestinationId); err != nil {
		return err
	}
	if err := resources(ctx, x, res.Jobs(), tenant, root+"/jobs", (*svcv1.Job).GetId); err != nil {
		return err
	}
	if err := resources(ctx, x, res.EventLog(), tenant, root+"/events", (*svcv1.Event).GetId); err != nil {
		return err
	}
	if err := x.executions(ctx, tenant, root); err != nil {
		return err
	}
	conns, err := x.e.Store.ConnectionsOf(ctx, t.Owner)
	if err != nil {
		return err
	}
	for _, c := range conns {
		if c.Mode == t.Mode {
			if err := x.json(root+"/connections/"+archive.CleanName(c.ID)+".json", x.e.Connection(c)); err != nil {
				return err
			}
		}
	}
	if err := x.manifestBundle(ctx, tenant, root); err != nil {
		return err
	}
	return x.vaultContent(ctx, tenant, root)
}

// executions writes each execution followed by its receipt's exact signed bytes.
func (x *writer) executions(ctx context.Context, tenant, root string) error {
	for e, err := range x.e.Store.Resources().Executions().All(ctx, tenant, nil) {
		if err != nil {
			return err
		}
		if err := x.json(root+"/executions/"+archive.CleanName(e.GetId())+".json", e); err != nil {
			return err
		}
		if rid := e.GetReceiptId(); rid != "" {
			raw, err := x.e.Store.Receipts().Get(ctx, tenant, rid)
			if err != nil && !errors.Is(err, id.ErrNotFound) {
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
	return nil
}

// manifestBundle writes the tenant's manifest bundle, streamed through a temporary file (a
// tar entry's size comes before its bytes).
func (x *writer) manifestBundle(ctx context.Context, tenant, root string) error {
	manifests := x.e.Store.Resources().Manifests()
	n, err := manifests.Count(ctx, tenant, nil)
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(x.e.Dir, ".bundle-")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	defer tmp.Close()
	head := manifest.BundleHeader{TenantRef: tenant, GeneratedAt: x.e.Now().UTC(), Count: int64(n)}
	seq := func(yield func(*svcv1.Manifest, error) bool) {
		i := 0
		for m, err := range manifests.All(ctx, tenant, nil) {
			if i == n && err == nil {
				return // the bundle holds the count its header names
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
func (x *writer) vaultContent(ctx context.Context, tenant, root string) error {
	before := len(x.failed)
	err := x.e.Vault.Each(ctx, tenant, func(o vault.Object) error {
		if err := x.json(root+"/vault/objects/"+archive.CleanName(o.ID)+".json", o.Proto()); err != nil {
			return err
		}
		if o.State == vault.StateCommitted || o.State == vault.StateCold {
			if err := x.object(ctx, tenant, root, o); err != nil {
				return err
			}
		}
		x.step(ctx, 1+o.SizeBytes/byteUnit)
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
func (x *writer) object(ctx context.Context, tenant, root string, o vault.Object) error {
	name := x.contentName(ctx, tenant, root, o)
	sp, err := x.e.Vault.Spool(ctx, tenant, o.ID, x.e.Dir)
	if errors.Is(err, vault.ErrInvalidData) {
		x.failed = append(x.failed, failedObject{ID: o.ID, Path: name})
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

// contentName is the archive path of an object's content: its source, then the path (or
// containers and name) its manifest records, each segment made safe; a path already used
// gets the object id appended.
func (x *writer) contentName(ctx context.Context, tenant, root string, o vault.Object) string {
	segs := []string{root, "vault", "content", archive.CleanName(cmp.Or(o.SourceID, "unknown-source"))}
	var rel []string
	if m, err := x.e.Store.Resources().Manifests().Get(ctx, tenant, o.AssetID); err == nil && m.GetSource() != nil {
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
