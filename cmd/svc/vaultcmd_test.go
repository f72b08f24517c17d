package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// svc vault scrub checks a stopped server's vault, says what it found, and exits 1 when
// objects are corrupt; it refuses a data directory a running server holds.
func TestVaultScrubCommand(t *testing.T) {
	bin := svcBinary(t)
	data := t.TempDir()
	cmd, _, log := start(t, bin, data) // the dev seed executes a clean-up: the vault has content
	scrub := func() (string, error) {
		out, err := exec.Command(bin, "vault", "scrub", "--data", data).CombinedOutput()
		return string(out), err
	}
	if out, err := scrub(); err == nil || !strings.Contains(out, "running") {
		t.Fatalf("scrub beside a running server: %v\n%s", err, out)
	}
	cmd.Process.Signal(syscall.SIGTERM)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("serve: %v\n%s", err, log)
	}
	out, err := scrub()
	if err != nil || !strings.Contains(out, " 0 corrupt") || strings.Contains(out, " 0 objects") {
		t.Fatalf("scrub of an intact vault: %v\n%s", err, out)
	}
	// A failing disk: every stored file gets a flipped byte.
	n := 0
	filepath.WalkDir(filepath.Join(data, "vault"), func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || filepath.Base(filepath.Dir(path)) == "tmp" {
			return nil
		}
		if b, err := os.ReadFile(path); err == nil && len(b) > 200 {
			b[len(b)/2] ^= 0xff
			os.WriteFile(path, b, 0o600)
			n++
		}
		return nil
	})
	if n == 0 {
		t.Fatal("no vault files")
	}
	out, err = scrub()
	if err == nil || !strings.Contains(out, "corrupt: vlt_") {
		t.Fatalf("scrub of a corrupted vault: %v\n%s", err, out)
	}
}
