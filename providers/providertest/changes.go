package providertest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"slices"
	"sync"
	"testing"

	"svc.dev/svc/providers"
)

// changesSince lists all changes since m. It reports ok=false when the
// provider answers ErrMarkerExpired.
func changesSince(ctx context.Context, t testing.TB, p providers.Provider, src string, m providers.Marker) ([]providers.Change, providers.Marker, bool) {
	t.Helper()
	var all []providers.Change
	token := ""
	for {
		page, err := p.Changes(ctx, providers.ChangesRequest{SourceRef: src, Since: m, PageToken: token, PageSize: 3})
		if errors.Is(err, providers.ErrMarkerExpired) {
			return nil, providers.Marker{}, false
		}
		if err != nil {
			t.Fatalf("changes since %v: %v", m, err)
		}
		for _, c := range page.Changes {
			if c.ObjectID == "" || (c.Type == providers.ChangeUpsert && (c.Object == nil || c.Object.ID != c.ObjectID)) {
				t.Errorf("malformed change %+v", c)
			}
		}
		all = append(all, page.Changes...)
		if page.NextPageToken == "" {
			if err := providers.ValidateMarker(page.Marker); err != nil {
				t.Fatalf("changes: last page: %v", err)
			}
			return all, page.Marker, true
		}
		token = page.NextPageToken
	}
}

func (h *Harness) testChangesSinceCurrent(ctx context.Context, t *testing.T, p providers.Provider, src string) {
	_, m := ListAll(ctx, t, p, src, 0)
	changes, m2, ok := changesSince(ctx, t, p, src, m)
	if !ok {
		t.Fatalf("changes since the current marker: ErrMarkerExpired; a provider must at least recognise its current marker")
	}
	if len(changes) != 0 {
		t.Errorf("changes since the current marker: %d changes, want none", len(changes))
	}
	if m2 != m {
		t.Errorf("changes moved the marker without a change: %v then %v", m, m2)
	}
	_, err := p.Changes(ctx, providers.ChangesRequest{SourceRef: src, Since: providers.Marker{Kind: m.Kind, Value: m.Value + "-bogus"}})
	if !errors.Is(err, providers.ErrMarkerExpired) && !errors.Is(err, providers.ErrInvalidArgument) {
		t.Errorf("changes since a bogus marker: got %v, want ErrMarkerExpired or ErrInvalidArgument", err)
	}
}

func (h *Harness) testConcurrent(ctx context.Context, t *testing.T, p providers.Provider, src string) {
	objs, _ := ListAll(ctx, t, p, src, 0)
	smp := sample(objs, 3)
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for i := range 8 {
		wg.Go(func() {
			if i%2 == 0 {
				if _, err := p.List(ctx, providers.ListRequest{SourceRef: src, PageSize: 5}); err != nil {
					errs <- err
				}
				return
			}
			o := smp[i%len(smp)]
			c, err := p.Fetch(ctx, providers.FetchRequest{SourceRef: src, ObjectID: o.ID})
			if err != nil {
				errs <- err
				return
			}
			defer c.Body.Close()
			if _, err := io.Copy(io.Discard, c.Body); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func (h *Harness) testWrite(ctx context.Context, t *testing.T, p providers.Provider, src string) {
	w, ok := providers.AsWriter(p)
	if !ok {
		t.Skip("provider does not write")
	}
	_, before := ListAll(ctx, t, p, src, 0)
	data := bytes.Repeat([]byte("svc providertest content\n"), 4000)
	sum := sha256.Sum256(data)
	digest := hex.EncodeToString(sum[:])

	bad := providers.WriteRequest{SourceRef: src, Path: h.WritePath + ".bad", Kind: providers.KindFile, SizeBytes: -1, SHA256: hex.EncodeToString(make([]byte, 32)), Mode: providers.WriteCopy}
	if _, err := w.Write(ctx, bad, bytes.NewReader(data)); !errors.Is(err, providers.ErrInvalidData) {
		t.Errorf("write with a wrong sha256: got %v, want ErrInvalidData", err)
	}

	req := providers.WriteRequest{SourceRef: src, Path: h.WritePath, Kind: providers.KindFile, MIMEType: "application/octet-stream", SizeBytes: int64(len(data)), SHA256: digest, Mode: providers.WriteCopy}
	o, err := w.Write(ctx, req, bytes.NewReader(data))
	if err != nil {
		t.Fatalf("write: %v", err)
	}
	if err := providers.ValidateObject(o); err != nil {
		t.Errorf("written object: %v", err)
	}
	if o.SizeBytes != int64(len(data)) || (o.SHA256 != "" && o.SHA256 != digest) {
		t.Errorf("written object says %d bytes sha256 %q, wrote %d bytes %s", o.SizeBytes, o.SHA256, len(data), digest)
	}
	c, err := p.Fetch(ctx, providers.FetchRequest{SourceRef: src, ObjectID: o.ID, ExpectedVersion: o.Version})
	if err != nil {
		t.Fatalf("fetch written object: %v", err)
	}
	got, err := io.ReadAll(c.Body)
	_ = c.Body.Close()
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("fetch written object: %d bytes, err %v; content differs", len(got), err)
	}
	objs, after := ListAll(ctx, t, p, src, 0)
	if !slices.Contains(ids(objs), o.ID) {
		t.Errorf("written object %q not listed", o.ID)
	}
	if after == before {
		t.Errorf("marker did not move after a write: %v", after)
	}
	for _, o := range objs {
		if o.Path == bad.Path && bad.Path != "" {
			t.Errorf("a rejected write left %q behind", bad.Path)
		}
	}
}

func (h *Harness) testTrash(ctx context.Context, t *testing.T, p providers.Provider, src string) {
	tr, ok := providers.AsTrasher(p)
	if !ok {
		t.Skip("provider does not trash")
	}
	objs, before := ListAll(ctx, t, p, src, 0)
	o := sample(objs, 1)[0]
	_, err := tr.Trash(ctx, providers.ActionRequest{SourceRef: src, ObjectID: o.ID, ExpectedVersion: o.Version + "-moved"})
	if !errors.Is(err, providers.ErrVersionMismatch) {
		t.Fatalf("trash with a moved version: got %v, want ErrVersionMismatch", err)
	}
	res, err := tr.Trash(ctx, providers.ActionRequest{SourceRef: src, ObjectID: o.ID, ExpectedVersion: o.Version})
	if err != nil {
		t.Fatalf("trash %q: %v", o.ID, err)
	}
	after, m := ListAll(ctx, t, p, src, 0)
	if slices.Contains(ids(after), o.ID) {
		t.Errorf("trashed object %q still listed", o.ID)
	}
	if m == before {
		t.Errorf("marker did not move after a trash")
	}
	if changes, _, ok := changesSince(ctx, t, p, src, before); ok {
		if !slices.ContainsFunc(changes, func(c providers.Change) bool { return c.ObjectID == o.ID && c.Type == providers.ChangeDelete }) {
			t.Errorf("changes since the trash do not report %q deleted: %+v", o.ID, changes)
		}
	}
	u, ok := providers.AsUntrasher(p)
	if !ok {
		return
	}
	if !res.Restorable {
		t.Errorf("trash result not restorable though the provider untrashes")
	}
	back, err := u.Untrash(ctx, providers.UntrashRequest{SourceRef: src, ObjectID: o.ID, ResultID: res.ResultID})
	if err != nil {
		t.Fatalf("untrash %q: %v", o.ID, err)
	}
	if back.ID != o.ID || back.SizeBytes != o.SizeBytes {
		t.Errorf("untrash gave %q (%d bytes), want %q (%d bytes)", back.ID, back.SizeBytes, o.ID, o.SizeBytes)
	}
	restored, _ := ListAll(ctx, t, p, src, 0)
	if !slices.Contains(ids(restored), o.ID) {
		t.Errorf("untrashed object %q not listed", o.ID)
	}
	if _, err := u.Untrash(ctx, providers.UntrashRequest{SourceRef: src, ObjectID: o.ID, ResultID: res.ResultID}); err != nil {
		t.Errorf("second untrash (must be idempotent): %v", err)
	}
}

// testTrashBatch checks BatchTrasher: one outcome per request in order, each
// request judged on its own (a moved version, a missing object and a good one
// in the same batch), and what it trashed gone from the listing.
func (h *Harness) testTrashBatch(ctx context.Context, t *testing.T, p providers.Provider, src string) {
	b, ok := providers.AsBatchTrasher(p)
	if !ok {
		t.Skip("provider does not trash in batches")
	}
	if outs, err := b.TrashBatch(ctx, nil); err != nil || len(outs) != 0 {
		t.Fatalf("empty batch: %v, %d outcomes", err, len(outs))
	}
	objs, _ := ListAll(ctx, t, p, src, 0)
	if len(objs) < 2 {
		t.Skip("the source has fewer than two objects")
	}
	two := sample(objs, 2)
	moved, good := two[0], two[1]
	missing := "svc-providertest-missing-" + good.ID
	outs, err := b.TrashBatch(ctx, []providers.ActionRequest{
		{SourceRef: src, ObjectID: moved.ID, ExpectedVersion: moved.Version + "-moved"},
		{SourceRef: src, ObjectID: good.ID, ExpectedVersion: good.Version},
		{SourceRef: src, ObjectID: missing},
	})
	if err != nil {
		t.Fatalf("trash batch: %v", err)
	}
	if len(outs) != 3 {
		t.Fatalf("trash batch: %d outcomes for 3 requests", len(outs))
	}
	if !errors.Is(outs[0].Err, providers.ErrVersionMismatch) {
		t.Errorf("moved version: got %v, want ErrVersionMismatch", outs[0].Err)
	}
	if outs[1].Err != nil {
		t.Errorf("trash %q in a batch: %v", good.ID, outs[1].Err)
	}
	if !errors.Is(outs[2].Err, providers.ErrNotFound) {
		t.Errorf("missing object: got %v, want ErrNotFound", outs[2].Err)
	}
	after, _ := ListAll(ctx, t, p, src, 0)
	if slices.Contains(ids(after), good.ID) {
		t.Errorf("object %q trashed in a batch is still listed", good.ID)
	}
	if !slices.Contains(ids(after), moved.ID) {
		t.Errorf("object %q refused for its version is gone", moved.ID)
	}
	u, ok := providers.AsUntrasher(p)
	if !ok {
		return
	}
	if _, err := u.Untrash(ctx, providers.UntrashRequest{SourceRef: src, ObjectID: good.ID, ResultID: outs[1].Result.ResultID}); err != nil {
		t.Errorf("untrash %q trashed in a batch: %v", good.ID, err)
	}
}

func (h *Harness) testRemove(ctx context.Context, t *testing.T, p providers.Provider, src string) {
	r, ok := providers.AsRemover(p)
	if !ok {
		t.Skip("provider does not remove")
	}
	objs, _ := ListAll(ctx, t, p, src, 0)
	o := sample(objs, 1)[0]
	if _, err := r.Remove(ctx, providers.ActionRequest{SourceRef: src, ObjectID: o.ID, ExpectedVersion: o.Version + "-moved"}); !errors.Is(err, providers.ErrVersionMismatch) {
		t.Fatalf("remove with a moved version: got %v, want ErrVersionMismatch", err)
	}
	if _, err := r.Remove(ctx, providers.ActionRequest{SourceRef: src, ObjectID: o.ID, ExpectedVersion: o.Version}); err != nil {
		t.Fatalf("remove %q: %v", o.ID, err)
	}
	c, err := p.Fetch(ctx, providers.FetchRequest{SourceRef: src, ObjectID: o.ID})
	if err == nil {
		_ = c.Body.Close()
	}
	if !errors.Is(err, providers.ErrNotFound) {
		t.Errorf("fetch after remove: got %v, want ErrNotFound", err)
	}
}

func (h *Harness) testQuota(ctx context.Context, t *testing.T, p providers.Provider, src string) {
	q, ok := providers.AsQuotaer(p)
	if !ok {
		t.Skip("provider does not report quota")
	}
	u, err := q.Quota(ctx, src)
	if err != nil {
		t.Fatal(err)
	}
	if u.UsedBytes < 0 || u.LimitBytes < 0 || u.TrashBytes < 0 || u.ObservedAt.IsZero() {
		t.Errorf("quota %+v: negative figures or no observation time", u)
	}
	if u.LimitBytes > 0 && u.UsedBytes > u.LimitBytes*2 {
		t.Errorf("quota %+v: implausible", u)
	}
}
