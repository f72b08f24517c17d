// Package stripemock starts stripe-mock, Stripe's own mock of its API, on loopback for the
// billing tests. The binary comes from PATH or $(go env GOPATH)/bin, where
// scripts/install-stripe-mock.sh installs it.
package stripemock

import (
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Binary returns the stripe-mock binary's path, or "" when it is not installed.
func Binary() string {
	if p, err := exec.LookPath("stripe-mock"); err == nil {
		return p
	}
	gopath := os.Getenv("GOPATH")
	if gopath == "" {
		if out, err := exec.Command("go", "env", "GOPATH").Output(); err == nil {
			gopath = strings.TrimSpace(string(out))
		}
	}
	for _, dir := range filepath.SplitList(gopath) {
		p := filepath.Join(dir, "bin", "stripe-mock")
		if fi, err := os.Stat(p); err == nil && fi.Mode().Perm()&0o111 != 0 {
			return p
		}
	}
	return ""
}

// Start starts stripe-mock over HTTP on 127.0.0.1 and returns its base URL; it stops when the
// test ends. It skips the test when the binary is absent.
func Start(t testing.TB) string {
	t.Helper()
	bin := Binary()
	if bin == "" {
		t.Skip("stripe-mock not installed (not in PATH or $(go env GOPATH)/bin): run scripts/install-stripe-mock.sh to run the billing tests against Stripe's mock")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	cmd := exec.Command(bin, "-http-addr", addr)
	if err := cmd.Start(); err != nil {
		t.Fatalf("start stripe-mock: %v", err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	base := "http://" + addr
	deadline := time.Now().Add(30 * time.Second)
	for {
		res, err := http.Get(base + "/v1/customers")
		if err == nil {
			res.Body.Close()
			return base
		}
		if time.Now().After(deadline) {
			t.Fatalf("stripe-mock did not start on %s: %v", addr, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
