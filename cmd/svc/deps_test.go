package main

import (
	"encoding/json"
	"io"
	"os/exec"
	"strings"
	"testing"
)

// pkg is what `go list -json` says of one package.
type pkg struct {
	ImportPath string
	Imports    []string
	Deps       []string
	Error      *struct{ Err string }
}

// listPackages lists the module's packages (not their tests) with their direct imports and
// transitive dependencies.
func listPackages(t *testing.T) map[string]pkg {
	t.Helper()
	out, err := exec.Command("go", "list", "-e", "-json=ImportPath,Imports,Deps,Error", "svc.dev/svc/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	pkgs := map[string]pkg{}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for {
		var p pkg
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatalf("decode go list: %v", err)
		}
		if p.Error != nil {
			t.Fatalf("%s: %s", p.ImportPath, p.Error.Err)
		}
		pkgs[p.ImportPath] = p
	}
	return pkgs
}

const mod = "svc.dev/svc"

// under reports whether dep is path or a package below it.
func under(dep, path string) bool { return dep == path || strings.HasPrefix(dep, path+"/") }

// TestLayers keeps the layers of docs/architecture.md: domain packages and the provider SDK
// reach neither the edge, Connect, nor a storage engine (storage comes to them through
// interfaces they declare); the edge reaches no storage engine; only cmd and the embedding
// package's default Open pick the bbolt engine, and only that engine imports bbolt.
func TestLayers(t *testing.T) {
	pkgs := listPackages(t)
	domain := []string{"platform", "platform/event", "platform/webhook", "platform/job", "platform/billing",
		"platform/archive", "wire", "id", "mail", "plan", "plan/discover", "execute", "receipt", "manifest",
		"vault", "intel", "creator", "providers", "providers/plugin", "providers/pagetoken", "providers/vaultfs",
		"providers/vendorhttp", "providers/google", "providers/gmail", "providers/gdrive",
		"providers/contenthash", "providers/graph", "providers/outlook", "providers/onedrive", "providers/dropbox",
		"storage", "storage/storagetest"}
	engines := []string{mod + "/server", "connectrpc.com/connect", mod + "/storage/bolt", "go.etcd.io/bbolt",
		mod + "/storage/postgres", "github.com/jackc/pgx/v5"}
	for _, d := range domain {
		p, ok := pkgs[mod+"/"+d]
		if !ok {
			t.Errorf("%s: no such package (the layer map names it)", d)
			continue
		}
		for _, dep := range p.Deps {
			for _, f := range engines {
				if under(dep, f) {
					t.Errorf("%s depends on %s", d, dep)
				}
			}
		}
	}
	// The edge reaches no storage engine, directly or through another package but the
	// embedding package's default Open.
	if p, ok := pkgs[mod+"/server"]; !ok {
		t.Error("server: no such package")
	} else {
		for _, imp := range p.Imports {
			if under(imp, mod+"/storage/bolt") || imp == "go.etcd.io/bbolt" {
				t.Errorf("server imports %s", imp)
			}
		}
	}
	// The handler families behind the edge import neither the edge itself nor a storage
	// engine (like the edge, they reach one only through the layer's default Open): they get
	// their parts from the server, and the caller from rpc.
	for _, fam := range []string{"server/internal/rpc", "server/internal/platformapi", "server/internal/insightapi", "server/internal/tenantapi", "server/internal/connectflow"} {
		p, ok := pkgs[mod+"/"+fam]
		if !ok {
			t.Errorf("%s: no such package (the layer map names it)", fam)
			continue
		}
		for _, imp := range p.Imports {
			for _, f := range []string{mod + "/storage/bolt", "go.etcd.io/bbolt", mod + "/storage/postgres", "github.com/jackc/pgx/v5"} {
				if under(imp, f) {
					t.Errorf("%s imports %s", fam, imp)
				}
			}
		}
		for _, dep := range p.Deps {
			if dep == mod+"/server" {
				t.Errorf("%s depends on the server package", fam)
			}
		}
	}
	// The PostgreSQL engine implements the seam on its own: it reaches neither the edge,
	// Connect, nor the other engine. (bbolt itself is among its dependencies only through
	// bleve, whose query parser pgsearch shares with the bleve index: the engine uses none
	// of it, and the loop below holds every package but storage/bolt to not importing it.)
	for _, engine := range []string{"storage/postgres", "storage/postgres/pgsearch"} {
		p, ok := pkgs[mod+"/"+engine]
		if !ok {
			t.Errorf("%s: no such package", engine)
			continue
		}
		for _, dep := range p.Deps {
			for _, f := range []string{mod + "/server", "connectrpc.com/connect", mod + "/storage/bolt"} {
				if under(dep, f) {
					t.Errorf("%s depends on %s", engine, dep)
				}
			}
		}
	}
	for path, p := range pkgs {
		for _, imp := range p.Imports {
			switch {
			case imp == mod+"/storage/bolt" && path != mod && path != mod+"/cmd/svc":
				t.Errorf("%s imports the bbolt engine (only cmd and the default Open may)", path)
			case imp == "go.etcd.io/bbolt" && path != mod+"/storage/bolt":
				t.Errorf("%s imports bbolt (only storage/bolt may)", path)
			case imp == mod+"/storage/postgres" && path != mod && path != mod+"/cmd/svc":
				t.Errorf("%s imports the PostgreSQL engine (only cmd and the default Open may)", path)
			}
		}
	}
}

// TestClientDependencies: the client is for programs that call a hosted svc, so it pulls in
// neither the server, the store, the vault nor the execution engine.
func TestClientDependencies(t *testing.T) {
	p := listPackages(t)[mod+"/client"]
	for _, dep := range p.Deps {
		for _, f := range []string{mod + "/server", mod + "/storage/bolt", "go.etcd.io/bbolt", mod + "/vault", mod + "/execute"} {
			if under(dep, f) {
				t.Errorf("client depends on %s", dep)
			}
		}
	}
}
