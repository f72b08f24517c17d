package svc_test

import (
	"os/exec"
	"strings"
	"testing"
)

// The embedding package reaches neither the hosted edge nor a storage engine in its own
// files: no HTTP, no Connect, no server, no bbolt (bbolt comes only through the store it
// opens by default, svc.dev/svc/internal/store, behind the storage seam). The seam package itself
// depends on no store at all.
func TestDependencies(t *testing.T) {
	list := func(args ...string) []string {
		out, err := exec.Command("go", append([]string{"list"}, args...)...).Output()
		if err != nil {
			t.Fatalf("go list %v: %v", args, err)
		}
		return strings.Fields(string(out))
	}
	check := func(what string, deps, forbidden []string) {
		for _, dep := range deps {
			for _, f := range forbidden {
				if dep == f || (f != "svc.dev/svc" && strings.HasPrefix(dep, f+"/")) {
					t.Errorf("%s: %s", what, dep)
				}
			}
		}
	}
	check("svc imports", list("-f", `{{join .Imports " "}}`, "svc.dev/svc"),
		[]string{"net/http", "connectrpc.com", "svc.dev/svc/internal/server", "go.etcd.io/bbolt"})
	check("svc depends on", list("-deps", "svc.dev/svc"), []string{"connectrpc.com", "svc.dev/svc/internal/server"})
	check("storage depends on", list("-deps", "svc.dev/svc/storage", "svc.dev/svc/storage/storagetest"),
		[]string{"net/http", "connectrpc.com", "svc.dev/svc/internal/server", "svc.dev/svc/internal/store", "go.etcd.io/bbolt", "svc.dev/svc"})
}
