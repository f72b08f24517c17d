package svc

import (
	"testing"

	"svc.dev/svc/id"
)

// The manifest the engine creates for an asset has an id derived from the tenant and the
// asset: a vault write redone after a crash (its object written, the manifest not yet stored)
// names the same manifest the second time.
func TestManifestIDOfIsDerived(t *testing.T) {
	a := manifestIDOf("test:usr_1", "ast_01")
	if !id.Valid("mfs", a) {
		t.Fatalf("%q is not an mfs_ id", a)
	}
	if b := manifestIDOf("test:usr_1", "ast_01"); b != a {
		t.Fatalf("the same asset got %s, then %s", a, b)
	}
	for _, other := range []string{manifestIDOf("live:usr_1", "ast_01"), manifestIDOf("test:usr_1", "ast_02")} {
		if other == a {
			t.Fatalf("another tenant or asset got the same manifest id %s", a)
		}
	}
}
