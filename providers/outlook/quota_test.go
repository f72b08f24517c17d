package outlook_test

import (
	"context"
	"testing"

	fake "svc.dev/svc/internal/vendorfake/graph"
	"svc.dev/svc/providers"
	"svc.dev/svc/providers/outlook"
	"svc.dev/svc/providers/providertest"
)

// TestQuota: the mailbox's use is the sum of its folders' sizes, the listed
// messages' and Deleted Items'; a trashed message moves its bytes into
// TrashBytes and leaves the total alone; there is no known limit.
func TestQuota(t *testing.T) {
	s := fake.Seeded(fake.Seed{Seed: 6, Messages: 25, Files: 1})
	defer s.Close()
	p, err := outlook.New(context.Background(), config(s))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	q, ok := providers.AsQuotaer(p)
	if !ok {
		t.Fatal("vendor_b_mail does not report quota")
	}
	objs, _ := providertest.ListAll(ctx, t, p, "default", 0)
	var listed int64
	for _, o := range objs {
		listed += o.SizeBytes
	}
	before, err := q.Quota(ctx, "default")
	if err != nil {
		t.Fatal(err)
	}
	var parts int64
	for _, v := range before.Breakdown {
		parts += v
	}
	if listed == 0 || before.UsedBytes != listed+before.TrashBytes || parts != before.UsedBytes || before.LimitBytes != 0 || before.ObservedAt.IsZero() {
		t.Fatalf("quota %+v, listed %d bytes", before, listed)
	}
	tr, _ := providers.AsTrasher(p)
	if _, err := tr.Trash(ctx, providers.ActionRequest{ObjectID: objs[0].ID, ExpectedVersion: objs[0].Version}); err != nil {
		t.Fatal(err)
	}
	after, err := q.Quota(ctx, "default")
	if err != nil {
		t.Fatal(err)
	}
	if after.UsedBytes != before.UsedBytes || after.TrashBytes != before.TrashBytes+objs[0].SizeBytes {
		t.Fatalf("after trashing %d bytes: %+v, before %+v", objs[0].SizeBytes, after, before)
	}
	t.Logf("used %d bytes, trash %d, breakdown %v", after.UsedBytes, after.TrashBytes, after.Breakdown)
}
