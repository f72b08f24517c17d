package main

import (
	"context"
	"fmt"
	"os"

	"github.com/spf13/pflag"

	"svc.dev/svc/server"
	"svc.dev/svc/vault/backend/s3"
)

// vaultFlags are the vault backend flags that `svc serve` and `svc vault scrub` share: both
// must see the same storage.
type vaultFlags struct{ hot, cold string }

func (v *vaultFlags) register(f *pflag.FlagSet) {
	f.StringVar(&v.hot, "vault-hot", "", "the vault's hot tier on an S3-compatible store: s3://HOST[:PORT]/BUCKET[/PREFIX][?insecure=true&region=R], credentials in AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (default: the data directory)")
	f.StringVar(&v.cold, "vault-cold", "", "the vault's cold tier, like --vault-hot (default: the data directory)")
}

// backends opens the backends the flags name; the zero VaultBackends means local disk.
func (v *vaultFlags) backends(ctx context.Context) (server.VaultBackends, error) {
	var out server.VaultBackends
	for _, f := range []struct {
		name, url string
		set       func(*s3.Backend)
	}{
		{"--vault-hot", v.hot, func(b *s3.Backend) { out.Hot = b }},
		{"--vault-cold", v.cold, func(b *s3.Backend) { out.Cold = b }},
	} {
		if f.url == "" {
			continue
		}
		cfg, err := s3.ParseURL(f.url, os.Getenv)
		if err != nil {
			return out, fmt.Errorf("%s: %w", f.name, err)
		}
		b, err := s3.New(ctx, cfg)
		if err != nil {
			return out, fmt.Errorf("%s: %w", f.name, err)
		}
		f.set(b)
	}
	return out, nil
}
