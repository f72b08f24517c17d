// Package spamdtest starts a real SpamAssassin spamd on loopback for tests, installing it with
// the project's scripts/install-spamd.sh when it is missing, and skips the test, saying why,
// when spamd cannot be had.
package spamdtest

import (
	"bytes"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
	"time"
)

// Start runs spamd (shipped rules, no network tests, one child) on a free loopback port until
// the test ends and returns its address. It skips in -short (spamd compiles its rules at start:
// about 10 s).
func Start(t testing.TB) string {
	t.Helper()
	if testing.Short() {
		t.Skip("starts spamd: not in -short")
	}
	bin := find()
	if bin == "" {
		_, self, _, _ := runtime.Caller(0)
		script := filepath.Join(filepath.Dir(self), "..", "..", "scripts", "install-spamd.sh")
		out, err := exec.Command("bash", script).CombinedOutput()
		if bin = find(); bin == "" {
			t.Skipf("spamd is not installed and scripts/install-spamd.sh could not install it (%v): %s", err, out)
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	dir := t.TempDir()
	cmd := exec.Command(bin, "--listen="+addr, "-L", "--pidfile="+filepath.Join(dir, "spamd.pid"), "--max-children=1",
		"--syslog=stderr", "-x", "--username=nobody", "--helper-home-dir="+dir)
	var logs bytes.Buffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	deadline := time.Now().Add(60 * time.Second)
	for {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
			return addr
		}
		if time.Now().After(deadline) {
			t.Fatalf("spamd did not listen on %s within 60 s: %s", addr, logs.String())
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func find() string {
	if p, err := exec.LookPath("spamd"); err == nil {
		return p
	}
	for _, p := range []string{"/usr/sbin/spamd", "/usr/bin/spamd"} {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	return ""
}
