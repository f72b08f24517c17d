package execute_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"iter"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/protobuf/proto"

	"svc.dev/svc/execute"
	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/providers"
)

// memStore is an in-memory execute.Store. crashAfter > 0 makes the k-th recorded transition
// and everything after it fail, as if the process died: nothing more becomes durable. A
// crash inside a group of transitions keeps the ones before it (a prefix), which is more
// than a real store allows (bbolt commits a group whole or not at all) and so tests more
// crash points.
type memStore struct {
	mu         sync.Mutex
	executions map[string]*svcv1.Execution
	plans      map[string]*svcv1.Plan
	journal    map[string][]execute.Transition
	records    int
	crashAfter int
	crashed    atomic.Bool
	crashEnd   int // EndExecution calls to fail
	ends       int // EndExecution calls that succeeded
	// violations are the times an execution was stored terminal without its receipt id or
	// finished_at: a client polling it would have seen that.
	violations []string
}

var errCrashed = errors.New("crashed")

func newMemStore() *memStore {
	return &memStore{executions: map[string]*svcv1.Execution{}, plans: map[string]*svcv1.Plan{}, journal: map[string][]execute.Transition{}}
}

func (m *memStore) dead() error {
	if m.crashed.Load() {
		return errCrashed
	}
	return nil
}

func (m *memStore) BeginExecution(_ context.Context, _, planID string, fn func(*svcv1.Plan) error, e *svcv1.Execution) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.dead(); err != nil {
		return err
	}
	c := proto.Clone(m.plans[planID]).(*svcv1.Plan)
	if err := fn(c); err != nil {
		return err
	}
	m.plans[planID] = c
	m.executions[e.Id] = proto.Clone(e).(*svcv1.Execution)
	return nil
}

func (m *memStore) UpdateExecution(_ context.Context, _, id string, fn func(*svcv1.Execution) error) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.dead(); err != nil {
		return err
	}
	x, ok := m.executions[id]
	if !ok {
		return errors.New("no execution")
	}
	c := proto.Clone(x).(*svcv1.Execution)
	if err := fn(c); err != nil {
		return err
	}
	switch c.GetStatus() {
	case svcv1.ExecutionStatus_EXECUTION_STATUS_QUEUED, svcv1.ExecutionStatus_EXECUTION_STATUS_RUNNING:
	default:
		// The one exception: an execution abandoned without a receipt ends failed, saying why.
		noReceipt := c.GetStatus() == svcv1.ExecutionStatus_EXECUTION_STATUS_FAILED && c.GetFinishedAt() != nil &&
			slices.ContainsFunc(c.GetErrors(), func(s string) bool { return strings.HasPrefix(s, "no receipt: ") })
		if !noReceipt && (c.GetReceiptId() == "" || c.GetFinishedAt() == nil) {
			m.violations = append(m.violations, fmt.Sprintf("%s stored %v without its receipt (%q) or finished_at (%v)",
				id, c.GetStatus(), c.GetReceiptId(), c.GetFinishedAt()))
		}
	}
	m.executions[id] = c
	return nil
}

// EndExecution is UpdateExecution; crashEnd > 0 makes that many calls fail as if the process
// died between the receipt and the execution's end.
func (m *memStore) EndExecution(ctx context.Context, tenant, id string, fn func(*svcv1.Execution) error) error {
	m.mu.Lock()
	if m.crashEnd > 0 {
		m.crashEnd--
		m.crashed.Store(true)
		m.mu.Unlock()
		return errCrashed
	}
	m.ends++
	m.mu.Unlock()
	return m.UpdateExecution(ctx, tenant, id, fn)
}

// finished returns the execution once it has ended, else nil.
func (m *memStore) finished(id string) *svcv1.Execution {
	m.mu.Lock()
	defer m.mu.Unlock()
	if x := m.executions[id]; x.GetFinishedAt() != nil {
		return x
	}
	return nil
}

func (m *memStore) Unfinished(context.Context) ([][2]string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out [][2]string
	for id, x := range m.executions {
		if s := x.GetStatus(); s == svcv1.ExecutionStatus_EXECUTION_STATUS_QUEUED || s == svcv1.ExecutionStatus_EXECUTION_STATUS_RUNNING {
			out = append(out, [2]string{"t", id})
		}
	}
	return out, nil
}

func (m *memStore) PlanHeader(_ context.Context, _, id string) (*svcv1.Plan, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	p := proto.Clone(m.plans[id]).(*svcv1.Plan)
	p.Objects = nil
	return p, nil
}

// memChunk is how many objects a chunk of PlanObjects holds: small, so that tests cross chunks.
const memChunk = 3

func (m *memStore) PlanObjects(_ context.Context, _, id string) iter.Seq2[[]*svcv1.PlanObject, error] {
	return func(yield func([]*svcv1.PlanObject, error) bool) {
		m.mu.Lock()
		objs := proto.Clone(m.plans[id]).(*svcv1.Plan).GetObjects()
		m.mu.Unlock()
		for len(objs) > 0 {
			n := min(memChunk, len(objs))
			if !yield(objs[:n], nil) {
				return
			}
			objs = objs[n:]
		}
	}
}

func (m *memStore) ScanJournal(ctx context.Context, tenant, exe string, fn func(execute.Transition) error) error {
	j, _ := m.Journal(ctx, tenant, exe)
	for _, t := range j {
		if err := fn(t); err != nil {
			return err
		}
	}
	return nil
}

func (m *memStore) UpdatePlan(_ context.Context, _, id string, fn func(*svcv1.Plan) error) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.dead(); err != nil {
		return err
	}
	c := proto.Clone(m.plans[id]).(*svcv1.Plan)
	if err := fn(c); err != nil {
		return err
	}
	m.plans[id] = c
	return nil
}

func (m *memStore) Record(_ context.Context, _, exe string, ts ...execute.Transition) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, t := range ts {
		if err := m.dead(); err != nil {
			return err
		}
		m.records++
		if m.crashAfter > 0 && m.records >= m.crashAfter {
			m.crashed.Store(true)
			return errCrashed
		}
		m.journal[exe] = append(m.journal[exe], t)
	}
	return nil
}

func (m *memStore) Journal(_ context.Context, _, exe string) ([]execute.Transition, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.journal[exe]), nil
}

// fakeSource is a provider of objects with content; it can change versions, fail transiently,
// and refuses everything once the store has "crashed".
type fakeSource struct {
	mu        sync.Mutex
	content   map[string][]byte
	version   map[string]string
	trash     map[string]int // successful trashes per object
	messages  map[string]*providers.MessageHeaders
	transient int             // fail every Nth call ...
	calls     int             //
	failed    map[string]bool // ... but never an object's call right after one of its own failed
	store     *memStore
	onTrash   func(n int) // called with f.mu held after each successful trash, n trashes so far
}

func newFakeSource(n int) *fakeSource {
	f := &fakeSource{content: map[string][]byte{}, version: map[string]string{}, trash: map[string]int{}}
	for i := range n {
		id := fmt.Sprintf("obj-%03d", i)
		f.content[id] = bytes.Repeat([]byte(id), 10+i)
		f.version[id] = "v1"
	}
	return f
}

// gate fails calls once the store has crashed, and every transient-th call, except a call for
// an object whose previous call failed: concurrent work on other objects cannot then make all
// of one object's retries fail, so its 5 attempts always get through.
func (f *fakeSource) gate(id string) error {
	if f.store != nil && f.store.crashed.Load() {
		return errCrashed
	}
	if f.failed == nil {
		f.failed = map[string]bool{}
	}
	f.calls++
	fail := f.transient > 0 && f.calls%f.transient == 0 && !f.failed[id]
	f.failed[id] = fail
	if fail {
		return fmt.Errorf("flaky: %w", providers.ErrTransient)
	}
	return nil
}

func (f *fakeSource) Describe(context.Context) (providers.Description, error) {
	return providers.Description{Name: providers.VendorDLocal, ProtocolVersion: 1, Capabilities: []providers.Capability{providers.CapTrash}}, nil
}
func (f *fakeSource) List(context.Context, providers.ListRequest) (providers.Page, error) {
	return providers.Page{}, providers.ErrUnsupported
}
func (f *fakeSource) Changes(context.Context, providers.ChangesRequest) (providers.ChangePage, error) {
	return providers.ChangePage{}, providers.ErrUnsupported
}

func (f *fakeSource) Fetch(_ context.Context, req providers.FetchRequest) (*providers.Content, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.gate(req.ObjectID); err != nil {
		return nil, err
	}
	c, ok := f.content[req.ObjectID]
	if !ok {
		return nil, providers.ErrNotFound
	}
	if req.ExpectedVersion != "" && f.version[req.ObjectID] != req.ExpectedVersion {
		return nil, &providers.VersionMismatchError{ObjectID: req.ObjectID, Expected: req.ExpectedVersion, Actual: f.version[req.ObjectID]}
	}
	return &providers.Content{Object: providers.Object{ID: req.ObjectID, Version: f.version[req.ObjectID], SizeBytes: int64(len(c)), Message: f.messages[req.ObjectID]},
		Body: io.NopCloser(bytes.NewReader(c))}, nil
}

func (f *fakeSource) Trash(_ context.Context, req providers.ActionRequest) (providers.ActionResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.gate(req.ObjectID); err != nil {
		return providers.ActionResult{}, err
	}
	if _, ok := f.content[req.ObjectID]; !ok {
		return providers.ActionResult{}, providers.ErrNotFound
	}
	if req.ExpectedVersion != "" && f.version[req.ObjectID] != req.ExpectedVersion {
		return providers.ActionResult{}, &providers.VersionMismatchError{ObjectID: req.ObjectID, Expected: req.ExpectedVersion, Actual: f.version[req.ObjectID]}
	}
	delete(f.content, req.ObjectID)
	f.trash[req.ObjectID]++
	if f.onTrash != nil {
		f.onTrash(len(f.trash))
	}
	return providers.ActionResult{ResultID: "trash:" + req.ObjectID, Restorable: true}, nil
}

func (f *fakeSource) sha(id string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	sum := sha256.Sum256(f.content[id])
	return hex.EncodeToString(sum[:])
}

// fakeSources opens the fake source for every source id, and dst for destination ids.
type fakeSources struct {
	src   *fakeSource
	dst   providers.Provider
	batch *batchSource // when set, the source trashes in batches
}

func (s fakeSources) Source(_ context.Context, _ string, id string) (providers.Provider, string, error) {
	if strings.HasPrefix(id, "dst_") {
		if s.dst == nil {
			return nil, "", providers.ErrNotFound
		}
		return s.dst, "", nil
	}
	if s.batch != nil {
		return s.batch, "ref", nil
	}
	return s.src, "ref", nil
}

// memVault keeps content by SHA-256 and verifies what it stores.
type memVault struct {
	mu      sync.Mutex
	blobs   map[string][]byte
	byAsset map[string]string // asset id -> sha256 of its committed copy
	store   *memStore
}

func (v *memVault) Store(_ context.Context, _ string, a execute.Asset, body io.Reader, verifying func() error) (execute.VaultRef, error) {
	data, err := io.ReadAll(body)
	if err != nil {
		return execute.VaultRef{}, err
	}
	if err := verifying(); err != nil {
		return execute.VaultRef{}, err
	}
	if v.store != nil && v.store.crashed.Load() {
		return execute.VaultRef{}, errCrashed
	}
	sum := sha256.Sum256(data)
	h := hex.EncodeToString(sum[:])
	v.mu.Lock()
	v.blobs[h] = data
	if v.byAsset == nil {
		v.byAsset = map[string]string{}
	}
	v.byAsset[a.Object.GetAssetId()] = h
	v.mu.Unlock()
	return execute.VaultRef{ID: "vlt_" + h[:26], SHA256: h, Size: int64(len(data))}, nil
}

func (v *memVault) has(sha string) bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	b, ok := v.blobs[sha]
	sum := sha256.Sum256(b)
	return ok && hex.EncodeToString(sum[:]) == sha
}

// countingFinisher records receipts; like the server's, a receipt is made once per execution
// and a repeated Finish returns the one already made.
type countingFinisher struct {
	mu    sync.Mutex
	calls int
	made  map[string]execute.Receipt
	last  *svcv1.Execution
}

func (f *countingFinisher) Finish(_ context.Context, _ string, x *svcv1.Execution, _ *svcv1.Plan, _ iter.Seq2[[]*svcv1.PlanObject, error],
	_ func(func(execute.Transition) error) error) (execute.Receipt, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	f.last = x
	if r, ok := f.made[x.Id]; ok {
		return r, nil
	}
	if f.made == nil {
		f.made = map[string]execute.Receipt{}
	}
	r := execute.Receipt{ID: "rcp_" + x.Id[4:], FinishedAt: time.Now().UTC().Truncate(time.Millisecond)}
	f.made[x.Id] = r
	return r, nil
}

func (v *memVault) Read(_ context.Context, _, assetID string) (io.ReadCloser, execute.VaultRef, error) {
	if v.store != nil && v.store.crashed.Load() {
		return nil, execute.VaultRef{}, errCrashed
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	h, ok := v.byAsset[assetID]
	if !ok {
		return nil, execute.VaultRef{}, errors.New("no vault copy of " + assetID)
	}
	data := v.blobs[h]
	return io.NopCloser(bytes.NewReader(data)), execute.VaultRef{ID: "vlt_" + h[:26], SHA256: h, Size: int64(len(data))}, nil
}

// batchSource is a fakeSource that also trashes in batches. At each batch call it checks the
// journal rule: every object in the batch has its ACTION_QUEUED durable. wholeFail > 0 makes
// every wholeFail-th batch call trash its first half and then fail as a whole.
type batchSource struct {
	*fakeSource
	store     *memStore
	wholeFail int

	mu         sync.Mutex
	calls      int
	sizes      []int
	singles    atomic.Int64
	violations []string

	deferAbove   int64         // FetchBatch defers content larger than this (0: none)
	fetchDelay   time.Duration // a batch call's round trip
	fetchCalls   int
	fetchSizes   []int
	fetchSingles atomic.Int64
	deferred     atomic.Int64
}

// Fetch counts the fetches made one at a time.
func (b *batchSource) Fetch(ctx context.Context, req providers.FetchRequest) (*providers.Content, error) {
	b.fetchSingles.Add(1)
	return b.fakeSource.Fetch(ctx, req)
}

// FetchBatch fetches each request as Fetch does, deferring content over deferAbove bytes;
// wholeFail > 0 makes every wholeFail-th batch call answer its first half and then fail as a
// whole.
func (b *batchSource) FetchBatch(ctx context.Context, reqs []providers.FetchRequest, fn func(int, providers.FetchOutcome)) error {
	b.mu.Lock()
	b.fetchCalls++
	n := b.fetchCalls
	b.fetchSizes = append(b.fetchSizes, len(reqs))
	b.mu.Unlock()
	time.Sleep(b.fetchDelay)
	for i, q := range reqs {
		if b.wholeFail > 0 && n%b.wholeFail == 0 && i == len(reqs)/2 {
			return fmt.Errorf("batch call lost: %w", providers.ErrTransient)
		}
		c, err := b.fakeSource.Fetch(ctx, q)
		if err != nil {
			fn(i, providers.FetchOutcome{Err: err})
			continue
		}
		if b.deferAbove > 0 && c.Object.SizeBytes > b.deferAbove {
			c.Body.Close()
			b.deferred.Add(1)
			fn(i, providers.FetchOutcome{Deferred: true})
			continue
		}
		content, err := io.ReadAll(c.Body)
		c.Body.Close()
		if err != nil {
			return err
		}
		fn(i, providers.FetchOutcome{Object: c.Object, Content: content})
	}
	return nil
}

func (b *batchSource) Trash(ctx context.Context, req providers.ActionRequest) (providers.ActionResult, error) {
	b.singles.Add(1)
	return b.fakeSource.Trash(ctx, req)
}

func (b *batchSource) TrashBatch(ctx context.Context, reqs []providers.ActionRequest) ([]providers.ActionOutcome, error) {
	b.mu.Lock()
	b.calls++
	n := b.calls
	b.sizes = append(b.sizes, len(reqs))
	b.mu.Unlock()
	queued := map[string]bool{}
	b.store.mu.Lock()
	for _, ts := range b.store.journal {
		for _, t := range ts {
			if t.To == svcv1.StepState_STEP_STATE_SOURCE_ACTION_QUEUED {
				queued["obj-"+strings.TrimPrefix(t.AssetID, "ast_")] = true
			}
		}
	}
	b.store.mu.Unlock()
	for _, q := range reqs {
		if !queued[q.ObjectID] {
			b.mu.Lock()
			b.violations = append(b.violations, q.ObjectID+" sent to a batch trash before its ACTION_QUEUED was durable")
			b.mu.Unlock()
		}
	}
	if b.wholeFail > 0 && n%b.wholeFail == 0 {
		for _, q := range reqs[:len(reqs)/2] {
			_, _ = b.fakeSource.Trash(ctx, q)
		}
		return nil, fmt.Errorf("batch call lost: %w", providers.ErrTransient)
	}
	outs := make([]providers.ActionOutcome, len(reqs))
	for i, q := range reqs {
		outs[i].Result, outs[i].Err = b.fakeSource.Trash(ctx, q)
	}
	return outs, nil
}
