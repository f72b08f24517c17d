package builtin_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"svc.dev/svc/internal/versitygw"
	"svc.dev/svc/mail"
	"svc.dev/svc/providers"
	"svc.dev/svc/providers/builtin"
	"svc.dev/svc/providers/internal/fixtures"
	"svc.dev/svc/providers/providertest"
)

// The test binary serves the built-ins as the svc binary does:
// "TESTBINARY plugin serve NAME".
func TestMain(m *testing.M) {
	if len(os.Args) == 4 && os.Args[1] == "plugin" && os.Args[2] == "serve" {
		if err := builtin.Serve(os.Args[3]); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func registries(t *testing.T) map[string]*providers.Registry {
	in, err := builtin.Registry(builtin.Options{Vendors: true})
	if err != nil {
		t.Fatal(err)
	}
	out, err := builtin.Registry(builtin.Options{Executable: os.Args[0], Vendors: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { in.Close(); out.Close() })
	return map[string]*providers.Registry{"in-process": in, "plugin": out}
}

func openFrom(t testing.TB, reg *providers.Registry, name providers.Name, cfg providers.Config) providers.Provider {
	t.Helper()
	p, err := reg.Open(context.Background(), name, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestConformance runs providertest for every built-in, in process and
// through the plugin boundary.
func TestConformance(t *testing.T) {
	for mode, reg := range registries(t) {
		t.Run(mode, func(t *testing.T) {
			t.Run("simulated", func(t *testing.T) {
				providertest.Run(t, providertest.Harness{
					Open: func(t testing.TB) (providers.Provider, string) {
						return openFrom(t, reg, providers.Simulated, providers.Config{"seed": "11", "objects": "60"}), "files"
					},
					MinObjects: 60,
				})
			})
			t.Run("vendor_d_local", func(t *testing.T) {
				providertest.Run(t, providertest.Harness{
					Open: func(t testing.TB) (providers.Provider, string) {
						root := t.TempDir()
						if _, err := fixtures.LocalTree(root); err != nil {
							t.Fatal(err)
						}
						return openFrom(t, reg, providers.VendorDLocal, providers.Config{"root": root, "trash_dir": t.TempDir()}), ""
					},
					MinObjects:  12,
					FetchSample: 20,
				})
			})
			t.Run("svc_vault", func(t *testing.T) {
				providertest.Run(t, providertest.Harness{
					Open: func(t testing.TB) (providers.Provider, string) {
						dir := t.TempDir()
						seed := t.TempDir()
						if err := fixtures.ManyFiles(seed, 5, 1000); err != nil {
							t.Fatal(err)
						}
						p := openFrom(t, reg, providers.SvcVault, providers.Config{"dir": dir})
						fillVault(t, p, seed)
						return p, "vault"
					},
					MinObjects: 5,
				})
			})
			t.Run("object_store_compatible", func(t *testing.T) {
				srv := versitygw.Start(t)
				providertest.Run(t, providertest.Harness{
					Open: func(t testing.TB) (providers.Provider, string) {
						b := srv.Bucket(t, map[string]string{"a.txt": "alpha", "b/c.jpg": "pretend jpeg", "d.bin": "delta delta"})
						return openFrom(t, reg, providers.ObjectStoreCompatible, srv.Config()), b
					},
				})
			})
		})
	}
}

// TestRawMailThroughPlugin: a message with raw 8-bit headers and one that is not a message at
// all are listed, in valid UTF-8, in process and through the plugin boundary (which refuses
// invalid UTF-8).
func TestRawMailThroughPlugin(t *testing.T) {
	for mode, reg := range registries(t) {
		t.Run(mode, func(t *testing.T) {
			root := t.TempDir()
			if _, err := fixtures.LocalTree(root); err != nil {
				t.Fatal(err)
			}
			p := openFrom(t, reg, providers.VendorDLocal, providers.Config{"root": root, "trash_dir": t.TempDir()})
			objs, _ := providertest.ListAll(context.Background(), t, p, "", 1000)
			byID := map[string]providers.Object{}
			for _, o := range objs {
				byID[o.ID] = o
			}
			latin := byID["Mail/Inbox/1700000004.M4P1.host"]
			if latin.Name != "Mañana a las 10" || latin.Message == nil || latin.Message.From != "jose@example.es" ||
				latin.Metadata[mail.FactFromName] != "José García" || !strings.Contains(latin.Metadata[mail.FactProblems], "8-bit") {
				t.Errorf("raw 8-bit message listed as %q %+v %v", latin.Name, latin.Message, latin.Metadata)
			}
			junk, ok := byID["Mail/Inbox/1700000005.M5P1.host"]
			if !ok || junk.Metadata[mail.FactUnreadable] == "" || junk.SizeBytes == 0 {
				t.Errorf("unreadable message listed as %+v (listed: %v)", junk, ok)
			}
		})
	}
}

// fillVault writes distinct blobs into a vault provider.
func fillVault(t testing.TB, p providers.Provider, dir string) {
	t.Helper()
	w, _ := providers.AsWriter(p)
	i := 0
	err := filepath.Walk(dir, func(path string, fi os.FileInfo, err error) error {
		if err != nil || fi.IsDir() {
			return err
		}
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		i++
		_, err = w.Write(context.Background(), providers.WriteRequest{SourceRef: "vault", Path: fi.Name(), SizeBytes: -1}, &suffixReader{f: f, suffix: fmt.Sprint(i)})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// suffixReader makes identical fixture files distinct blobs.
type suffixReader struct {
	f      *os.File
	suffix string
	done   bool
}

func (r *suffixReader) Read(p []byte) (int, error) {
	n, err := r.f.Read(p)
	if err != nil && !r.done {
		r.done = true
		return copy(p, r.suffix), nil
	}
	return n, err
}

func TestRegistryDescribesBuiltins(t *testing.T) {
	for mode, reg := range registries(t) {
		t.Run(mode, func(t *testing.T) {
			want := []providers.Name{providers.VendorAMail, providers.VendorAFiles, providers.VendorBMail, providers.VendorBFiles, providers.VendorCFiles,
				providers.VendorDLocal, providers.ObjectStoreCompatible, providers.SvcVault, providers.Simulated}
			got := reg.Names()
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("names %v, want %v", got, want)
			}
			for _, n := range got {
				d, err := reg.Describe(context.Background(), n)
				if err != nil {
					t.Fatal(err)
				}
				if err := providers.ValidateDescription(d); err != nil || d.Name != n {
					t.Errorf("%s: %+v: %v", n, d, err)
				}
				if r, _ := reg.Lookup(n); r.OutOfProcess != (mode == "plugin") {
					t.Errorf("%s: OutOfProcess %v in mode %s", n, r.OutOfProcess, mode)
				}
			}
			if _, err := reg.Open(context.Background(), providers.Name("no_such_provider"), nil); !errors.Is(err, providers.ErrUnknownProvider) {
				t.Errorf("unregistered provider: %v", err)
			}
		})
	}
}

func TestPluginDirectory(t *testing.T) {
	dir := t.TempDir()
	// A plugin executable in the directory: a wrapper script that runs the
	// test binary as the simulated plugin. Named like a built-in, it
	// replaces it.
	script := "#!/bin/sh\nexec " + os.Args[0] + " plugin serve simulated\n"
	if err := os.WriteFile(filepath.Join(dir, "svc-provider-simulated"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "svc-provider-not_a_provider"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "README"), []byte("ignored"), 0o644); err != nil {
		t.Fatal(err)
	}
	reg, err := builtin.Registry(builtin.Options{PluginDir: dir})
	if err == nil {
		t.Error("a misnamed plugin was not reported")
	}
	defer reg.Close()
	r, ok := reg.Lookup(providers.Simulated)
	if !ok || !r.OutOfProcess {
		t.Fatalf("the discovered plugin did not replace the in-process built-in: %+v", r)
	}
	p := openFrom(t, reg, providers.Simulated, providers.Config{"objects": "3"})
	if _, err := p.List(context.Background(), providers.ListRequest{SourceRef: "mail"}); err != nil {
		t.Fatal(err)
	}
}

func TestServeUnknown(t *testing.T) {
	if err := builtin.Serve("no_such_provider"); !errors.Is(err, providers.ErrUnknownProvider) {
		t.Fatalf("got %v", err)
	}
}
