package client_test

import (
	"os/exec"
	"strings"
	"testing"
)

// The client is for programs that call a hosted svc: it must not pull in the server, the
// store or the storage engine.
func TestClientDependencies(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "svc.dev/svc/client").Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, dep := range strings.Fields(string(out)) {
		for _, f := range []string{"svc.dev/svc/internal/server", "svc.dev/svc/internal/store", "go.etcd.io/bbolt", "svc.dev/svc/vault", "svc.dev/svc/execute"} {
			if dep == f || strings.HasPrefix(dep, f+"/") {
				t.Errorf("client depends on %s", dep)
			}
		}
	}
}
