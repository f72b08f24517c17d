package server

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/mail"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"svc.dev/svc"
	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/gen/svc/v1/svcv1connect"
	"svc.dev/svc/id"
	"svc.dev/svc/internal/platform"
	"svc.dev/svc/internal/store"
	"svc.dev/svc/vault"
	"svc.dev/svc/vault/search"
)

// vaultIndex keeps the search index in step with the vault from the vault's durable change
// feed (store.VaultChanges): every commit, tier move and deletion, and every manifest stored
// for a preserved asset, writes an entry in its own transaction, so a crash cannot leave the
// index behind what was stored. A background worker (run) reads the feed in order, indexes or
// removes the objects in large bleve batches, off the execution's path, then deletes the
// entries it applied; an entry applied twice (a crash in between) is harmless. A search first
// waits until every entry written before it was applied (sync), so it sees what was committed
// before it was asked. The index is derived data: an update that fails is logged, and the
// index job (ReindexVault) rebuilds it from the vault.
type vaultIndex struct {
	index *search.Index
	log   interface{ Error(string, ...any) }

	// vlt, manifests and feed are set once the server is made; the vault changes nothing
	// before.
	vlt       *vault.Vault
	manifests *store.Collection[*svcv1.Manifest]
	feed      *store.VaultChanges

	mu       sync.Mutex
	applied  uint64        // the feed's entries up to this sequence number are applied
	progress chan struct{} // closed and replaced when applied moves
	wake     chan struct{} // something was written to the feed
	hurry    chan struct{} // a search waits: apply now, without gathering a larger batch
	busy     func() bool   // reports whether an execution runs (the worker then defers)
}

// Indexing pace. After it is woken, the worker gathers entries for indexGather, and longer
// while an execution runs (busy), up to indexMaxDefer: indexing is CPU-heavy (word analysis,
// segment building and merging) and would take it from the clean-up; the entries wait in the
// feed, durable. A search does not wait for either (hurry). It then applies up to indexBatch
// entries per bleve batch: larger batches make fewer segments to merge, but hold more in
// memory while they are analysed. indexPoll picks up entries nobody woke it for (written by
// an offline command).
const (
	indexGather   = time.Second
	indexMaxDefer = 10 * time.Minute
	indexBatch    = 1024
	indexPoll     = 30 * time.Second
)

// changed is vault.Options.OnChange: the change is in the feed already; it wakes the worker.
func (ix *vaultIndex) changed(context.Context, string, vault.Object) { ix.poke(ix.wake) }

func (ix *vaultIndex) poke(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// run applies the feed until ctx ends. What is left then stays in the feed for the next start.
func (ix *vaultIndex) run(ctx context.Context) {
	work := context.WithoutCancel(ctx)
	poll := time.NewTicker(indexPoll)
	defer poll.Stop()
	ix.drain(ctx, work) // what a previous process left
	for {
		select {
		case <-ix.wake:
			ix.hold(ctx)
		case <-ix.hurry:
		case <-poll.C:
		case <-ctx.Done():
			return
		}
		ix.drain(ctx, work)
	}
}

// hold waits before a drain: indexGather, and while an execution runs up to indexMaxDefer,
// unless a search hurries it.
func (ix *vaultIndex) hold(ctx context.Context) {
	start := time.Now()
	tick := time.NewTicker(indexGather)
	defer tick.Stop()
	for {
		select {
		case <-ix.hurry:
			return
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if ix.busy == nil || !ix.busy() || time.Since(start) >= indexMaxDefer {
			return
		}
	}
}

// drain applies the feed's entries until none is left (or stop ends): per batch and tenant,
// one bleve batch of documents and one of removals; an object named twice is indexed once, as
// it is now.
func (ix *vaultIndex) drain(stop, ctx context.Context) {
	for stop.Err() == nil {
		ix.mu.Lock()
		after := ix.applied
		ix.mu.Unlock()
		batch, last, err := ix.feed.Read(ctx, after, indexBatch)
		if err != nil {
			ix.log.Error("search index: read the vault's change feed", "err", err)
			return
		}
		if len(batch) == 0 {
			// Nothing is left up to the feed's last sequence number (entries applied by an
			// earlier process were deleted, and their numbers are not reused).
			ix.advance(last)
			return
		}
		upTo := batch[len(batch)-1].Seq
		ix.apply(ctx, batch)
		if err := ix.feed.Ack(ctx, upTo); err != nil {
			ix.log.Error("search index: acknowledge the vault's change feed", "err", err)
		}
		ix.advance(upTo)
	}
}

// advance records that the feed is applied up to seq and wakes the searches waiting for it.
func (ix *vaultIndex) advance(seq uint64) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if seq <= ix.applied {
		return
	}
	ix.applied = seq
	close(ix.progress)
	ix.progress = make(chan struct{})
}

// apply indexes or removes the objects of a batch of feed entries.
func (ix *vaultIndex) apply(ctx context.Context, batch []store.VaultChange) {
	seen := map[[2]string]bool{}
	puts, removes := map[string][]search.Doc{}, map[string][]string{}
	for _, c := range batch {
		k := [2]string{c.Tenant, c.ObjectID}
		if seen[k] {
			continue
		}
		seen[k] = true
		o, err := ix.vlt.Get(ctx, c.Tenant, c.ObjectID)
		switch {
		case errors.Is(err, vault.ErrNotFound):
			removes[c.Tenant] = append(removes[c.Tenant], c.ObjectID)
			continue
		case err != nil:
			ix.log.Error("search index: read vault object", "tenant", c.Tenant, "vault_object_id", c.ObjectID, "err", err)
			continue
		}
		switch o.State {
		case vault.StateCommitted, vault.StateCold:
			d, err := ix.doc(ctx, c.Tenant, o)
			if err != nil {
				ix.log.Error("search index: read vault object", "tenant", c.Tenant, "vault_object_id", o.ID, "err", err)
				continue
			}
			puts[c.Tenant] = append(puts[c.Tenant], d)
		case vault.StateDeleting, vault.StateDeleted:
			removes[c.Tenant] = append(removes[c.Tenant], o.ID)
		}
	}
	for tenant, docs := range puts {
		if err := ix.index.Put(ctx, tenant, docs...); err != nil {
			ix.log.Error("search index update", "tenant", tenant, "objects", len(docs), "err", err)
		}
	}
	for tenant, ids := range removes {
		if err := ix.index.Remove(ctx, tenant, ids...); err != nil {
			ix.log.Error("search index update", "tenant", tenant, "objects", len(ids), "err", err)
		}
	}
}

// sync waits until every entry written to the feed before it was applied.
func (ix *vaultIndex) sync(ctx context.Context) error {
	target, err := ix.feed.Last(ctx)
	if err != nil {
		return err
	}
	for {
		ix.mu.Lock()
		done, ch := ix.applied >= target, ix.progress
		ix.mu.Unlock()
		if done {
			return nil
		}
		ix.poke(ix.hurry)
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// searchable reports whether an object belongs in the index.
func searchable(o vault.Object) bool {
	return o.State == vault.StateCommitted || o.State == vault.StateCold
}

// doc is what the index holds of a vault object: its metadata, the text extracted at commit,
// and for a message its headers, from its manifest or else from the message itself.
func (ix *vaultIndex) doc(ctx context.Context, tenant string, o vault.Object) (search.Doc, error) {
	d := search.Doc{ID: o.ID, Name: o.Name, Type: o.Kind, MIMEType: o.MIMEType, SourceID: o.SourceID,
		State: enumWire(o.State.Proto()), Date: o.CommittedAt}
	if d.Date.IsZero() {
		d.Date = o.CreatedAt
	}
	if o.Provider != svcv1.Provider_PROVIDER_UNSPECIFIED {
		d.Provider = enumWire(o.Provider)
	}
	if o.AssetID != "" {
		m, err := ix.manifests.Get(ctx, tenant, o.AssetID)
		switch {
		case err == nil:
			c := m.GetContent()
			if c.GetKind() != svcv1.ContentKind_CONTENT_KIND_UNSPECIFIED {
				d.Type = enumWire(c.GetKind())
			}
			if t := m.GetSource().GetModifiedAt(); t != nil {
				d.Date = t.AsTime()
			}
			if msg := c.GetMessage(); msg != nil {
				d.Subject, d.From = msg.GetSubject(), msg.GetFrom()
				d.To, d.Cc = strings.Join(msg.GetTo(), ", "), strings.Join(msg.GetCc(), ", ")
				if msg.GetDate() != nil {
					d.Date = msg.GetDate().AsTime()
				}
			}
		case !errors.Is(err, store.ErrNotFound):
			return d, err
		}
	}
	switch {
	case isMessage(o): // a .eml file is a message too
		d.Type = "message"
	case d.Type == "":
		d.Type = "file"
	}
	if isMessage(o) && d.Subject == "" && d.From == "" {
		if err := ix.headers(ctx, tenant, o, &d); err != nil {
			return d, err
		}
	}
	if o.HasText {
		rc, err := ix.vlt.OpenText(ctx, tenant, o.ID)
		if err != nil {
			return d, fmt.Errorf("text of %s: %w", o.ID, err)
		}
		text, err := io.ReadAll(io.LimitReader(rc, search.MaxBodyBytes))
		rc.Close()
		if err != nil {
			return d, fmt.Errorf("text of %s: %w", o.ID, err)
		}
		d.Body = string(text)
	}
	return d, nil
}

func isMessage(o vault.Object) bool {
	mt, _, _ := mime.ParseMediaType(o.MIMEType)
	return o.Kind == "message" || mt == "message/rfc822" || strings.EqualFold(filepath.Ext(o.Name), ".eml")
}

// headers reads a message's headers from its content (the first 64 KiB at most).
func (ix *vaultIndex) headers(ctx context.Context, tenant string, o vault.Object, d *search.Doc) error {
	rc, _, err := ix.vlt.Open(ctx, tenant, o.ID)
	if err != nil {
		return fmt.Errorf("headers of %s: %w", o.ID, err)
	}
	defer rc.Close()
	msg, err := mail.ReadMessage(bufio.NewReader(io.LimitReader(rc, 64<<10)))
	if err != nil {
		return nil // not a parseable message: its text is still indexed
	}
	dec := new(mime.WordDecoder)
	get := func(k string) string {
		v := msg.Header.Get(k)
		if s, err := dec.DecodeHeader(v); err == nil {
			return s
		}
		return v
	}
	d.Subject, d.From, d.To, d.Cc = get("Subject"), get("From"), get("To"), get("Cc")
	if t, err := msg.Header.Date(); err == nil {
		d.Date = t
	}
	return nil
}

// maxIndexWait bounds how long a search waits for the index to catch up with the vault.
const maxIndexWait = 5 * time.Second

// searchVault searches the vault (spec #11): q in the search package's syntax, filters
// provider, from, to, type; newest first, cursor-paginated; limited to the sources of a
// connection's grant.
func (s *Server) searchVault(ctx context.Context, req *svcv1.SearchVaultRequest) (*svcv1.SearchVaultResponse, error) {
	after, limit, binding, err := s.pageStart(ctx, svcv1connect.VaultServiceSearchVaultProcedure, req)
	if err != nil {
		return nil, err
	}
	c := callerFrom(ctx)
	q := search.Query{Q: req.GetQ(), Type: req.GetType(), Limit: limit, After: after}
	if req.Provider != nil {
		q.Provider = enumWire(req.GetProvider())
	}
	if req.From != nil {
		q.From = req.GetFrom().AsTime()
	}
	if req.To != nil {
		q.To = req.GetTo().AsTime()
	}
	if req.From != nil && req.To != nil && !q.To.After(q.From) {
		return nil, invalid("to", "must be after from")
	}
	if c.Connection != nil && len(c.Connection.Grant.SourceIDs) > 0 {
		q.Sources = c.Connection.Grant.SourceIDs
	}
	tenant := c.Tenant.String()
	// Read-your-writes, within reason: a worker that is far behind (or stuck) delays a search
	// by at most maxIndexWait, which then answers from what is indexed.
	wait, cancel := context.WithTimeout(ctx, maxIndexWait)
	err = s.search.sync(wait)
	cancel()
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	if err != nil {
		s.log.Warn("search: the index is behind the vault", "tenant", tenant, "waited", maxIndexWait)
	}
	res, err := s.search.index.Search(ctx, tenant, q)
	if errors.Is(err, search.ErrInvalidQuery) {
		return nil, invalid("q", strings.TrimPrefix(err.Error(), search.ErrInvalidQuery.Error()+": "))
	}
	if err != nil {
		return nil, err
	}
	out := &svcv1.SearchVaultResponse{Data: []*svcv1.SearchHit{}}
	var stale []string
	for _, h := range res.Hits {
		o, err := s.vault.Get(ctx, tenant, h.ID)
		if errors.Is(err, vault.ErrNotFound) || err == nil && !searchable(o) {
			stale = append(stale, h.ID) // deleted since it was indexed (by a tool, say)
			continue
		}
		if err != nil {
			return nil, err
		}
		if c.vaultObjectVisible(o) != nil {
			continue
		}
		hit := &svcv1.SearchHit{VaultObject: o.Proto(), Score: h.Score, Matched: h.Matched}
		if h.Snippet != "" {
			hit.Snippet = &h.Snippet
		}
		out.Data = append(out.Data, hit)
	}
	if len(stale) > 0 {
		if err := s.search.index.Remove(context.WithoutCancel(ctx), tenant, stale...); err != nil {
			s.log.Error("search index: remove stale hits", "err", err)
		}
	}
	out.NextCursor = s.nextCursor(binding, res.Next)
	return out, nil
}

// IndexResult is one tenant's index job.
type IndexResult struct {
	Tenant  string
	Job     *svcv1.Job
	Indexed int
	Err     error
}

// indexJob rebuilds one tenant's search index from its vault as a job of kind index, stored in
// jobs when it starts, as it progresses (at most every second) and when it ends; its result
// says how many objects were indexed and the index's size.
func indexJob(ctx context.Context, jobs *store.Collection[*svcv1.Job], ix *vaultIndex, tenant string, now func() time.Time, started func(*svcv1.Job)) IndexResult {
	res := IndexResult{Tenant: tenant}
	at := timestamppb.New(now())
	job := &svcv1.Job{Id: id.New("job"), Kind: svcv1.JobKind_JOB_KIND_INDEX, Status: svcv1.JobStatus_JOB_STATUS_RUNNING, CreatedAt: at, UpdatedAt: at}
	if err := jobs.Put(ctx, tenant, job.Id, job); err != nil {
		res.Err = err
		return res
	}
	if started != nil {
		started(job)
	}
	total, err := ix.count(ctx, tenant)
	if err != nil {
		ix.log.Error("index job: count objects", "tenant", tenant, "err", err)
	}
	var mu sync.Mutex
	last := time.Now()
	progress := func(n int) {
		mu.Lock()
		defer mu.Unlock()
		if time.Since(last) < time.Second || total <= 0 {
			return
		}
		last = time.Now()
		p := min(int32(int64(n)*100/total), 99)
		if p <= job.Progress {
			return
		}
		job.Progress, job.UpdatedAt = p, timestamppb.New(now())
		if err := jobs.Put(ctx, tenant, job.Id, job); err != nil {
			ix.log.Error("index job progress", "job_id", job.Id, "err", err)
		}
	}
	res.Indexed, res.Err = ix.index.Rebuild(ctx, tenant, ix.docs(ctx, tenant), progress)
	job.UpdatedAt = timestamppb.New(now())
	job.FinishedAt = job.UpdatedAt
	size, _ := ix.index.Size(tenant)
	job.Result, _ = structpb.NewStruct(map[string]any{"type": "vault_index", "indexed": float64(res.Indexed), "index_bytes": float64(size)})
	if res.Err != nil {
		job.Status = svcv1.JobStatus_JOB_STATUS_FAILED
		msg := res.Err.Error()
		job.Error = &msg
	} else {
		job.Status, job.Progress = svcv1.JobStatus_JOB_STATUS_SUCCEEDED, 100
	}
	if err := jobs.Put(context.WithoutCancel(ctx), tenant, job.Id, job); err != nil {
		res.Err = errors.Join(res.Err, err)
	}
	res.Job = job
	return res
}

// count returns how many objects of a tenant are searchable (for the job's progress).
func (ix *vaultIndex) count(ctx context.Context, tenant string) (int64, error) {
	var n int64
	after := ""
	for {
		page, more, err := ix.vlt.List(ctx, tenant, after, 1000, searchable)
		if err != nil {
			return n, err
		}
		n += int64(len(page))
		if !more || len(page) == 0 {
			return n, nil
		}
		after = page[len(page)-1].ID
	}
}

// docs yields the search document of every searchable object of a tenant, reading the vault a
// page at a time (no transaction is open while a document is made).
func (ix *vaultIndex) docs(ctx context.Context, tenant string) func(yield func(search.Doc, error) bool) {
	return func(yield func(search.Doc, error) bool) {
		after := ""
		for {
			page, more, err := ix.vlt.List(ctx, tenant, after, 256, searchable)
			if err != nil {
				yield(search.Doc{}, err)
				return
			}
			for _, o := range page {
				d, err := ix.doc(ctx, tenant, o)
				if !yield(d, err) || err != nil {
					return
				}
				after = o.ID
			}
			if !more || len(page) == 0 {
				return
			}
		}
	}
}

// ReindexVault rebuilds one tenant's search index now (see indexJob) and emits svc.job.started
// and svc.job.succeeded or svc.job.failed.
func (s *Server) ReindexVault(ctx context.Context, tenant platform.Tenant) IndexResult {
	res := indexJob(ctx, s.jobs, s.search, tenant.String(), s.cfg.Now, func(job *svcv1.Job) {
		s.emit(ctx, tenant, evJobStarted, "/v1/jobs", job.Id, map[string]any{"job_id": job.Id, "kind": "index"})
	})
	if res.Job != nil {
		typ := evJobSucceeded
		if res.Err != nil {
			typ = evJobFailed
		}
		s.emit(ctx, tenant, typ, "/v1/jobs", res.Job.Id, map[string]any{"job_id": res.Job.Id, "kind": "index", "indexed": float64(res.Indexed)})
	}
	return res
}

// indexMissing runs the index job for every tenant with vault content and no index (a data
// directory from before search, or whose index was removed).
func (s *Server) indexMissing(ctx context.Context) {
	tenants, err := s.db.VaultMeta().Tenants(ctx)
	if err != nil {
		s.log.Error("search index: list tenants", "err", err)
		return
	}
	for _, tn := range tenants {
		t, err := parseTenant(tn)
		if err != nil || s.search.index.Exists(tn) {
			continue
		}
		if res := s.ReindexVault(ctx, t); res.Err != nil && ctx.Err() == nil {
			s.log.Error("search index job", "tenant", tn, "err", res.Err)
		}
	}
}

// ReindexDataDir rebuilds the search index of a data directory whose server is not running
// (`svc vault reindex`): one tenant, or every tenant with vault content when tenant is "".
// Each rebuild is recorded as a job of kind index; events are not emitted (they are the
// server's).
func ReindexDataDir(ctx context.Context, dataDir string, be VaultBackends, tenant string) ([]IndexResult, error) {
	db, master, err := openStopped(dataDir)
	if err != nil {
		return nil, err
	}
	defer db.Close()
	ix, err := openSearch(dataDir)
	if err != nil {
		return nil, err
	}
	defer ix.index.Close()
	vlt, err := svc.OpenVault(dataDir, db.VaultMeta(), master, &vault.Options{Hot: be.Hot, Cold: be.Cold})
	if err != nil {
		return nil, err
	}
	defer vlt.Close()
	ix.vlt, ix.manifests, ix.feed = vlt, store.NewCollection(db, "manifests", func() *svcv1.Manifest { return &svcv1.Manifest{} }), db.VaultChanges()
	tenants := []string{tenant}
	if tenant == "" {
		if tenants, err = db.VaultMeta().Tenants(ctx); err != nil {
			return nil, err
		}
	}
	jobs := store.NewCollection(db, "jobs", func() *svcv1.Job { return &svcv1.Job{} })
	var out []IndexResult
	for _, tn := range tenants {
		out = append(out, indexJob(ctx, jobs, ix, tn, time.Now, nil))
	}
	return out, nil
}

// openSearch opens the data directory's search index (DATA/search).
func openSearch(dataDir string) (*vaultIndex, error) {
	idx, err := search.Open(filepath.Join(dataDir, "search"))
	if err != nil {
		return nil, err
	}
	return &vaultIndex{index: idx, log: discardLog{}, progress: make(chan struct{}), wake: make(chan struct{}, 1), hurry: make(chan struct{}, 1)}, nil
}

type discardLog struct{}

func (discardLog) Error(string, ...any) {}
