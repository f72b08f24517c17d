package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"svc.dev/svc/server/devseed"
	"syscall"
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

// TestSIGTERMWithAFrozenPlugin (finding 2, through `svc serve --plugin-dir`): a plugin that
// stops its own process (SIGSTOP) in the middle of an execution's fetch does not keep a
// SIGTERMed server alive past its drain, whether the execution runs once the server listens
// (a plan applied by the CLI) or during the dev seed, before it listens (where the server's
// close used to wait for the frozen fetches for ever: the engine now cuts provider calls short
// on shutdown).
func TestSIGTERMWithAFrozenPlugin(t *testing.T) {
	bin := svcBinary(t)
	const drain = 2 * time.Second
	for _, tc := range []struct {
		name, source string
		seed         bool
	}{
		{"after startup", "files/dev", false},
		{"during the dev seed", "mail/archive", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := hostilePluginDir(t)
			// The dev seed's simulated sources take these defaults (hostileplugin): a fetch from
			// tc.source freezes the plugin; the other sources answer.
			defaults := `{"mode": "freeze_fetch", "source": "*", "mode_source": "` + tc.source + `", "page_size": "1000"}`
			if err := os.WriteFile(filepath.Join(dir, plugin.FilePrefix+string(providers.Simulated)+".json"), []byte(defaults), 0o600); err != nil {
				t.Fatal(err)
			}
			data := t.TempDir()
			args := []string{"serve", "--dev", "--addr", "127.0.0.1:0", "--data", data, "--plugin-dir", dir, "--drain", drain.String()}
			var cmd *exec.Cmd
			var log *logTail
			if tc.seed {
				cmd, log = startRaw(t, bin, args...)
			} else {
				var base string
				cmd, base, log = startWith(t, bin, data, nil, args[6:]...)
				applyInBackground(t, bin, base, data)
			}
			defer cmd.Process.Kill()
			// Wait until a plugin process of the server is stopped: the fetch froze it.
			deadline := time.Now().Add(60 * time.Second)
			for frozenChild(cmd.Process.Pid) == 0 {
				if time.Now().After(deadline) {
					t.Fatalf("no plugin froze:\n%s", log)
				}
				time.Sleep(50 * time.Millisecond)
			}
			start := time.Now()
			cmd.Process.Signal(syscall.SIGTERM)
			done := make(chan error, 1)
			go func() { <-log.done; done <- cmd.Wait() }()
			select {
			case <-done:
				took := time.Since(start)
				t.Logf("stopped %v after SIGTERM with a frozen plugin (drain %v)", took.Round(time.Millisecond), drain)
			case <-time.After(drain + 5*time.Second):
				// Still up: its goroutines say where it waits (SIGQUIT prints them and exits).
				cmd.Process.Signal(syscall.SIGQUIT)
				select {
				case <-done:
				case <-time.After(10 * time.Second):
				}
				t.Errorf("still running %v after SIGTERM with a frozen plugin (drain %v); its log and goroutines in svc's code:\n%s", drain+5*time.Second, drain, ourGoroutines(log.String()))
			case <-time.After(40 * time.Second):
				cmd.Process.Kill()
				t.Fatalf("still running 40 s after SIGTERM with a frozen plugin:\n%s", log)
			}
			if frozen := frozenChild(cmd.Process.Pid); frozen != 0 {
				t.Errorf("plugin process %d outlived the server", frozen)
			}
		})
	}
}

// startRaw starts svc with args and collects its log; it does not wait for it to listen.
func startRaw(t *testing.T, bin string, args ...string) (*exec.Cmd, *logTail) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	log := &logTail{done: make(chan struct{})}
	go func() {
		defer close(log.done)
		b := make([]byte, 32<<10)
		for {
			n, err := stderr.Read(b)
			log.Write(b[:n])
			if err != nil {
				return
			}
		}
	}()
	return cmd, log
}

// applyInBackground creates a rescue plan over the dev tenant's sources, authorizes it as the
// dev user and applies it with the CLI, which follows it until the test ends.
func applyInBackground(t *testing.T, bin, base, data string) {
	t.Helper()
	creds := filepath.Join(data, devseed.CredentialsFile)
	var session struct {
		Cookie string `json:"session_cookie"`
	}
	if raw, err := os.ReadFile(creds); err != nil || json.Unmarshal(raw, &session) != nil {
		t.Fatalf("dev credentials: %v", err)
	}
	out, err := exec.Command(bin, "plan", "create", "--credentials", creds, "--intent", "rescue").CombinedOutput()
	m := regexp.MustCompile(`(pln_\S+) --hash ([0-9a-f]{64})`).FindStringSubmatch(string(out))
	if err != nil || m == nil {
		t.Fatalf("svc plan create: %v\n%s", err, out)
	}
	if out, err := exec.Command(bin, "plan", "authorize", m[1], "--hash", m[2], "--server", base, "--session", session.Cookie, "--test-mode").CombinedOutput(); err != nil {
		t.Fatalf("svc plan authorize: %v\n%s", err, out)
	}
	apply := exec.Command(bin, "apply", m[1], "--credentials", creds)
	if err := apply.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { apply.Process.Kill(); apply.Wait() })
}

// frozenChild returns the pid of a stopped (SIGSTOP) child of process ppid, or 0.
func frozenChild(ppid int) int {
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, f := range stats {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		fields := strings.Fields(s[i+1:]) // state, ppid, ...
		if len(fields) > 1 && fields[0] == "T" && fields[1] == strconv.Itoa(ppid) {
			pid, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(f, "/proc/"), "/stat"))
			return pid
		}
	}
	return 0
}

// ourGoroutines is what a Go program wrote before and in its SIGQUIT dump, the dump cut to
// the goroutines with a frame in svc's own code.
func ourGoroutines(out string) string {
	var keep []string
	for _, block := range strings.Split(out, "\n\n") {
		if !strings.HasPrefix(block, "goroutine ") || strings.Contains(block, "svc.dev/svc/") {
			keep = append(keep, block)
		}
	}
	return strings.Join(keep, "\n\n")
}
