package providers_test

import (
	"context"
	"errors"
	"testing"

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
