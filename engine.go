package svc

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"iter"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"

	"github.com/oklog/ulid/v2"
	"google.golang.org/protobuf/proto"

	"svc.dev/svc/execute"
	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/id"
	"svc.dev/svc/manifest"
	"svc.dev/svc/platform/event"
	"svc.dev/svc/providers"
	"svc.dev/svc/storage"
	"svc.dev/svc/vault"
)

// execStore is the engine's storage on the seam: executions and plans, the journal, and the
// events that announce an execution's start and end, written with them.
type execStore struct{ c *core }

var _ execute.Store = execStore{}

func (c *core) scope(tenant string) (*Scope, error) {
	t, err := parseTenant(tenant)
	if err != nil {
		return nil, err
	}
	return &Scope{c: c, t: t}, nil
}

// BeginExecution moves the plan (fn), stores the queued execution and its
// svc.execution.started event in one transaction.
func (x execStore) BeginExecution(ctx context.Context, tenant, planID string, fn func(*svcv1.Plan) error, e *svcv1.Execution) error {
	s, err := x.c.scope(tenant)
	if err != nil {
		return err
	}
	put := x.c.store.Executions().PutWrite(tenant, e) // e is complete once fn ran
	pe, err := s.prepare(ctx, EventExecutionStarted, "/v1/executions", e.Id, map[string]any{"execution_id": e.Id, "plan_id": planID})
	if err != nil {
		return err
	}
	if err := x.c.store.Plans().Update(ctx, tenant, planID, fn, put, pe.write); err != nil {
		return err
	}
	pe.wake()
	return nil
}

func (x execStore) UpdateExecution(ctx context.Context, tenant, id string, fn func(*svcv1.Execution) error) error {
	return x.c.store.Executions().Update(ctx, tenant, id, fn)
}

// EndExecution ends an execution and stores the events announcing it (with its status,
// receipt_id and finished_at) in the same transaction: an event or webhook about the end is
// never seen before the execution shows it, nor the reverse.
func (x execStore) EndExecution(ctx context.Context, tenant, id string, fn func(*svcv1.Execution) error) error {
	s, err := x.c.scope(tenant)
	if err != nil {
		return err
	}
	// The events are prepared (which reads the store) before the transaction, from what fn
	// makes of the execution as stored now; fn runs again inside it.
	cur, err := x.c.store.Executions().Get(ctx, tenant, id)
	if err != nil {
		return err
	}
	end := proto.Clone(cur).(*svcv1.Execution)
	if err := fn(end); err != nil {
		return err
	}
	var writes []storage.Write
	var events []pending
	if cur.GetReceiptId() == "" && end.GetReceiptId() != "" {
		p, err := x.c.store.Plans().Header(ctx, tenant, end.GetPlanId())
		if err != nil {
			return err
		}
		if events, err = s.endEvents(context.WithoutCancel(ctx), end, p); err != nil {
			return err
		}
		for _, pe := range events {
			writes = append(writes, pe.write)
		}
	}
	if f := x.c.fence(id); f != nil {
		writes = append(writes, f) // only the replica holding the execution ends it
	}
	if err := x.c.store.Executions().Update(ctx, tenant, id, fn, writes...); err != nil {
		return err
	}
	for _, pe := range events {
		pe.wake()
	}
	return nil
}

func (x execStore) Unfinished(ctx context.Context) ([][2]string, error) {
	var out [][2]string
	scan := x.c.store.Executions().ScanAll
	if s, ok := x.c.store.(signalling); ok {
		// A store that can read only the queued and running ones (PostgreSQL, by the status
		// column): replicas ask every few seconds (Adopt).
		if a, ok := s.Store.Executions().(storage.ActiveExecutions); ok {
			scan = a.ScanActive
		}
	}
	err := scan(ctx, func(tenant string, e *svcv1.Execution) bool {
		if s := e.GetStatus(); s == svcv1.ExecutionStatus_EXECUTION_STATUS_QUEUED || s == svcv1.ExecutionStatus_EXECUTION_STATUS_RUNNING ||
			(e.GetFinishedAt() == nil && e.GetStatus() != svcv1.ExecutionStatus_EXECUTION_STATUS_UNSPECIFIED) {
			out = append(out, [2]string{tenant, e.GetId()})
		}
		return true
	})
	return out, err
}

func (x execStore) PlanHeader(ctx context.Context, tenant, id string) (*svcv1.Plan, error) {
	return x.c.store.Plans().Header(ctx, tenant, id)
}

// PlanObjects yields the plan's chunks as stored, or, for a plan stored whole (before plans
// were split), its objects in chunks of the same size.
func (x execStore) PlanObjects(ctx context.Context, tenant, id string) iter.Seq2[[]*svcv1.PlanObject, error] {
	return x.c.store.Plans().Objects(ctx, tenant, id)
}

// UpdatePlan changes the plan's header only: the engine changes its state, never its objects,
// and reading them all for that would cost a large plan's size in memory.
func (x execStore) UpdatePlan(ctx context.Context, tenant, id string, fn func(*svcv1.Plan) error) error {
	return x.c.store.Plans().UpdateHeader(ctx, tenant, id, fn)
}

// Record appends an execution's group of transitions in one transaction, group-committed with
// the other executions' groups and the vault's records.
func (x execStore) Record(ctx context.Context, tenant, exeID string, ts ...execute.Transition) error {
	vals := make([][]byte, len(ts))
	for i, t := range ts {
		vals[i] = encodeTransition(nil, t)
	}
	if f := x.c.fence(exeID); f != nil {
		// Fenced: a replica that lost the execution's lease cannot add to its journal.
		if err := x.c.store.Journal().(storage.FencedJournal).AppendWith(ctx, tenant, exeID, vals, f); err != nil {
			return err
		}
	} else if err := x.c.store.Journal().Append(ctx, tenant, exeID, vals); err != nil {
		return err
	}
	for range ts {
		crashPoint()
	}
	return nil
}

// crashAfter, from SVC_CRASH_AFTER_JOURNAL=N, kills the process with SIGKILL right after the
// group holding the N-th journal entry is durable: the crash tests use it to stop the binary
// exactly at step boundaries. Unset (always, outside those tests) it does nothing.
var (
	crashAfter   = func() int64 { n, _ := strconv.ParseInt(os.Getenv("SVC_CRASH_AFTER_JOURNAL"), 10, 64); return n }()
	journalCount atomic.Int64
)

func crashPoint() {
	if crashAfter > 0 && journalCount.Add(1) == crashAfter {
		syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {} // the signal is on its way
	}
}

// ScanJournal decodes an execution's journal entry by entry, in one read.
func (x execStore) ScanJournal(ctx context.Context, tenant, exeID string, fn func(execute.Transition) error) error {
	i := 0
	return x.c.store.Journal().Scan(ctx, tenant, exeID, func(b []byte) error {
		t, err := decodeTransition(b)
		if err != nil {
			return fmt.Errorf("journal entry %d: %w", i, err)
		}
		i++
		return fn(t)
	})
}

func (c *core) journal(ctx context.Context, tenant, exeID string) ([]execute.Transition, error) {
	raw, err := c.store.Journal().Read(ctx, tenant, exeID)
	if err != nil {
		return nil, err
	}
	out := make([]execute.Transition, len(raw))
	for i, b := range raw {
		if out[i], err = decodeTransition(b); err != nil {
			return nil, fmt.Errorf("journal entry %d: %w", i, err)
		}
	}
	return out, nil
}

// engineSources opens sources and destinations for the engine.
type engineSources struct{ c *core }

func (e engineSources) Source(ctx context.Context, tenant, sourceID string) (providers.Provider, string, error) {
	s, err := e.c.scope(tenant)
	if err != nil {
		return nil, "", err
	}
	if id.Prefix(sourceID) == "dst" { // a plan's destination
		_, p, ref, err := s.OpenDestination(ctx, sourceID)
		return p, ref, err
	}
	return s.OpenSource(ctx, sourceID)
}

// engineVault preserves content for the engine in the vault, and creates or updates the
// asset's manifest with its verified copy.
type engineVault struct{ c *core }

var _ execute.Vault = engineVault{}

// vaultObjectID derives the vault object of an asset in an execution, so that a write
// interrupted by a crash is redone into the same object. The id sorts in plan order within
// its execution, and executions by their start: a ULID whose time is the execution's, whose
// next four bytes are the asset's position in the plan and whose last six are a hash of the
// execution and the asset. The store's indexes of vault objects then grow at their end, as
// the engine commits assets roughly in plan order, instead of rewriting a random page of
// each for every object (docs/executions.md).
func vaultObjectID(executionID, assetID string, index int64) string {
	sum := sha256.Sum256([]byte("svc/vault-object/v1\x00" + executionID + "\x00" + assetID))
	var u ulid.ULID
	if e, err := ulid.ParseStrict(strings.TrimPrefix(executionID, "exe_")); err == nil {
		_ = u.SetTime(e.Time())
	} else {
		copy(u[:6], sum[16:22]) // not an execution id: still deterministic
	}
	binary.BigEndian.PutUint32(u[6:10], uint32(index))
	copy(u[10:], sum[:6])
	return "vlt_" + u.String()
}

// manifestIDOf derives the manifest of an asset that the engine creates when it first
// preserves it, so that a copy redone after a crash (the vault object written, its manifest
// not yet) names the same manifest.
func manifestIDOf(tenant, assetID string) string {
	sum := sha256.Sum256([]byte("svc/manifest/v1\x00" + tenant + "\x00" + assetID))
	var u ulid.ULID
	copy(u[:], sum[:16])
	return "mfs_" + u.String()
}

// Store writes the content to the vault, then records the verified copy in the asset's
// manifest (creating it the first time the asset is preserved) together with the
// svc.vault.object.committed event, in one transaction group-committed with the other assets'.
func (v engineVault) Store(ctx context.Context, tenant string, a execute.Asset, body io.Reader, _ func() error) (execute.VaultRef, error) {
	c := v.c
	o := a.Object
	m, err := c.store.Manifests().Get(ctx, tenant, o.GetAssetId())
	if errors.Is(err, storage.ErrNotFound) {
		// A draft: the Apply below seals it (New would hash it once more).
		m, err = manifest.Draft(&manifest.Asset{ManifestID: manifestIDOf(tenant, o.GetAssetId()), AssetID: o.GetAssetId(), TenantRef: tenant,
			Provider: o.GetProvider(), SourceRef: o.GetSourceId(), Object: a.Content, ObservedAt: c.now().UTC()})
	}
	if err != nil {
		return execute.VaultRef{}, err
	}
	fresh := m // the asset's first manifest when it has none yet, sealed by the Apply below
	req := vault.PutRequest{ID: vaultObjectID(a.ExecutionID, o.GetAssetId(), a.Index), AssetID: o.GetAssetId(), Name: a.Content.Name,
		Provider: o.GetProvider(), SourceID: o.GetSourceId(), MIMEType: a.Content.MIMEType, Kind: string(a.Content.Kind),
		ManifestID: m.GetManifestId(), SizeBytes: -1, SizeHint: a.Content.SizeBytes}
	if o.ExpectedSha256 != nil {
		if d, err := vault.ParseDigest(o.GetExpectedSha256()); err == nil {
			req.SHA256 = d
		}
	}
	obj, err := c.vault.Put(ctx, tenant, req, body)
	if err != nil {
		return execute.VaultRef{}, err
	}
	observed := a.Content
	var pe pending
	s, err := c.scope(tenant)
	if err == nil {
		pe, err = s.prepare(ctx, event.VaultObjectCommitted, "/v1/vault/objects", obj.ID,
			map[string]any{"vault_object_id": obj.ID, "asset_id": o.GetAssetId(), "execution_id": a.ExecutionID, "sha256": obj.SHA256.String(),
				"size_bytes": float64(obj.SizeBytes)})
	}
	if err != nil {
		return execute.VaultRef{}, fmt.Errorf("vault event: %w", err)
	}
	writes := []storage.Write{pe.write, c.store.VaultChanged(tenant, obj.ID)}
	if f := c.fence(a.ExecutionID); f != nil {
		writes = append(writes, f) // a replica that lost the execution records no copy in the manifest
	}
	err = c.store.Manifests().Upsert(ctx, tenant, o.GetAssetId(), func() (*svcv1.Manifest, error) { return proto.Clone(fresh).(*svcv1.Manifest), nil },
		func(m *svcv1.Manifest) error {
			return manifest.Apply(m, &manifest.Update{ExecutionID: a.ExecutionID, At: c.now().UTC(), Observed: &observed,
				Vault: &manifest.Vault{VaultObjectID: obj.ID, StorageKey: obj.StorageKey(), SHA256: obj.SHA256.String(), SizeBytes: obj.SizeBytes,
					CommittedAt: obj.CommittedAt, VerifiedAt: obj.VerifiedAt}})
		}, writes...)
	if err != nil {
		return execute.VaultRef{}, err
	}
	// The manifest's transaction announced the object to the search index (the vault's commit
	// left that to it, as the object names a manifest), so it is indexed once, complete; the
	// hook only wakes the indexer.
	if c.opts.OnVaultChange != nil {
		c.opts.OnVaultChange(ctx, tenant, obj)
	}
	pe.wake()
	return execute.VaultRef{ID: obj.ID, SHA256: obj.SHA256.String(), Size: obj.SizeBytes}, nil
}

// assetManifest returns an asset's manifest, creating it from the provider's metadata the
// first time the asset is preserved.
func (c *core) assetManifest(ctx context.Context, tenant string, o *svcv1.PlanObject, meta providers.Object) (*svcv1.Manifest, error) {
	m, err := c.store.Manifests().Get(ctx, tenant, o.GetAssetId())
	if err == nil {
		return m, nil
	}
	if !errors.Is(err, storage.ErrNotFound) {
		return nil, err
	}
	m, err = manifest.New(&manifest.Asset{AssetID: o.GetAssetId(), TenantRef: tenant, Provider: o.GetProvider(), SourceRef: o.GetSourceId(),
		Object: meta, ObservedAt: c.now().UTC()})
	if err != nil {
		return nil, err
	}
	return m, c.store.Manifests().Put(ctx, tenant, o.GetAssetId(), m)
}

// Read implements execute.Vault: the asset's committed copy, found through its manifest.
func (v engineVault) Read(ctx context.Context, tenant, assetID string) (io.ReadCloser, execute.VaultRef, error) {
	m, err := v.c.store.Manifests().Get(ctx, tenant, assetID)
	if err != nil {
		return nil, execute.VaultRef{}, fmt.Errorf("asset %s has no manifest: %w", assetID, err)
	}
	vid := m.GetVault().GetVaultObjectId()
	if vid == "" {
		return nil, execute.VaultRef{}, fmt.Errorf("asset %s has no vault copy: %w", assetID, vault.ErrNotFound)
	}
	rc, o, err := v.c.vault.Open(ctx, tenant, vid)
	if err != nil {
		return nil, execute.VaultRef{}, err
	}
	return rc, execute.VaultRef{ID: o.ID, SHA256: o.SHA256.String(), Size: o.SizeBytes}, nil
}
