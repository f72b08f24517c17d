package svc_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"svc.dev/svc"
	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/providers"
	"svc.dev/svc/providers/local"
)

// stuckQuota is a folder whose provider stops answering quota requests once armed (a plugin
// process that froze): the call returns only when its context ends.
type stuckQuota struct {
	providers.Provider
	armed   *atomic.Bool
	entered chan struct{}
}

func (p stuckQuota) Quota(ctx context.Context, ref string) (providers.Quota, error) {
	if !p.armed.Load() {
		return p.Provider.(providers.Quotaer).Quota(ctx, ref)
	}
	select {
	case p.entered <- struct{}{}:
	default:
	}
	<-ctx.Done()
	return providers.Quota{}, ctx.Err()
}

// A receipt's quota after the execution is best effort: a provider that does not answer holds
// up neither the shutdown (Close ends the wait at once) nor, for longer than a few seconds,
// the receipt (finding of a CI run: a frozen plugin's quota call kept a SIGTERMed server up for
// the plugin's whole 30 s call deadline).
func TestCloseDoesNotWaitOnAStuckQuota(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	armed := &atomic.Bool{}
	entered := make(chan struct{}, 1)
	reg := providers.NewRegistry()
	reg.Register(providers.InProcess(local.Description, func(ctx context.Context, cfg providers.Config) (providers.Provider, error) {
		p, err := local.New(ctx, cfg)
		return stuckQuota{Provider: p, armed: armed, entered: entered}, err
	}))
	sv, err := svc.OpenMemory(ctx, &svc.Options{Providers: reg})
	if err != nil {
		t.Fatal(err)
	}
	root, _ := folder(t, 3)
	src, err := sv.ConnectSource(ctx, svc.SourceSpec{Provider: providers.VendorDLocal, Config: providers.Config{"root": root}, Kind: "folder"})
	if err != nil {
		t.Fatal(err)
	}
	p, err := sv.BuildPlan(ctx, svc.PlanRequest{SourceIDs: []string{src.Id}, Intent: svcv1.PlanIntent_PLAN_INTENT_RESCUE})
	if err == nil {
		p, err = sv.AuthorizePlan(ctx, p.PlanId, p.Hash, nil)
	}
	if err != nil {
		t.Fatal(err)
	}
	armed.Store(true)
	if _, err := sv.Execute(ctx, p.PlanId, nil); err != nil {
		t.Fatal(err)
	}
	select {
	case <-entered: // the execution's receipt asks for the quota now
	case <-time.After(30 * time.Second):
		t.Fatal("the receipt never asked for the quota")
	}
	start := time.Now()
	done := make(chan error, 1)
	go func() { done <- sv.Close() }()
	select {
	case <-done:
		t.Logf("closed %v after the quota call stuck", time.Since(start).Round(time.Millisecond))
	case <-time.After(5 * time.Second):
		t.Fatal("Close waited on a provider's quota call")
	}
}
