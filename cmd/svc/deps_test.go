package main

import (
	"os/exec"
	"strings"
	"testing"
)

// Domain packages and the provider SDK must not reach the edge or the storage engine:
// storage comes to them through interfaces they declare.
func TestDomainDependencies(t *testing.T) {
	domain := []string{"platform", "platform/webhook", "platform/event", "wire", "id", "plan", "plan/discover", "execute", "receipt",
		"manifest", "vault", "intel", "creator", "providers", "storage"}
	forbidden := []string{"svc.dev/svc/internal/server", "svc.dev/svc/internal/store", "go.etcd.io/bbolt", "connectrpc.com/connect"}
	for _, pkg := range domain {
		out, err := exec.Command("go", "list", "-deps", "svc.dev/svc/"+pkg).Output()
		if err != nil {
			continue // not written yet
		}
		for _, dep := range strings.Fields(string(out)) {
			for _, f := range forbidden {
				if dep == f || strings.HasPrefix(dep, f+"/") {
					t.Errorf("%s depends on %s", pkg, dep)
				}
			}
		}
	}
}
