package svc

import (
	"context"
	"testing"

	"svc.dev/svc/providers"
)

// Renewed credentials are stored only over the refresh token the reporting instance held: a
// source connected again meanwhile keeps its new grant.
func TestRenewedCredentialsNeverReplaceANewerGrant(t *testing.T) {
	ctx := context.Background()
	sv, err := OpenMemory(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer sv.Close()
	src, err := sv.ConnectSource(ctx, SourceSpec{Provider: providers.Simulated, SourceRef: "mail", Config: providers.Config{"objects": "3"}})
	if err != nil {
		t.Fatal(err)
	}
	// The configuration a vendor source has (the simulated provider is not opened again).
	connect := func(refresh, access string) {
		t.Helper()
		cfg := providers.Config{"objects": "3", providers.KeyRefreshToken: refresh, providers.KeyAccessToken: access}
		if err := sv.sealSourceConfig(ctx, src.Id, providers.Simulated, "mail", cfg); err != nil {
			t.Fatal(err)
		}
	}
	connect("r1", "a1")
	stored := func() providers.Config {
		t.Helper()
		cfg, err := sv.sourceConfig(ctx, src.Id)
		if err != nil {
			t.Fatal(err)
		}
		return cfg.Config
	}
	kept, err := sv.storeCredentials(ctx, src.Id, "r1", providers.Config{providers.KeyRefreshToken: "r2", providers.KeyAccessToken: "a2", "objects": "999"})
	if err != nil || !kept {
		t.Fatalf("kept %v, %v", kept, err)
	}
	if cfg := stored(); cfg[providers.KeyRefreshToken] != "r2" || cfg[providers.KeyAccessToken] != "a2" || cfg["objects"] != "3" {
		t.Fatalf("stored %v: want the renewed credentials and nothing else changed", cfg)
	}
	// A refresh that brings no refresh token keeps the one stored.
	if kept, err := sv.storeCredentials(ctx, src.Id, "r2", providers.Config{providers.KeyAccessToken: "a3"}); err != nil || !kept {
		t.Fatalf("kept %v, %v", kept, err)
	}
	if cfg := stored(); cfg[providers.KeyRefreshToken] != "r2" || cfg[providers.KeyAccessToken] != "a3" {
		t.Fatalf("stored %v", cfg)
	}
	// The source is connected again (a new grant); then an instance opened before reports a
	// token renewed from the old grant: it is not kept.
	connect("n1", "na1")
	if kept, err := sv.storeCredentials(ctx, src.Id, "r2", providers.Config{providers.KeyRefreshToken: "r3", providers.KeyAccessToken: "a4"}); err != nil || kept {
		t.Fatalf("kept %v, %v: a renewal of a replaced grant was stored", kept, err)
	}
	if cfg := stored(); cfg[providers.KeyRefreshToken] != "n1" {
		t.Fatalf("stored %v, want the new grant", cfg)
	}
	// A source that is gone keeps nothing, and that is no error.
	if kept, err := sv.storeCredentials(ctx, "src_01M8CVYRSNM6M8WZAB3ZMBX4FS", "n1", providers.Config{providers.KeyAccessToken: "x"}); err != nil || kept {
		t.Fatalf("gone source: kept %v, %v", kept, err)
	}
}
