package builtin_test

import (
	"context"
	"errors"
	"os"
	"testing"

	fakedrive "svc.dev/svc/internal/vendorfake/drive"
	fakegmail "svc.dev/svc/internal/vendorfake/gmail"
	"svc.dev/svc/providers"
	"svc.dev/svc/providers/builtin"
	"svc.dev/svc/providers/providertest"
)

// TestVendorConformance runs providertest for the vendor connectors against
// their fakes, in process and through the plugin boundary.
func TestVendorConformance(t *testing.T) {
	for mode, reg := range registries(t) {
		t.Run(mode, func(t *testing.T) {
			t.Run("vendor_a_mail", func(t *testing.T) {
				providertest.Run(t, providertest.Harness{
					Open: func(t testing.TB) (providers.Provider, string) {
						s := fakegmail.New(t, fakegmail.Options{Messages: 40, Seed: 5})
						return openFrom(t, reg, providers.VendorAMail, s.Config()), "me"
					},
					MinObjects: 30,
				})
			})
			t.Run("vendor_a_files", func(t *testing.T) {
				providertest.Run(t, providertest.Harness{
					Open: func(t testing.TB) (providers.Provider, string) {
						s := fakedrive.New(t, fakedrive.Options{Files: 20, Seed: 5})
						return openFrom(t, reg, providers.VendorAFiles, s.Config()), "root"
					},
					MinObjects: 20,
				})
			})
			t.Run("vendor_a_files shared drive", func(t *testing.T) {
				providertest.Run(t, providertest.Harness{
					Open: func(t testing.TB) (providers.Provider, string) {
						s := fakedrive.New(t, fakedrive.Options{Files: 2, SharedFiles: 12, Seed: 5})
						return openFrom(t, reg, providers.VendorAFiles, s.Config()), "drive:" + fakedrive.SharedDriveID
					},
					MinObjects: 12,
				})
			})
		})
	}
}

// TestVendorReauth: a revoked grant reaches the host as ErrReauthRequired
// (and so ErrPermission, which marks the source reauth_required), in
// process and through the plugin boundary.
func TestVendorReauth(t *testing.T) {
	for mode, reg := range registries(t) {
		t.Run(mode, func(t *testing.T) {
			gs := fakegmail.New(t, fakegmail.Options{Messages: 3})
			ds := fakedrive.New(t, fakedrive.Options{Files: 3})
			for _, c := range []struct {
				name providers.Name
				cfg  map[string]string
				ref  string
				kill func()
			}{
				{providers.VendorAMail, gs.Config(), "me", gs.Revoke},
				{providers.VendorAFiles, ds.Config(), "root", ds.Revoke},
			} {
				p := openFrom(t, reg, c.name, c.cfg)
				ctx := context.Background()
				if _, err := p.List(ctx, providers.ListRequest{SourceRef: c.ref}); err != nil {
					t.Fatalf("%s: %v", c.name, err)
				}
				c.kill()
				_, err := p.List(ctx, providers.ListRequest{SourceRef: c.ref})
				if !errors.Is(err, providers.ErrReauthRequired) || !errors.Is(err, providers.ErrPermission) {
					t.Errorf("%s after revocation: %v, want ErrReauthRequired", c.name, err)
				}
			}
		})
	}
}

// TestVendorsOptIn: a registry holds the vendor connectors only when asked,
// so a program can register its own provider under their names.
func TestVendorsOptIn(t *testing.T) {
	reg, err := builtin.Registry(builtin.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Close()
	if _, ok := reg.Lookup(providers.VendorAMail); ok {
		t.Fatal("vendor_a_mail registered without Options.Vendors")
	}
	reg.Register(providers.InProcess(providers.Description{Name: providers.VendorAMail, ProtocolVersion: providers.ProtocolVersion},
		func(context.Context, providers.Config) (providers.Provider, error) {
			return nil, providers.ErrUnsupported
		}))
}

// TestVendorDefaults: a source's configuration holds only its token (as the
// connect flow stores it); the OAuth client comes from Options.Defaults, and
// with it the connector refreshes an expired token, in process and through
// the plugin boundary.
func TestVendorDefaults(t *testing.T) {
	s := fakegmail.New(t, fakegmail.Options{Messages: 4})
	defaults := func(name providers.Name) providers.Config {
		if name != providers.VendorAMail {
			return nil
		}
		cfg := s.Config()
		return providers.Config{"client_id": cfg["client_id"], "client_secret": cfg["client_secret"], "token_url": cfg["token_url"]}
	}
	for mode, exe := range map[string]string{"in-process": "", "plugin": os.Args[0]} {
		t.Run(mode, func(t *testing.T) {
			reg, err := builtin.Registry(builtin.Options{Executable: exe, Vendors: true, Defaults: defaults})
			if err != nil {
				t.Fatal(err)
			}
			defer reg.Close()
			cfg := s.Config()
			for _, k := range []string{"client_id", "client_secret", "token_url"} {
				delete(cfg, k)
			}
			p := openFrom(t, reg, providers.VendorAMail, cfg)
			s.ExpireAccess()
			objs, _ := providertest.ListAll(context.Background(), t, p, "me", 0)
			if len(objs) != 4 {
				t.Errorf("listed %d of 4 after a refresh", len(objs))
			}
		})
	}
}
