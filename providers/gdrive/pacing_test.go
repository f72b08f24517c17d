package gdrive_test

import (
	"context"
	"testing"

	fake "svc.dev/svc/internal/vendorfake/drive"
	"svc.dev/svc/providers"
	"svc.dev/svc/providers/gdrive"
	"svc.dev/svc/providers/providertest"
)

// TestWritePacing trashes files with the default pacing and counts the
// writes (PATCH) the fake received per second: at most WritesPerSecond
// after the first, and reads within QuotaPerMinute.
func TestWritePacing(t *testing.T) {
	s := fake.New(t, fake.Options{Files: 12})
	p := openWith(t, s, defaultPacing)
	ctx := context.Background()
	objs, _ := providertest.ListAll(ctx, t, p, "root", 0)
	for _, o := range objs[:10] {
		if _, err := p.(providers.Trasher).Trash(ctx, providers.ActionRequest{SourceRef: "root", ObjectID: o.ID, ExpectedVersion: o.Version}); err != nil {
			t.Fatal(err)
		}
	}
	var writes []float64
	log := s.Log()
	for _, r := range log {
		if r.Method == "PATCH" {
			writes = append(writes, r.At.Sub(log[0].At).Seconds())
		}
	}
	if len(writes) != 10 {
		t.Fatalf("%d writes", len(writes))
	}
	span := writes[len(writes)-1] - writes[0]
	rate := float64(len(writes)-1) / span
	t.Logf("%d writes in %.2f s: %.2f writes/s (pacing %d/s); %d requests in all", len(writes), span, rate, gdrive.WritesPerSecond, len(log))
	if rate > gdrive.WritesPerSecond*1.05 {
		t.Errorf("%.2f writes/s, pacing %d/s", rate, gdrive.WritesPerSecond)
	}
}

// defaultPacing drops the fakes' "quota_per_minute: off": the provider's
// default pacing.
func defaultPacing(cfg providers.Config) { delete(cfg, "quota_per_minute") }
