package providers_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"svc.dev/svc/providers"
	"svc.dev/svc/providers/simulated"
)

func TestRegisterPanicsOnDuplicateOrUnknownName(t *testing.T) {
	reg := providers.NewRegistry()
	reg.Register(providers.InProcess(simulated.Description, simulated.New))
	for name, r := range map[string]providers.Registration{
		"duplicate": providers.InProcess(simulated.Description, simulated.New),
		"unknown":   {Name: "vendor_z", Open: simulated.New, Describe: func(context.Context) (providers.Description, error) { return simulated.Description, nil }},
		"nil open":  {Name: providers.VendorAMail},
	} {
		t.Run(name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Error("no panic")
				}
			}()
			reg.Register(r)
		})
	}
	if _, err := reg.Open(context.Background(), providers.VendorBMail, nil); !errors.Is(err, providers.ErrUnknownProvider) {
		t.Errorf("open of an unregistered provider: %v", err)
	}
}

func TestOperationClassesFor(t *testing.T) {
	got := providers.OperationClassesFor([]providers.Capability{providers.CapTrash})
	want := []providers.OperationClass{providers.Discover, providers.Preserve, providers.Remove, providers.Monitor}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("got %v, want %v", got, want)
		}
	}
}

func TestValidateObject(t *testing.T) {
	good := providers.Object{ID: "a", Kind: providers.KindFile, SizeBytes: 1}
	if err := providers.ValidateObject(good); err != nil {
		t.Fatal(err)
	}
	for name, o := range map[string]providers.Object{
		"empty id":      {Kind: providers.KindFile},
		"control":       {ID: "a\nb", Kind: providers.KindFile},
		"negative size": {ID: "a", Kind: providers.KindFile, SizeBytes: -1},
		"bad sha":       {ID: "a", Kind: providers.KindFile, SHA256: "ABC"},
		"bad kind":      {ID: "a", Kind: "blob"},
	} {
		if providers.ValidateObject(o) == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

type slowCloser struct{ d time.Duration }

func (s slowCloser) Close() error { time.Sleep(s.d); return nil }

// TestRegistryClosesPluginsInParallel: a host's shutdown closes every plugin host; each may
// wait a moment for its process's clean-up, and those moments must not add up (issue 27).
func TestRegistryClosesPluginsInParallel(t *testing.T) {
	reg := providers.NewRegistry()
	for _, name := range []providers.Name{providers.Simulated, providers.VendorDLocal, providers.ObjectStoreCompatible, providers.SvcVault} {
		desc := simulated.Description
		desc.Name = name
		r := providers.InProcess(desc, simulated.New)
		r.Closer = &slowCloser{300 * time.Millisecond}
		reg.Register(r)
	}
	start := time.Now()
	reg.Close()
	if d := time.Since(start); d > time.Second {
		t.Fatalf("Close of four plugin hosts of 300 ms each took %s", d)
	}
}
