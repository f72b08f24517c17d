package svc_test

import (
	"context"
	"testing"
	"time"

	"svc.dev/svc"
	"svc.dev/svc/providers"
	"svc.dev/svc/providers/local"
)

// One slow provider's open holds up only the opens of its own source: a source of another
// tenant opens at once (issue 27, finding 6: a process-wide lock made it wait).
func TestSlowOpenBlocksNoOtherSource(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	release := make(chan struct{})
	slowRoot, _ := folder(t, 1)
	reg := providers.NewRegistry()
	reg.Register(providers.InProcess(local.Description, func(ctx context.Context, cfg providers.Config) (providers.Provider, error) {
		if cfg["root"] == slowRoot {
			select {
			case <-release:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		return local.New(ctx, cfg)
	}))
	sv, err := svc.OpenMemory(ctx, &svc.Options{Providers: reg})
	if err != nil {
		t.Fatal(err)
	}
	defer sv.Close()
	defer close(release)
	fastRoot, _ := folder(t, 1)
	one := sv.Tenant(svc.Tenant{Owner: "one", Mode: svc.ModeLive})
	two := sv.Tenant(svc.Tenant{Owner: "two", Mode: svc.ModeLive})
	// Connecting opens the provider to check it: connect both while the slow one can open,
	// then forget them so the next use opens them again.
	close0 := make(chan struct{})
	go func() { release <- struct{}{}; close(close0) }()
	slow, err := one.ConnectSource(ctx, svc.SourceSpec{Provider: providers.VendorDLocal, Config: providers.Config{"root": slowRoot}, Kind: "folder"})
	if err != nil {
		t.Fatal(err)
	}
	<-close0
	fast, err := two.ConnectSource(ctx, svc.SourceSpec{Provider: providers.VendorDLocal, Config: providers.Config{"root": fastRoot}, Kind: "folder"})
	if err != nil {
		t.Fatal(err)
	}
	one.ForgetSource(slow.Id)
	two.ForgetSource(fast.Id)

	go one.OpenSource(ctx, slow.Id) // stuck in the provider's open until release
	time.Sleep(50 * time.Millisecond)
	done := make(chan error, 1)
	go func() {
		_, _, err := two.OpenSource(ctx, fast.Id)
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("another tenant's source waited behind a slow provider's open")
	}
}
