package platform_test

import (
	"testing"
	"time"

	"svc.dev/svc/platform"
)

func TestLimiter(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	l := platform.NewLimiter(platform.RateLimit{Limit: 60, Window: time.Minute}, func() time.Time { return now })
	for i := range 60 {
		d := l.Take("a")
		if !d.Allowed || d.Remaining != 59-i || d.Limit != 60 {
			t.Fatalf("take %d: %+v", i, d)
		}
	}
	d := l.Take("a")
	if d.Allowed || d.RetryAfter != 1 || d.Remaining != 0 || d.Reset != 60 {
		t.Fatalf("over the limit: %+v", d)
	}
	if d := l.Take("b"); !d.Allowed || d.Remaining != 59 {
		t.Fatalf("another key shares the bucket: %+v", d)
	}
	now = now.Add(30 * time.Second)
	d = l.Take("a")
	if !d.Allowed || d.Remaining != 29 || d.Reset != 31 {
		t.Fatalf("after 30 s: %+v", d)
	}
}
