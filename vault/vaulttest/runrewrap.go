package vaulttest

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"testing"

	"svc.dev/svc/vault"
)

// RunRewrapStore runs the conformance suite for a vault.RewrapStore (what vault.RewrapKeys
// needs of a key store). open must return an empty store each time.
func RunRewrapStore(t *testing.T, open func(t testing.TB) vault.RewrapStore) {
	ctx := context.Background()
	key := func(b byte) []byte { return bytes.Repeat([]byte{b}, 61) }
	t.Run("Tenants", func(t *testing.T) {
		s := open(t)
		if ts, err := s.Tenants(ctx); err != nil || len(ts) != 0 {
			t.Fatalf("empty store: %v, %v", ts, err)
		}
		for _, tn := range []string{"live:b", "test:a", "live:a"} {
			if _, err := s.CreateWrappedKey(ctx, tn, key(1)); err != nil {
				t.Fatal(err)
			}
		}
		ts, err := s.Tenants(ctx)
		if err != nil || !slices.Equal(ts, []string{"live:a", "live:b", "test:a"}) {
			t.Fatalf("tenants %v, %v", ts, err)
		}
	})
	t.Run("ReplaceIsCompareAndSwap", func(t *testing.T) {
		s := open(t)
		for _, tn := range []string{"a", "b", "c"} {
			if _, err := s.CreateWrappedKey(ctx, tn, key(1)); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.ReplaceWrappedKeys(ctx, []vault.KeyReplacement{{Tenant: "a", Old: key(1), New: key(2)}, {Tenant: "b", Old: key(1), New: key(2)}}); err != nil {
			t.Fatal(err)
		}
		// One stale replacement fails the whole batch: nothing of it is written.
		err := s.ReplaceWrappedKeys(ctx, []vault.KeyReplacement{{Tenant: "c", Old: key(1), New: key(3)}, {Tenant: "a", Old: key(1), New: key(3)}})
		if !errors.Is(err, vault.ErrInvalidState) {
			t.Fatalf("stale replacement: %v", err)
		}
		err = s.ReplaceWrappedKeys(ctx, []vault.KeyReplacement{{Tenant: "missing", Old: key(1), New: key(3)}})
		if !errors.Is(err, vault.ErrInvalidState) {
			t.Fatalf("replacement of a missing key: %v", err)
		}
		for tn, want := range map[string][]byte{"a": key(2), "b": key(2), "c": key(1)} {
			got, err := s.WrappedKey(ctx, tn)
			if err != nil || !bytes.Equal(got, want) {
				t.Fatalf("key of %s: %x, %v", tn, got, err)
			}
		}
		if _, err := s.WrappedKey(ctx, "missing"); !errors.Is(err, vault.ErrNotFound) {
			t.Fatalf("a failed replacement created a key: %v", err)
		}
		// CreateWrappedKey still keeps the key there is.
		if got, err := s.CreateWrappedKey(ctx, "a", key(9)); err != nil || !bytes.Equal(got, key(2)) {
			t.Fatalf("create over a replaced key: %x, %v", got, err)
		}
	})
}
