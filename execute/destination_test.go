package execute_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"pgregory.net/rapid"

	"svc.dev/svc/execute"
	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/plan"
	"svc.dev/svc/providers"
	"svc.dev/svc/providers/local"
)

// destRig is a rig whose plan writes every object to a destination folder (vendor_d_local):
// a move with preservation (migrate) or a copy (export).
type destRig struct {
	*rig
	dir string
	dst providers.Provider
}

func newDestRig(t interface{ Fatal(...any) }, dir string, n int, actions ...svcv1.PlanAction) *destRig {
	r := &destRig{rig: newRig(t, n), dir: dir}
	dst, err := local.New(context.Background(), providers.Config{"root": r.dir})
	if err != nil {
		t.Fatal(err)
	}
	r.dst = dst
	p := r.plan
	p.Intent = svcv1.PlanIntent_PLAN_INTENT_MIGRATE
	if !slices.Contains(actions, svcv1.PlanAction_PLAN_ACTION_MOVE) {
		p.Intent = svcv1.PlanIntent_PLAN_INTENT_EXPORT
	}
	p.Destination = &svcv1.Destination{DestinationId: "dst_1", Provider: svcv1.Provider_PROVIDER_VENDOR_D_LOCAL, Label: "folder",
		PathTemplate: proto.String("export/{path}")}
	for _, o := range p.Objects {
		o.Actions = actions
		o.PreservationElected = slices.Contains(actions, svcv1.PlanAction_PLAN_ACTION_PRESERVE)
	}
	h, err := plan.Hash(p)
	if err != nil {
		t.Fatal(err)
	}
	p.Hash, p.Authorization.PlanHashAtAuthorization = h, h
	return r
}

func (r *destRig) engine() *execute.Engine {
	return execute.New(r.store, fakeSources{src: r.src, dst: r.dst}, r.vault, r.finish, execute.Options{Concurrency: 4, Backoff: time.Millisecond})
}

// run executes the plan to its end and checks the guarantee.
func (r *destRig) run(t *testing.T) *svcv1.Execution {
	t.Helper()
	e := r.engine()
	x, err := e.Start(context.Background(), "t", r.plan.PlanId, "usr_1")
	if err != nil {
		t.Fatal(err)
	}
	e.Wait()
	return r.check(t, x.Id)
}

// atDestination returns the SHA-256 of the file an object was written to, or "".
func (r *destRig) atDestination(id string) string {
	b, err := os.ReadFile(filepath.Join(r.dir, "export", id))
	if err != nil {
		return ""
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

func TestMoveWritesVerifiesThenRemoves(t *testing.T) {
	r := newDestRig(t, t.TempDir(), 30, svcv1.PlanAction_PLAN_ACTION_PRESERVE, svcv1.PlanAction_PLAN_ACTION_MOVE)
	x := r.run(t)
	if x.Status != svcv1.ExecutionStatus_EXECUTION_STATUS_COMPLETED || x.Completed != 30 || len(r.src.trash) != 30 {
		t.Fatalf("execution %v %d/%d, %d removed: %v", x.Status, x.Completed, x.Attempted, len(r.src.trash), x.Errors)
	}
	for id, sha := range r.shas {
		if got := r.atDestination(id); got != sha {
			t.Fatalf("%s at the destination: sha256 %q, want %s", id, got, sha)
		}
	}
	if x.BytesTransferred == 0 || x.BytesTransferred != x.BytesPreserved || x.BytesRemoved != x.BytesPreserved {
		t.Fatalf("bytes preserved %d transferred %d removed %d", x.BytesPreserved, x.BytesTransferred, x.BytesRemoved)
	}
	// Per asset: commit, then the write (queued with its path, then written), then removal.
	var seq []string
	for _, s := range x.Steps {
		if s.AssetId == "ast_007" {
			seq = append(seq, s.GetToState().String())
		}
	}
	want := "STEP_STATE_SELECTED STEP_STATE_FETCHING STEP_STATE_VAULTING STEP_STATE_VERIFYING STEP_STATE_VAULT_COMMITTED " +
		"STEP_STATE_RESTORE_QUEUED STEP_STATE_RESTORED STEP_STATE_SOURCE_ACTION_QUEUED STEP_STATE_SOURCE_TRASHED_OR_REMOVED STEP_STATE_RECLAIM_PENDING"
	if got := strings.Join(seq, " "); got != want {
		t.Fatalf("ast_007 went\n%s\nwant\n%s", got, want)
	}
}

func TestCopyLeavesSourceAndForeignObjectsAlone(t *testing.T) {
	r := newDestRig(t, t.TempDir(), 10, svcv1.PlanAction_PLAN_ACTION_COPY)
	// obj-003's path holds someone else's file; obj-004's already holds the same content
	// (an earlier export).
	mustWrite(t, filepath.Join(r.dir, "export", "obj-003"), []byte("not yours"))
	mustWrite(t, filepath.Join(r.dir, "export", "obj-004"), r.src.content["obj-004"])
	// obj-005 changes version after the plan: it is not copied.
	r.src.version["obj-005"] = "v2"
	x := r.run(t)
	if len(r.src.trash) != 0 || len(r.src.content) != 10 {
		t.Fatalf("a copy changed the source: %d trashed", len(r.src.trash))
	}
	if b, _ := os.ReadFile(filepath.Join(r.dir, "export", "obj-003")); string(b) != "not yours" {
		t.Fatalf("the foreign file was replaced: %q", b)
	}
	if r.atDestination("obj-005") != "" {
		t.Fatal("an object whose version moved was copied")
	}
	for _, id := range []string{"obj-000", "obj-004", "obj-009"} {
		if r.atDestination(id) != r.shas[id] {
			t.Fatalf("%s not copied", id)
		}
	}
	if x.Status != svcv1.ExecutionStatus_EXECUTION_STATUS_PARTIALLY_COMPLETED || x.Completed != 8 || countSkipped(x) != 2 {
		t.Fatalf("execution %v completed %d skipped %d: %v", x.Status, x.Completed, countSkipped(x), x.Steps)
	}
	if x.BytesPreserved != 0 || x.BytesTransferred == 0 {
		t.Fatalf("bytes preserved %d transferred %d", x.BytesPreserved, x.BytesTransferred)
	}
}

func mustWrite(t *testing.T, path string, b []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// The move guarantee under crashes at any journal write: afterwards every object is either
// still at its source, or was removed exactly once, after its vault copy was committed and its
// copy at the destination holds exactly its content.
func TestMoveCrashAtAnyJournalWrite(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		dir, err := os.MkdirTemp("", "svc-move-")
		if err != nil {
			rt.Fatal(err)
		}
		defer os.RemoveAll(dir)
		r := newDestRig(rt, dir, 12, svcv1.PlanAction_PLAN_ACTION_PRESERVE, svcv1.PlanAction_PLAN_ACTION_MOVE)
		if n := rapid.IntRange(2, 9).Draw(rt, "transient"); n > 2 {
			r.src.transient = n
		}
		crashes := rapid.SliceOfN(rapid.IntRange(1, 130), 1, 4).Draw(rt, "crashes")
		exeID := runWithCrashes(rt, r.store, r.plan.PlanId, crashes, r.engine)
		got := r.check(rt, exeID)
		for id := range r.src.trash {
			if r.atDestination(id) != r.shas[id] {
				rt.Fatalf("%s removed without its copy at the destination", id)
			}
		}
		if got.Failed != 0 || got.Completed != 12 || len(r.src.trash) != 12 {
			var why []string
			for _, s := range got.Steps {
				if s.GetToState() == svcv1.StepState_STEP_STATE_SKIPPED {
					why = append(why, s.AssetId+": "+s.Step)
				}
			}
			j, _ := r.store.Journal(context.Background(), "t", exeID)
			for _, t := range j {
				if t.To == svcv1.StepState_STEP_STATE_SKIPPED {
					why = append(why, t.AssetID+": "+t.Error)
				}
			}
			rt.Fatalf("after crashes: %v completed %d failed %d removed %d errors %v skipped %v", got.Status, got.Completed, got.Failed, len(r.src.trash), got.Errors, why)
		}
		entries, _ := os.ReadDir(filepath.Join(r.dir, "export"))
		for _, e := range entries {
			if strings.HasPrefix(e.Name(), ".svc-write-") {
				rt.Fatalf("a temporary file was left at the destination: %s", e.Name())
			}
		}
	})
}

// rendering is a destination that keeps content in a form of its own (as Exchange keeps a
// message): what it serves back is not the bytes written, and its Write says so
// (providers.MetaRendered).
type rendering struct {
	providers.Provider
}

func (d rendering) Write(ctx context.Context, req providers.WriteRequest, body io.Reader) (providers.Object, error) {
	o, err := d.Provider.(providers.Writer).Write(ctx, req, body)
	o.Metadata = map[string]string{providers.MetaRendered: "test_rendered"}
	return o, err
}

func (d rendering) Fetch(ctx context.Context, req providers.FetchRequest) (*providers.Content, error) {
	c, err := d.Provider.Fetch(ctx, req)
	if err != nil {
		return nil, err
	}
	c.Body = struct {
		io.Reader
		io.Closer
	}{io.MultiReader(strings.NewReader("X-Rendered: yes\r\n"), c.Body), c.Body}
	return c, nil
}

// A destination that keeps its own form of the content is taken at its word only for assets
// whose exact bytes the vault holds: a move with preservation completes; a copy without a
// vault copy is not done (skipped), and its source is left alone.
func TestRenderingDestination(t *testing.T) {
	r := newDestRig(t, t.TempDir(), 8, svcv1.PlanAction_PLAN_ACTION_PRESERVE, svcv1.PlanAction_PLAN_ACTION_MOVE)
	r.dst = rendering{r.dst}
	x := r.run(t)
	if x.Status != svcv1.ExecutionStatus_EXECUTION_STATUS_COMPLETED || x.Completed != 8 || len(r.src.trash) != 8 {
		t.Fatalf("move with preservation: %v %d/%d, %d removed: %v", x.Status, x.Completed, x.Attempted, len(r.src.trash), x.Errors)
	}

	c := newDestRig(t, t.TempDir(), 8, svcv1.PlanAction_PLAN_ACTION_COPY)
	c.dst = rendering{c.dst}
	x = c.run(t)
	if x.Completed != 0 || countSkipped(x) != 8 || len(c.src.trash) != 0 {
		t.Fatalf("copy without a vault copy: %v completed %d skipped %d, %d removed: %v", x.Status, x.Completed, countSkipped(x), len(c.src.trash), x.Errors)
	}
}
