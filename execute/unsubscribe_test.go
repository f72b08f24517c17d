package execute_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"pgregory.net/rapid"

	"svc.dev/svc/execute"
	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/plan"
	"svc.dev/svc/providers"
)

// unsubRig is a live unsubscribe plan over n messages, each with a one-click target, and a
// sender that records requests (failing transiently every few calls).
type unsubRig struct {
	*rig
	mu    sync.Mutex
	sent  map[string]int
	calls int
	flaky int
}

func newUnsubRig(t interface{ Fatal(...any) }, n int) *unsubRig {
	r := &unsubRig{rig: newRig(t, n), sent: map[string]int{}}
	r.src.messages = map[string]*providers.MessageHeaders{}
	p := r.plan
	p.Intent = svcv1.PlanIntent_PLAN_INTENT_UNSUBSCRIBE
	for _, o := range p.Objects {
		o.Actions, o.PreservationElected = []svcv1.PlanAction{svcv1.PlanAction_PLAN_ACTION_UNSUBSCRIBE}, false
		r.src.messages[o.ProviderObjectId] = &providers.MessageHeaders{
			ListUnsubscribe: fmt.Sprintf("<mailto:u@x.example>, <https://x.example/u/%s>", o.ProviderObjectId), ListUnsubscribePost: true}
	}
	h, err := plan.Hash(p)
	if err != nil {
		t.Fatal(err)
	}
	p.Hash, p.Authorization.PlanHashAtAuthorization = h, h
	return r
}

func (r *unsubRig) engine() *execute.Engine {
	return execute.New(r.store, fakeSources{src: r.src}, r.vault, r.finish, execute.Options{Concurrency: 4, Backoff: time.Millisecond,
		Unsubscribe: func(_ context.Context, target string) error {
			if r.store.crashed.Load() {
				return errors.New("crashed")
			}
			r.mu.Lock()
			defer r.mu.Unlock()
			r.calls++
			if r.flaky > 0 && r.calls%r.flaky == 0 {
				return fmt.Errorf("503: %w", providers.ErrTransient)
			}
			r.sent[target]++
			return nil
		}})
}

// Every message's sender is asked (at least once: a request redone after a crash is
// harmless), the source is never changed, and no message whose version moved is acted on.
func TestUnsubscribeCrashAtAnyJournalWrite(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		r := newUnsubRig(rt, 12)
		if n := rapid.IntRange(2, 6).Draw(rt, "flaky"); n > 2 {
			r.flaky = n
		}
		r.src.version["obj-003"] = "v2" // changed after the plan
		crashes := rapid.SliceOfN(rapid.IntRange(1, 60), 1, 4).Draw(rt, "crashes")
		exeID := runWithCrashes(rt, r.store, r.plan.PlanId, crashes, r.engine)
		x := r.check(rt, exeID)
		if len(r.src.trash) != 0 {
			rt.Fatalf("an unsubscribe changed the source: %v", r.src.trash)
		}
		for i := range 12 {
			target := fmt.Sprintf("https://x.example/u/obj-%03d", i)
			if i == 3 {
				if r.sent[target] != 0 {
					rt.Fatalf("a message whose version moved was acted on")
				}
				continue
			}
			if r.sent[target] == 0 {
				rt.Fatalf("%s never asked", target)
			}
		}
		if x.Completed != 11 || x.Failed != 0 || countSkipped(x) != 1 {
			rt.Fatalf("completed %d failed %d skipped %d: %v", x.Completed, x.Failed, countSkipped(x), x.Errors)
		}
	})
}
