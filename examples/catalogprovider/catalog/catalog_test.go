package catalog_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"svc.dev/svc/examples/catalogprovider/catalog"
	"svc.dev/svc/providers"
	"svc.dev/svc/providers/plugin"
	"svc.dev/svc/providers/providertest"
)

const sample = `{"revision": 3, "files": [
 {"id": "f1", "name": "a.txt", "folder": "Docs", "content": "alpha", "modified": "2024-01-02T03:04:05Z"},
 {"id": "f2", "name": "b.txt", "folder": "Docs", "content": "bravo bravo", "modified": "2024-02-02T03:04:05Z"},
 {"id": "f3", "name": "c.txt", "folder": "Misc", "content": "charlie", "modified": "2024-03-02T03:04:05Z"}]}`

func catalogFile(t testing.TB) string {
	path := filepath.Join(t.TempDir(), "catalog.json")
	if err := os.WriteFile(path, []byte(sample), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestConformanceInProcess(t *testing.T) {
	providertest.Run(t, providertest.Harness{
		Open: func(t testing.TB) (providers.Provider, string) {
			p, err := catalog.New(context.Background(), providers.Config{"catalog": catalogFile(t)})
			if err != nil {
				t.Fatal(err)
			}
			return p, "default"
		},
	})
}

// TestConformanceAsPlugin builds the example's plugin binary and runs the
// same suite through the plugin boundary, as svc would run it.
func TestConformanceAsPlugin(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "svc-provider-vendor_c_files")
	build := exec.Command("go", "build", "-o", bin, "svc.dev/svc/examples/catalogprovider/cmd/svc-provider-vendor_c_files")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build the plugin: %v\n%s", err, out)
	}
	found, err := plugin.Discover(filepath.Dir(bin))
	if err != nil || len(found) != 1 || found[0].Name != providers.VendorCFiles {
		t.Fatalf("discover: %v, %v", found, err)
	}
	pl := plugin.NewPlugin(found[0].Name, plugin.Command(found[0].Path), nil)
	defer pl.Close()
	providertest.Run(t, providertest.Harness{
		Open: func(t testing.TB) (providers.Provider, string) {
			p, err := pl.Open(context.Background(), providers.Config{"catalog": catalogFile(t)})
			if err != nil {
				t.Fatal(err)
			}
			return p, "default"
		},
	})
}
