package webhook

import (
	"bytes"
	"testing"

	"svc.dev/svc/platform"
)

// A master key rotation re-seals a webhook's signing secrets under the new key; a second pass
// changes nothing.
func TestReseal(t *testing.T) {
	from, _ := platform.NewSealer(bytes.Repeat([]byte{1}, 32))
	to, _ := platform.NewSealer(bytes.Repeat([]byte{2}, 32))
	ep := &Endpoint{ID: "whk_01JZ0000000000000000000000"}
	for _, secret := range []string{"whsec_new", "whsec_old"} {
		sealed, err := from.Seal([]byte(secret), secretAAD(ep.ID))
		if err != nil {
			t.Fatal(err)
		}
		ep.Secrets = append(ep.Secrets, SealedSecret{Sealed: sealed})
	}
	if changed, err := Reseal(ep, from, to); err != nil || !changed {
		t.Fatalf("reseal: %v, %v", changed, err)
	}
	for i, want := range []string{"whsec_new", "whsec_old"} {
		got, err := to.Open(ep.Secrets[i].Sealed, secretAAD(ep.ID))
		if err != nil || string(got) != want {
			t.Fatalf("secret %d under the new key: %q, %v", i, got, err)
		}
	}
	if changed, err := Reseal(ep, from, to); err != nil || changed {
		t.Fatalf("second pass: %v, %v", changed, err)
	}
}
