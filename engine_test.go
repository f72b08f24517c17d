package svc

import (
	"sort"
	"testing"

	"svc.dev/svc/id"
)

func TestVaultObjectID(t *testing.T) {
	exe, other := id.New("exe"), id.New("exe")
	a := vaultObjectID(exe, "ast_0004QPH36N8EDQ3WWXDBBFYS2A", 7)
	if b := vaultObjectID(exe, "ast_0004QPH36N8EDQ3WWXDBBFYS2A", 7); a != b {
		t.Fatalf("not deterministic: %s, %s", a, b)
	}
	if id.Prefix(a) != "vlt" || len(a) != len("vlt_")+26 {
		t.Fatalf("not a vault object id: %s", a)
	}
	if vaultObjectID(other, "ast_0004QPH36N8EDQ3WWXDBBFYS2A", 7) == a || vaultObjectID(exe, "ast_7S1H3J09ZJ55G8SGS110M6VSYN", 7) == a {
		t.Fatal("another execution or asset gets the same id")
	}
	// In plan order within an execution, whatever the assets' ids.
	var ids []string
	for i, asset := range []string{"ast_ZZZZQPH36N8EDQ3WWXDBBFYS2A", "ast_0004QPH36N8EDQ3WWXDBBFYS2A", "ast_7S1H3J09ZJ55G8SGS110M6VSYN"} {
		ids = append(ids, vaultObjectID(exe, asset, int64(i)+1000))
	}
	if !sort.StringsAreSorted(ids) {
		t.Fatalf("not in plan order: %v", ids)
	}
}
