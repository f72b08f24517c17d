package manifest_test

import (
	"bytes"
	"fmt"
	"slices"
	"time"

	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/manifest"
	"svc.dev/svc/providers"
)

// An asset's manifest from discovery to its verified vault copy, exported as a bundle that a
// third party checks from its bytes alone.
func Example() {
	at := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	m, err := manifest.New(&manifest.Asset{
		ManifestID: "mfs_01JD8Y5Q6R7S8T9V0W1X2Y0001", AssetID: "ast_01JD8Y5Q6R7S8T9V0W1X2Y0001",
		TenantRef: "live:usr_01JD0000000000000000000000", Provider: svcv1.Provider_PROVIDER_VENDOR_D_LOCAL,
		SourceRef: "src_01JD0000000000000000000000", AccountLabel: "~/Documents",
		Object: providers.Object{ID: "reports/2024.pdf", Kind: providers.KindFile, Name: "2024.pdf", Path: "reports/2024.pdf",
			SizeBytes: 3 << 20, MIMEType: "application/pdf", CreatedAt: at.AddDate(-2, 0, 0), ModifiedAt: at.AddDate(-2, 0, 0)},
		ObservedAt: at,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	sha := "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
	err = manifest.Apply(m, &manifest.Update{ExecutionID: "exe_01JD8Y5Q6R7S8T9V0W1X2Y0001", At: at.Add(time.Minute),
		Vault: &manifest.Vault{VaultObjectID: "vlt_01JD8Y5Q6R7S8T9V0W1X2Y0001", StorageKey: "sha256/" + sha, SHA256: sha,
			SizeBytes: 3 << 20, CommittedAt: at.Add(time.Minute), VerifiedAt: at.Add(time.Minute)}})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("vaulted:", m.GetVault().GetVaultObjectId())
	fmt.Println("restorable:", m.GetRestore().GetCapable(), slices.Contains(m.GetRestore().GetMethods(), svcv1.RestoreMethod_RESTORE_METHOD_VAULT_TO_DESTINATION))
	for _, e := range m.GetLineage() {
		fmt.Println("lineage:", e.GetFrom(), e.GetRelation(), e.GetTo())
	}
	h, _ := manifest.Hash(m)
	fmt.Println("hash recomputes:", h == m.GetHash())

	var buf bytes.Buffer
	if _, err := manifest.WriteBundle(&buf, manifest.BundleHeader{TenantRef: m.GetTenantRef(), GeneratedAt: at, Count: 1},
		func(yield func(*svcv1.Manifest, error) bool) { yield(m, nil) }); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("bundle verifies:", manifest.VerifyBundle(buf.Bytes()) == nil)
	tampered := bytes.Replace(buf.Bytes(), []byte("2024.pdf"), []byte("2025.pdf"), 1)
	fmt.Println("tampered bundle verifies:", manifest.VerifyBundle(tampered) == nil)
	// Output:
	// vaulted: vlt_01JD8Y5Q6R7S8T9V0W1X2Y0001
	// restorable: true true
	// lineage: ast_01JD8Y5Q6R7S8T9V0W1X2Y0001 LINEAGE_RELATION_ORIGINATED_FROM src_01JD0000000000000000000000/reports/2024.pdf
	// lineage: ast_01JD8Y5Q6R7S8T9V0W1X2Y0001 LINEAGE_RELATION_PRESERVED_AS vlt_01JD8Y5Q6R7S8T9V0W1X2Y0001
	// hash recomputes: true
	// bundle verifies: true
	// tampered bundle verifies: false
}
