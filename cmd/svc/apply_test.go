package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// svc plan create, then svc apply: the execution runs with progress and ends with the receipt
// verified offline.
func TestApplyCommand(t *testing.T) {
	bin := svcBinary(t)
	r := &crashRig{t: t, bin: bin, data: t.TempDir(), root: t.TempDir(), home: t.TempDir()}
	old := time.Now().AddDate(-2, 0, 0)
	for i := range 25 {
		p := filepath.Join(r.root, fmt.Sprintf("old-%02d.txt", i))
		os.WriteFile(p, []byte(strings.Repeat("x", 1000*(i+1))), 0o600)
		os.Chtimes(p, old, old)
	}
	r.start()
	defer func() { r.cmd.Process.Signal(syscall.SIGTERM); r.exited() }()
	_, srcs, _ := r.call("GET", "/v1/sources?provider=vendor_d_local", "")
	src := srcs["data"].([]any)[0].(map[string]any)["id"].(string)
	creds := filepath.Join(r.data, "dev-credentials.json")
	out, err := exec.Command(bin, "plan", "create", "--credentials", creds, "--source", src, "--policy", `{"minAgeDays":30}`).CombinedOutput()
	if err != nil {
		t.Fatalf("plan create: %v\n%s", err, out)
	}
	m := regexp.MustCompile(`svc plan authorize (pln_\S+) --hash ([0-9a-f]{64})`).FindStringSubmatch(string(out))
	if m == nil {
		t.Fatalf("no plan in:\n%s", out)
	}
	out, err = exec.Command(bin, "apply", m[1], "--hash", m[2], "--credentials", creds).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "completed: 25 assets attempted, 25 completed, 0 failed") || !regexp.MustCompile(`Receipt rcp_\S+ verified`).Match(out) {
		t.Fatalf("svc apply: %v\n%s", err, out)
	}
	if left, _ := os.ReadDir(r.root); len(left) != 0 {
		t.Fatalf("%d files left", len(left))
	}
}

// The plain progress moves with assets as well as bytes: failed assets add no bytes, and the
// lines must not stay at 0% while they fail (issue 20, 2).
func TestLineProgressCountsFailedAssets(t *testing.T) {
	var b strings.Builder
	l := &lineProgress{out: &b, total: 1 << 30, objects: 10, last: -1}
	l.update(0, 0)
	l.update(0, 5) // five assets done, all failed: no bytes
	if !strings.Contains(b.String(), " 50%") {
		t.Fatalf("progress after half the assets failed:\n%s", b.String())
	}
}
