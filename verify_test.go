package svc_test

import (
	"context"
	"testing"
	"time"

	"svc.dev/svc"
	"svc.dev/svc/vault"
)

// Scheduled verification re-reads what is due from the medium: with every object due, a run
// verifies them all; a run right after finds nothing due.
func TestVerifyScheduled(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	now := time.Now()
	clock := func() time.Time { return now }
	sv, err := svc.OpenMemory(ctx, &svc.Options{Now: clock})
	if err != nil {
		t.Fatal(err)
	}
	defer sv.Close()
	root, files := folder(t, 3)
	rescue(ctx, t, sv, root, true)
	opts := &vault.ScheduleOptions{VerifyEvery: 24 * time.Hour, Interval: time.Hour}
	r, err := sv.VerifyScheduled(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	if r.Objects != int64(len(files)) || r.Verified != 0 || len(r.Corrupt) != 0 {
		t.Fatalf("just committed (verified at commit): %+v", r)
	}
	now = now.Add(48 * time.Hour) // every object is past its deadline
	if r, err = sv.VerifyScheduled(ctx, opts); err != nil || r.Verified != len(files) || len(r.Corrupt) != 0 {
		t.Fatalf("all due: %+v, %v", r, err)
	}
	if r, err = sv.VerifyScheduled(ctx, opts); err != nil || r.Verified != 0 {
		t.Fatalf("right after: %+v, %v", r, err)
	}
}
