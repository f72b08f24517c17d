package main

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"svc.dev/svc"
	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/providers"
	"svc.dev/svc/providers/builtin"
	"svc.dev/svc/providers/plugin"
	"svc.dev/svc/providers/providertest/hostile"
)

// These tests run the hostile provider (providers/providertest/hostile), built on the SDK, as
// a third-party plugin executable discovered in a plugin directory, exactly as `svc serve
// --plugin-dir` finds one, behind svc's own instance (issue 27).

// hostilePluginDir builds the hostile plugin into a new plugin directory, named as the
// simulated provider.
func hostilePluginDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	out, err := exec.Command("go", "build", "-o", filepath.Join(dir, plugin.FilePrefix+string(providers.Simulated)),
		"svc.dev/svc/providers/providertest/hostile/hostileplugin").CombinedOutput()
	if err != nil {
		t.Fatalf("build the hostile plugin: %v\n%s", err, out)
	}
	return dir
}

// hostileInstance opens an in-memory svc whose simulated provider is the hostile plugin.
func hostileInstance(t *testing.T, ctx context.Context) *svc.Instance {
	t.Helper()
	reg, err := builtin.Registry(builtin.Options{PluginDir: hostilePluginDir(t), Plugin: &plugin.Options{CallTimeout: 20 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { reg.Close() })
	if d, err := reg.Describe(ctx, providers.Simulated); err != nil || d.Name != providers.Simulated || len(d.Capabilities) != 2 {
		t.Fatalf("the simulated provider is not the hostile plugin: %+v, %v", d, err)
	}
	sv, err := svc.OpenMemory(ctx, &svc.Options{Providers: reg})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sv.Close() })
	return sv
}

func connectHostile(t *testing.T, ctx context.Context, s *svc.Scope, cfg providers.Config) *svcv1.Source {
	t.Helper()
	src, err := s.ConnectSource(ctx, svc.SourceSpec{Provider: providers.Simulated, SourceRef: hostile.Source, Config: cfg, Kind: "folder"})
	if err != nil {
		t.Fatal(err)
	}
	return src
}

// TestSlowPluginOpenBlocksNoOtherPlan (finding 6, through the plugin boundary): a plugin whose
// open of one source takes seconds holds up no plan of another tenant's source of the same
// provider (a process-wide lock made such a plan wait 29 s).
func TestSlowPluginOpenBlocksNoOtherPlan(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	sv := hostileInstance(t, ctx)
	one := sv.Tenant(svc.Tenant{Owner: "one", Mode: svc.ModeLive})
	two := sv.Tenant(svc.Tenant{Owner: "two", Mode: svc.ModeLive})
	const delay = 4 * time.Second
	slow := connectHostile(t, ctx, one, providers.Config{"mode": "slow_open", "open_delay": delay.String()})
	fast := connectHostile(t, ctx, two, providers.Config{"objects": "5"})
	one.ForgetSource(slow.Id) // the next use opens them again
	two.ForgetSource(fast.Id)

	slowDone := make(chan error, 1)
	go func() {
		_, _, err := one.OpenSource(ctx, slow.Id)
		slowDone <- err
	}()
	time.Sleep(300 * time.Millisecond) // the slow open is in the plugin
	start := time.Now()
	p, err := two.BuildPlan(ctx, svc.PlanRequest{SourceIDs: []string{fast.Id}, Intent: svcv1.PlanIntent_PLAN_INTENT_RESCUE})
	took := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.GetObjects()) != 5 {
		t.Fatalf("the plan holds %d objects, want 5", len(p.GetObjects()))
	}
	t.Logf("a plan of another tenant's source took %s while a %s open was in flight", took.Round(time.Millisecond), delay)
	if took > delay/2 {
		t.Fatalf("the plan took %s: it waited behind the slow open", took)
	}
	select {
	case err := <-slowDone:
		t.Fatalf("the slow open ended before the other plan was made (%v): the test proves nothing", err)
	default:
	}
	if err := <-slowDone; err != nil {
		t.Fatalf("slow open: %v", err)
	}
}

// TestUndoUntrashesThroughThePlugin (finding 8b, through the plugin boundary): a clean-up at a
// plugin provider that can trash and untrash but not write is undone by untrashing, from the
// receipt's undo plan, and every object is back at the source.
func TestUndoUntrashesThroughThePlugin(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	sv := hostileInstance(t, ctx)
	s := sv.Tenant(svc.Tenant{Owner: "undo", Mode: svc.ModeLive})
	const n = 4
	state := t.TempDir()
	src := connectHostile(t, ctx, s, providers.Config{"objects": "4", "dir": state})
	run := func(p *svcv1.Plan, err error) *svcv1.Execution {
		t.Helper()
		if err == nil {
			p, err = s.AuthorizePlan(ctx, p.PlanId, p.Hash, nil)
		}
		var x *svcv1.Execution
		if err == nil {
			x, err = s.Execute(ctx, p.PlanId, nil)
		}
		if err == nil {
			x, err = s.Wait(ctx, x.Id)
		}
		if err != nil || x.GetStatus() != svcv1.ExecutionStatus_EXECUTION_STATUS_COMPLETED {
			t.Fatalf("execution: %v (%v, errors %q)", err, x.GetStatus(), x.GetErrors())
		}
		return x
	}
	minAge := int64(30)
	x := run(s.BuildPlan(ctx, svc.PlanRequest{SourceIDs: []string{src.Id}, Intent: svcv1.PlanIntent_PLAN_INTENT_SVC,
		Policy: &svcv1.SourcePolicy{MinAgeDays: &minAge}}))
	if got := hostile.Trashed(state, n); len(got) != n {
		t.Fatalf("the clean-up trashed %v, want all %d", got, n)
	}
	undo, err := s.UndoReceipt(ctx, x.GetReceiptId(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(undo.GetObjects()) != n {
		t.Fatalf("the undo plan restores %d objects (excluded %v), want %d", len(undo.GetObjects()), undo.GetExcluded(), n)
	}
	ux := run(undo, nil)
	if got := hostile.Trashed(state, n); len(got) != 0 {
		t.Fatalf("still in the plugin's trash after the undo: %v", got)
	}
	steps, err := s.Steps(ctx, ux.Id)
	if err != nil {
		t.Fatal(err)
	}
	untrashed := 0
	for _, st := range steps {
		if st.To == svcv1.StepState_STEP_STATE_RESTORED {
			if st.Step != "untrash" {
				t.Errorf("%s restored by %q, want untrash", st.AssetID, st.Step)
			}
			untrashed++
		}
		if strings.Contains(st.Error, "unsupported") {
			t.Errorf("%s: %s", st.AssetID, st.Error)
		}
	}
	if untrashed != n {
		t.Fatalf("%d objects untrashed, want %d", untrashed, n)
	}
}
