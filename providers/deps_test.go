package providers_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestDependencies keeps the providers tree domain-neutral: no package
// under providers/ may depend on the server, Connect or bbolt.
func TestDependencies(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "svc.dev/svc/providers/...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, dep := range strings.Fields(string(out)) {
		for _, banned := range []string{"svc.dev/svc/server", "connectrpc.com/", "go.etcd.io/bbolt"} {
			if strings.HasPrefix(dep, banned) {
				t.Errorf("providers depend on %s", dep)
			}
		}
	}
}
