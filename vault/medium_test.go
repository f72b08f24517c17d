package vault_test

import (
	"bytes"
	"path/filepath"
	"testing"

	"svc.dev/svc/vault"
	"svc.dev/svc/vault/backend"
	"svc.dev/svc/vault/backend/local"
	"svc.dev/svc/vault/vaulttest"
)

// cachedOnly hides a backend's MediumReader: its verifications read through the page cache.
type cachedOnly struct{ backend.Backend }

// Objects record when their content was last verified from the medium: at commit (small
// and large), and again by Verify; on a backend that cannot read around its cache nothing is
// recorded, and coverage counts those objects as never verified from the medium.
func TestMediumVerifiedAt(t *testing.T) {
	clock := newClock()
	dir := t.TempDir()
	hot, err := local.New(filepath.Join(dir, "hot"))
	if err != nil {
		t.Fatal(err)
	}
	if hot.Medium() == "" {
		t.Skip("this system cannot read around the page cache")
	}
	v, err := vault.Open(dir, vaulttest.NewMeta(), vaulttest.NewKeyStore(), vaulttest.KEK, &vault.Options{Now: clock.Now, Hot: hot})
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	small := put(t, v, tenant, []byte("small content"), vault.PutRequest{SizeBytes: 13})
	large := put(t, v, tenant, bytes.Repeat([]byte("L"), 700<<10), vault.PutRequest{SizeBytes: 700 << 10})
	for _, o := range []vault.Object{small, large} {
		if !o.MediumVerifiedAt.Equal(clock.Now()) {
			t.Fatalf("%s committed with medium_verified_at %v", o.ID, o.MediumVerifiedAt)
		}
	}
	clock.Add(day(8))
	c, _ := v.Coverage(ctx, tenant)
	if c.Windows[0].Objects != 0 || c.Windows[1].Objects != 2 || c.Windows[1].Bytes != 13+700<<10 || c.Never != 0 {
		t.Fatalf("coverage after 8 days: %+v", c)
	}
	o, err := v.Verify(ctx, tenant, small.ID)
	if err != nil || !o.MediumVerifiedAt.Equal(clock.Now()) {
		t.Fatalf("verify: %v, %v", o.MediumVerifiedAt, err)
	}
	c, _ = v.Coverage(ctx, tenant)
	if c.Windows[0].Objects != 1 || c.Windows[0].ObjectShare != 0.5 || c.Windows[0].Bytes != 13 {
		t.Fatalf("coverage after a verify: %+v", c)
	}

	dir2 := t.TempDir()
	hot2, err := local.New(filepath.Join(dir2, "hot"))
	if err != nil {
		t.Fatal(err)
	}
	v2, err := vault.Open(dir2, vaulttest.NewMeta(), vaulttest.NewKeyStore(), vaulttest.KEK, &vault.Options{Now: clock.Now, Hot: cachedOnly{hot2}})
	if err != nil {
		t.Fatal(err)
	}
	defer v2.Close()
	o = put(t, v2, tenant, []byte("cached"), vault.PutRequest{SizeBytes: 6})
	if !o.MediumVerifiedAt.IsZero() || o.VerifiedAt.IsZero() {
		t.Fatalf("without a MediumReader: %+v", o)
	}
	if c, _ := v2.Coverage(ctx, tenant); c.Never != 1 || c.Windows[2].Objects != 0 {
		t.Fatalf("coverage without a MediumReader: %+v", c)
	}
}
