package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"
)

// build compiles the example once per test.
func build(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "embed")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	return bin
}

// The program vaults a folder, leaves the folder as it was, prints a verified receipt and
// exits 0; a second run over the same data directory works too.
func TestEmbedVaultsAFolder(t *testing.T) {
	bin := build(t)
	folder, data := t.TempDir(), filepath.Join(t.TempDir(), "data")
	files := map[string]string{"a.txt": "alpha\n", "sub/b.txt": "beta beta\n", "c.bin": string(bytes.Repeat([]byte{0, 1, 2}, 5000))}
	for name, body := range files {
		os.MkdirAll(filepath.Dir(filepath.Join(folder, name)), 0o700)
		if err := os.WriteFile(filepath.Join(folder, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for run := range 2 {
		out, err := exec.Command(bin, "-data", data, folder).CombinedOutput()
		if err != nil {
			t.Fatalf("run %d: %v\n%s", run, err, out)
		}
		for _, want := range []string{`plan pln_\w+: 3 objects to preserve`, `EXECUTION_STATUS_COMPLETED, 3 preserved, 0 failed`,
			`receipt rcp_\w+ verified: hash [0-9a-f]{64} signed by \S+`} {
			if !regexp.MustCompile(want).Match(out) {
				t.Fatalf("run %d: output lacks %q:\n%s", run, want, out)
			}
		}
	}
	for name, body := range files {
		if got, err := os.ReadFile(filepath.Join(folder, name)); err != nil || string(got) != body {
			t.Fatalf("%s changed at the source: %v", name, err)
		}
	}
	entries, _ := os.ReadDir(folder)
	if len(entries) != 3 { // a.txt, c.bin, sub: nothing added, nothing trashed
		t.Fatalf("the folder holds %d entries, want 3", len(entries))
	}
	for _, f := range []string{"svc.db", "master.key", "keys", "vault"} {
		if _, err := os.Stat(filepath.Join(data, f)); err != nil {
			t.Errorf("data directory: %v", err)
		}
	}
}

// Any failure exits non-zero: a folder that does not exist, or no folder at all.
func TestEmbedFails(t *testing.T) {
	bin := build(t)
	for _, tc := range []struct {
		args []string
		code int
	}{{[]string{"-data", t.TempDir(), filepath.Join(t.TempDir(), "missing")}, 1}, {nil, 2}} {
		out, err := exec.Command(bin, tc.args...).CombinedOutput()
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != tc.code {
			t.Errorf("%v: %v, want exit code %d\n%s", tc.args, err, tc.code, out)
		}
	}
}
