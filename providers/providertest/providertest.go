// Package providertest is the conformance suite every provider passes, the
// built-ins and third-party plugins alike. Run it from a test:
//
//	func TestConformance(t *testing.T) {
//		providertest.Run(t, providertest.Harness{
//			Open: func(t testing.TB) (providers.Provider, string) {
//				p, err := myprovider.New(context.Background(), providers.Config{"root": t.TempDir()})
//				...
//				return p, "inbox"
//			},
//		})
//	}
//
// Run the same suite against a plugin build of the provider by opening it
// through svc.dev/svc/providers/plugin.
package providertest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"reflect"
	"slices"
	"testing"
	"time"

	"svc.dev/svc/providers"
)

// Harness describes the provider under test.
type Harness struct {
	// Open returns a provider instance and the ref of a source that holds
	// at least MinObjects objects. Each call must return fresh state (a new
	// directory, a new bucket): subtests change the source.
	Open func(t testing.TB) (p providers.Provider, sourceRef string)
	// MinObjects is how many objects the source is expected to hold; 0
	// means 3.
	MinObjects int
	// FetchSample is how many objects to fetch and verify; 0 means 5.
	FetchSample int
	// WritePath is the destination path of the test write; empty means
	// "providertest/written.bin".
	WritePath string
	// Timeout bounds each subtest; 0 means one minute.
	Timeout time.Duration
}

func (h *Harness) defaults() {
	if h.MinObjects == 0 {
		h.MinObjects = 3
	}
	if h.FetchSample == 0 {
		h.FetchSample = 5
	}
	if h.WritePath == "" {
		h.WritePath = "providertest/written.bin"
	}
	if h.Timeout == 0 {
		h.Timeout = time.Minute
	}
}

// Run runs the conformance suite.
func Run(t *testing.T, h Harness) {
	t.Helper()
	h.defaults()
	tests := []struct {
		name string
		fn   func(ctx context.Context, t *testing.T, p providers.Provider, src string)
	}{
		{"Describe", h.testDescribe},
		{"List", h.testList},
		{"ListPageSize", h.testListPageSize},
		{"ListBadPageToken", h.testBadPageToken},
		{"Fetch", h.testFetch},
		{"FetchVersionMismatch", h.testFetchVersionMismatch},
		{"FetchNotFound", h.testFetchNotFound},
		{"FetchBatch", h.testFetchBatch},
		{"ChangesSinceCurrent", h.testChangesSinceCurrent},
		{"Concurrent", h.testConcurrent},
		{"Write", h.testWrite},
		{"Trash", h.testTrash},
		{"TrashBatch", h.testTrashBatch},
		{"Remove", h.testRemove},
		{"Quota", h.testQuota},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), h.Timeout)
			defer cancel()
			p, src := h.Open(t)
			t.Cleanup(func() { _ = providers.CloseProvider(p) })
			tc.fn(ctx, t, p, src)
		})
	}
}

// ListAll pages through a whole source with the given page size and returns
// its objects and the marker of the last page. It fails t on any error.
func ListAll(ctx context.Context, t testing.TB, p providers.Provider, src string, pageSize int) ([]providers.Object, providers.Marker) {
	t.Helper()
	var all []providers.Object
	token := ""
	for pages := 0; ; pages++ {
		if pages > 1_000_000 {
			t.Fatalf("list %q: more than a million pages", src)
		}
		page, err := p.List(ctx, providers.ListRequest{SourceRef: src, PageToken: token, PageSize: pageSize})
		if err != nil {
			t.Fatalf("list %q (token %q): %v", src, token, err)
		}
		if len(page.Objects) > providers.ClampPageSize(pageSize) {
			t.Fatalf("list %q: page of %d objects for page size %d", src, len(page.Objects), pageSize)
		}
		all = append(all, page.Objects...)
		if page.NextPageToken == "" {
			if err := providers.ValidateMarker(page.Marker); err != nil {
				t.Fatalf("list %q: last page: %v", src, err)
			}
			return all, page.Marker
		}
		if page.NextPageToken == token {
			t.Fatalf("list %q: page token %q repeats", src, token)
		}
		token = page.NextPageToken
	}
}

func ids(objs []providers.Object) []string {
	out := make([]string, len(objs))
	for i, o := range objs {
		out[i] = o.ID
	}
	return out
}

func (h *Harness) testDescribe(ctx context.Context, t *testing.T, p providers.Provider, _ string) {
	d, err := p.Describe(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := providers.ValidateDescription(d); err != nil {
		t.Fatalf("description: %v", err)
	}
	caps := providers.CapabilitiesOf(p)
	if !sameSet(caps, d.Capabilities) {
		t.Errorf("description declares capabilities %v, provider implements %v", d.Capabilities, caps)
	}
	for _, c := range providers.OperationClassesFor(caps) {
		if !slices.Contains(d.OperationClasses, c) {
			t.Errorf("operation class %q follows from the capabilities but is not declared", c)
		}
	}
	for _, c := range d.OperationClasses {
		if c != providers.Automate && c != providers.BillableExecute && !slices.Contains(providers.OperationClassesFor(caps), c) {
			t.Errorf("operation class %q is declared without the capability it needs", c)
		}
	}
	d2, err := p.Describe(ctx)
	if err != nil || d2.Name != d.Name || !slices.Equal(d2.Capabilities, d.Capabilities) {
		t.Errorf("second Describe differs: %+v, %v", d2, err)
	}
}

func sameSet[T comparable](a, b []T) bool {
	if len(a) != len(b) {
		return false
	}
	for _, v := range a {
		if !slices.Contains(b, v) {
			return false
		}
	}
	return true
}

func (h *Harness) testList(ctx context.Context, t *testing.T, p providers.Provider, src string) {
	d, err := p.Describe(ctx)
	if err != nil {
		t.Fatal(err)
	}
	objs, marker := ListAll(ctx, t, p, src, 2)
	if len(objs) < h.MinObjects {
		t.Fatalf("listed %d objects, want at least %d", len(objs), h.MinObjects)
	}
	seen := make(map[string]bool, len(objs))
	for _, o := range objs {
		if err := providers.ValidateObject(o); err != nil {
			t.Errorf("invalid object: %v", err)
		}
		if seen[o.ID] {
			t.Errorf("object %q listed twice", o.ID)
		}
		seen[o.ID] = true
		if !slices.Contains(d.ObjectKinds, o.Kind) {
			t.Errorf("object %q has kind %q, not among the declared %v", o.ID, o.Kind, d.ObjectKinds)
		}
	}
	if !slices.Contains(d.MarkerKinds, marker.Kind) {
		t.Errorf("marker kind %q is not among the declared %v", marker.Kind, d.MarkerKinds)
	}
	// Listing has no side effects: a second listing, with another page
	// size, gives the same objects in the same order and the same marker.
	again, marker2 := ListAll(ctx, t, p, src, 0)
	if !slices.Equal(ids(objs), ids(again)) {
		t.Errorf("second listing differs:\n%v\n%v", ids(objs), ids(again))
	}
	if marker != marker2 {
		t.Errorf("marker moved without a change: %v then %v", marker, marker2)
	}
}

func (h *Harness) testListPageSize(ctx context.Context, t *testing.T, p providers.Provider, src string) {
	page, err := p.List(ctx, providers.ListRequest{SourceRef: src, PageSize: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Objects) > 1 {
		t.Errorf("page size 1 gave %d objects", len(page.Objects))
	}
	page, err = p.List(ctx, providers.ListRequest{SourceRef: src, PageSize: 1 << 30})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Objects) > providers.MaxPageSize {
		t.Errorf("huge page size gave %d objects, more than MaxPageSize", len(page.Objects))
	}
}

func (h *Harness) testBadPageToken(ctx context.Context, t *testing.T, p providers.Provider, src string) {
	_, err := p.List(ctx, providers.ListRequest{SourceRef: src, PageToken: "\x00not a token issued by this provider"})
	if !errors.Is(err, providers.ErrInvalidArgument) {
		t.Errorf("bad page token: got %v, want ErrInvalidArgument", err)
	}
}

// sample returns up to n fetchable objects, smallest first, so the suite
// stays fast on sources with large objects.
func sample(objs []providers.Object, n int) []providers.Object {
	var out []providers.Object
	for _, o := range objs {
		if o.Kind != providers.KindFolder {
			out = append(out, o)
		}
	}
	slices.SortStableFunc(out, func(a, b providers.Object) int { return int(min(max(a.SizeBytes-b.SizeBytes, -1), 1)) })
	return out[:min(n, len(out))]
}

func (h *Harness) testFetch(ctx context.Context, t *testing.T, p providers.Provider, src string) {
	objs, _ := ListAll(ctx, t, p, src, 0)
	for _, o := range sample(objs, h.FetchSample) {
		c, err := p.Fetch(ctx, providers.FetchRequest{SourceRef: src, ObjectID: o.ID, ExpectedVersion: o.Version})
		if err != nil {
			t.Errorf("fetch %q: %v", o.ID, err)
			continue
		}
		hash := sha256.New()
		n, err := io.Copy(hash, c.Body)
		_ = c.Body.Close()
		if err != nil {
			t.Errorf("fetch %q: read: %v", o.ID, err)
			continue
		}
		if c.Object.ID != o.ID || c.Object.Version != o.Version {
			t.Errorf("fetch %q: got object %q version %q, listed version %q", o.ID, c.Object.ID, c.Object.Version, o.Version)
		}
		if err := providers.ValidateObject(c.Object); err != nil {
			t.Errorf("fetch %q: %v", o.ID, err)
		}
		if n != c.Object.SizeBytes || n != o.SizeBytes {
			t.Errorf("fetch %q: read %d bytes, fetched object says %d, listing said %d", o.ID, n, c.Object.SizeBytes, o.SizeBytes)
		}
		sum := hex.EncodeToString(hash.Sum(nil))
		for _, want := range []string{o.SHA256, c.Object.SHA256} {
			if want != "" && want != sum {
				t.Errorf("fetch %q: content sha256 %s, object says %s", o.ID, sum, want)
			}
		}
	}
}

func (h *Harness) testFetchVersionMismatch(ctx context.Context, t *testing.T, p providers.Provider, src string) {
	objs, _ := ListAll(ctx, t, p, src, 0)
	o := sample(objs, 1)[0]
	c, err := p.Fetch(ctx, providers.FetchRequest{SourceRef: src, ObjectID: o.ID, ExpectedVersion: o.Version + "-moved"})
	if err == nil {
		_ = c.Body.Close()
		t.Fatalf("fetch with a moved version succeeded")
	}
	var vm *providers.VersionMismatchError
	if !errors.Is(err, providers.ErrVersionMismatch) || !errors.As(err, &vm) {
		t.Fatalf("fetch with a moved version: got %v (%T), want a *VersionMismatchError", err, err)
	}
	if vm.ObjectID != o.ID {
		t.Errorf("mismatch names object %q, want %q", vm.ObjectID, o.ID)
	}
}

func (h *Harness) testFetchNotFound(ctx context.Context, t *testing.T, p providers.Provider, src string) {
	c, err := p.Fetch(ctx, providers.FetchRequest{SourceRef: src, ObjectID: "providertest-no-such-object"})
	if err == nil {
		_ = c.Body.Close()
	}
	if !errors.Is(err, providers.ErrNotFound) {
		t.Errorf("fetch of a missing object: got %v, want ErrNotFound", err)
	}
}

// testFetchBatch checks BatchFetcher: fn called once per request, in order;
// each request judged on its own (a moved version and a missing object among
// good ones); what it fetched the same object Fetch returns, with content of
// its declared size and SHA-256; no more than MaxBatchSize requests.
func (h *Harness) testFetchBatch(ctx context.Context, t *testing.T, p providers.Provider, src string) {
	b, ok := providers.AsBatchFetcher(p)
	if !ok {
		t.Skip("provider does not fetch in batches")
	}
	calls := 0
	if err := b.FetchBatch(ctx, nil, func(int, providers.FetchOutcome) { calls++ }); err != nil || calls != 0 {
		t.Fatalf("empty batch: %v, %d outcomes", err, calls)
	}
	objs, _ := ListAll(ctx, t, p, src, 0)
	good := sample(objs, h.FetchSample)
	if len(good) == 0 {
		t.Skip("the source has no objects")
	}
	reqs := []providers.FetchRequest{
		{SourceRef: src, ObjectID: good[0].ID, ExpectedVersion: good[0].Version + "-moved"},
		{SourceRef: src, ObjectID: "svc-providertest-missing-" + good[0].ID},
	}
	for _, o := range good {
		reqs = append(reqs, providers.FetchRequest{SourceRef: src, ObjectID: o.ID, ExpectedVersion: o.Version})
	}
	outs := make([]providers.FetchOutcome, 0, len(reqs))
	err := b.FetchBatch(ctx, reqs, func(i int, out providers.FetchOutcome) {
		if i != len(outs) {
			t.Errorf("outcome of request %d came after %d outcomes", i, len(outs))
		}
		outs = append(outs, out)
	})
	if err != nil {
		t.Fatalf("fetch batch: %v", err)
	}
	if len(outs) != len(reqs) {
		t.Fatalf("fetch batch: %d outcomes for %d requests", len(outs), len(reqs))
	}
	if !errors.Is(outs[0].Err, providers.ErrVersionMismatch) {
		t.Errorf("moved version: got %v, want ErrVersionMismatch", outs[0].Err)
	}
	if !errors.Is(outs[1].Err, providers.ErrNotFound) {
		t.Errorf("missing object: got %v, want ErrNotFound", outs[1].Err)
	}
	for k, o := range good {
		out := outs[k+2]
		switch {
		case out.Err != nil:
			t.Errorf("fetch %q in a batch: %v", o.ID, out.Err)
			continue
		case out.Deferred:
			if o.SizeBytes <= 64<<10 {
				t.Errorf("fetch %q (%d bytes) in a batch: deferred", o.ID, o.SizeBytes)
			}
			continue
		}
		if err := providers.ValidateObject(out.Object); err != nil {
			t.Errorf("fetch %q in a batch: %v", o.ID, err)
		}
		if out.Object.ID != o.ID || out.Object.Version != o.Version {
			t.Errorf("fetch %q in a batch: got object %q version %q, listed version %q", o.ID, out.Object.ID, out.Object.Version, o.Version)
		}
		if int64(len(out.Content)) != out.Object.SizeBytes || out.Object.SizeBytes != o.SizeBytes {
			t.Errorf("fetch %q in a batch: %d bytes, object says %d, listing said %d", o.ID, len(out.Content), out.Object.SizeBytes, o.SizeBytes)
		}
		sum := sha256.Sum256(out.Content)
		for _, want := range []string{o.SHA256, out.Object.SHA256} {
			if want != "" && want != hex.EncodeToString(sum[:]) {
				t.Errorf("fetch %q in a batch: content sha256 %x, object says %s", o.ID, sum, want)
			}
		}
		c, err := p.Fetch(ctx, providers.FetchRequest{SourceRef: src, ObjectID: o.ID, ExpectedVersion: o.Version})
		if err != nil {
			t.Errorf("fetch %q: %v", o.ID, err)
			continue
		}
		_ = c.Body.Close()
		f := c.Object
		if f.Kind != out.Object.Kind || f.Name != out.Object.Name || f.MIMEType != out.Object.MIMEType || !reflect.DeepEqual(f.Message, out.Object.Message) {
			t.Errorf("fetch %q: a batch returned %+v, Fetch %+v", o.ID, out.Object, f)
		}
	}
	over := make([]providers.FetchRequest, providers.MaxBatchSize+1)
	for i := range over {
		over[i] = reqs[2]
	}
	calls = 0
	if err := b.FetchBatch(ctx, over, func(int, providers.FetchOutcome) { calls++ }); !errors.Is(err, providers.ErrInvalidArgument) || calls != 0 {
		t.Errorf("a batch of %d: %v after %d outcomes, want ErrInvalidArgument and none", len(over), err, calls)
	}
}
