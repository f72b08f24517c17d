package receipt_test

import (
	"crypto/ed25519"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"svc.dev/svc/receipt"
)

func edKey(seed []byte) ed25519.PrivateKey { return ed25519.NewKeyFromSeed(seed) }

// RFC 8037 appendix A.3: the JWK thumbprint of the appendix A.1 key (the RFC 8032 test 1
// key) is kPrK_qmxVWaYVA9wwBF6Iuo3vVzz7TxHCTwXBygrS4k. The kid is that thumbprint.
func TestKeyIDIsRFC7638Thumbprint(t *testing.T) {
	if got := exampleSigner().KeyID(); got != "kPrK_qmxVWaYVA9wwBF6Iuo3vVzz7TxHCTwXBygrS4k" {
		t.Fatalf("kid %s", got)
	}
}

func TestKeyringFirstOpenRotateReopen(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	k, err := receipt.OpenKeyring(dir)
	if err != nil {
		t.Fatal(err)
	}
	info, err := os.Stat(filepath.Join(dir, receipt.KeyFile))
	if err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("key file: %v, mode %v", err, info.Mode())
	}
	if d, _ := os.Stat(dir); d.Mode().Perm() != 0o700 {
		t.Errorf("directory mode %v", d.Mode())
	}
	first := k.Current()
	_, old := issue(t, fullInput(), k)

	// Reopening keeps the key.
	k2, err := receipt.OpenKeyring(dir)
	if err != nil || k2.Current() != first {
		t.Fatalf("reopen: %v, current %s want %s", err, k2.Current(), first)
	}

	second, err := k.Rotate()
	if err != nil || second == first || k.Current() != second {
		t.Fatalf("rotate: %v (%s -> %s)", err, first, second)
	}
	_, fresh := issue(t, fullInput(), k)
	set := k.KeySet()
	var parsed struct {
		Keys []struct{ Kid, Kty, Crv, X, Use, Alg string }
	}
	if err := json.Unmarshal(set, &parsed); err != nil || len(parsed.Keys) != 2 || parsed.Keys[0].Kid != second || parsed.Keys[1].Kid != first {
		t.Fatalf("key set %s (%v)", set, err)
	}
	for _, jk := range parsed.Keys {
		if jk.Kty != "OKP" || jk.Crv != "Ed25519" || jk.Use != "sig" || jk.Alg != "EdDSA" || jk.X == "" {
			t.Errorf("JWK %+v", jk)
		}
	}
	if strings.Contains(string(set), `"d"`) {
		t.Fatal("the key set publishes a private key")
	}
	for name, served := range map[string][]byte{"old": old, "new": fresh} {
		v, err := receipt.Verify(served, set)
		if err != nil {
			t.Errorf("%s receipt after rotation: %v", name, err)
		}
		if want := map[string]string{"old": first, "new": second}[name]; v != nil && v.KeyID != want {
			t.Errorf("%s receipt signed by %s, want %s", name, v.KeyID, want)
		}
	}

	// The rotation is on disk, still private, with no temporary files left.
	k3, err := receipt.OpenKeyring(dir)
	if err != nil || k3.Current() != second || string(k3.KeySet()) != string(set) {
		t.Fatalf("reopen after rotate: %v", err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("directory holds %d entries, want only %s", len(entries), receipt.KeyFile)
	}
	if info, _ := os.Stat(k.Path()); info.Mode().Perm() != 0o600 {
		t.Errorf("after rotation the key file mode is %v", info.Mode())
	}
}

func TestKeyringRefusesUnsafeOrCorruptFile(t *testing.T) {
	dir := t.TempDir()
	k, err := receipt.OpenKeyring(dir)
	if err != nil {
		t.Fatal(err)
	}
	os.Chmod(k.Path(), 0o644)
	if _, err := receipt.OpenKeyring(dir); err == nil || !strings.Contains(err.Error(), "chmod 600") {
		t.Errorf("world-readable key file: %v", err)
	}
	os.Chmod(k.Path(), 0o600)
	data, _ := os.ReadFile(k.Path())

	var kf map[string]any
	json.Unmarshal(data, &kf)
	kf["current"] = "nope"
	bad, _ := json.Marshal(kf)
	os.WriteFile(k.Path(), bad, 0o600)
	if _, err := receipt.OpenKeyring(dir); err == nil {
		t.Error("missing current key accepted")
	}
	// A private key that does not match its kid (a corrupted file) is refused.
	os.WriteFile(k.Path(), []byte(strings.Replace(string(data), `"d": "`, `"d": "A`, 1)[:len(data)]), 0o600)
	if _, err := receipt.OpenKeyring(dir); err == nil {
		t.Error("corrupted private key accepted")
	}
	os.WriteFile(k.Path(), []byte("{"), 0o600)
	if _, err := receipt.OpenKeyring(dir); err == nil {
		t.Error("truncated file accepted")
	}
}

// Signing while rotating is safe and every receipt verifies with the final key set.
func TestKeyringConcurrentSignAndRotate(t *testing.T) {
	k, err := receipt.OpenKeyring(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var served [][]byte
	for range 4 {
		wg.Go(func() {
			for range 10 {
				_, b, err := receipt.Issue(ptr(fullInput()), k)
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				served = append(served, b)
				mu.Unlock()
			}
		})
	}
	wg.Go(func() {
		for range 3 {
			if _, err := k.Rotate(); err != nil {
				t.Error(err)
			}
		}
	})
	wg.Wait()
	set := k.KeySet()
	for _, b := range served {
		if _, err := receipt.Verify(b, set); err != nil {
			t.Fatal(err)
		}
	}
	var parsed struct{ Keys []any }
	json.Unmarshal(set, &parsed)
	if len(parsed.Keys) != 4 {
		t.Errorf("%d published keys after 3 rotations, want 4", len(parsed.Keys))
	}
}

func ptr[T any](v T) *T { return &v }
