package vault_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"

	"svc.dev/svc/vault"
	"svc.dev/svc/vault/vaulttest"
)

// BenchmarkRewrapKeys is the vault's part of a master key rotation (`svc keys rotate`):
// 10,000 small objects, spread over 1, 100 or 10,000 tenants, their data keys re-wrapped
// under a new KEK, in batches of 256 keys per durable write of the key store (a file
// written and fsynced, renamed, its directory fsynced). Data keys are per tenant, so the
// time follows the tenants, not the objects. It reports the time per 10,000 objects (one
// rotation of all of them) and per tenant; after each run every object is read back with
// the new KEK alone (not timed).
func BenchmarkRewrapKeys(b *testing.B) {
	const objects = 10_000
	for _, tenants := range []int{1, 100, 10_000} {
		b.Run(fmt.Sprintf("objects=%d/tenants=%d", objects, tenants), func(b *testing.B) {
			dir := b.TempDir()
			meta, mem := vaulttest.NewMeta(), vaulttest.NewKeyStore()
			v, err := vault.Open(dir, meta, mem, vaulttest.KEK, nil)
			if err != nil {
				b.Fatal(err)
			}
			ids := make([]string, objects)
			var next atomic.Int64
			var wg sync.WaitGroup
			for range 32 {
				wg.Go(func() {
					for {
						i := int(next.Add(1) - 1)
						if i >= objects {
							return
						}
						o, err := v.Put(ctx, rotateBenchTenant(i%tenants), vault.PutRequest{SizeBytes: -1}, bytes.NewReader(message4K(i)))
						if err != nil {
							b.Error(err)
							return
						}
						ids[i] = o.ID
					}
				})
			}
			wg.Wait()
			v.Close()
			all := map[string][]byte{}
			names, _ := mem.Tenants(ctx)
			for _, tn := range names {
				all[tn], _ = mem.WrappedKey(ctx, tn)
			}
			raw, err := json.Marshal(all)
			if err != nil {
				b.Fatal(err)
			}
			path := filepath.Join(dir, "keys.json")
			var elapsed float64
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				if err := os.WriteFile(path, raw, 0o600); err != nil {
					b.Fatal(err)
				}
				keys, err := vaulttest.NewFileKeyStore(path)
				if err != nil {
					b.Fatal(err)
				}
				// The setup's writes are flushed first: a rotation runs on a stopped
				// server's quiet data directory, not behind 10,000 fresh writes.
				syscall.Sync()
				b.StartTimer()
				rep, err := vault.RewrapKeys(ctx, keys, newKEK, []vault.KEK{vaulttest.KEK}, nil)
				b.StopTimer()
				if err != nil || !rep.Done || rep.Rewrapped != tenants {
					b.Fatalf("%+v, %v", rep, err)
				}
				b.StartTimer()
			}
			elapsed = b.Elapsed().Seconds()
			b.StopTimer()
			keys, _ := vaulttest.NewFileKeyStore(path)
			v2, err := vault.Open(dir, meta, keys, newKEK, nil)
			if err != nil {
				b.Fatal(err)
			}
			for i := 0; i < objects; i += max(1, objects/tenants/4) {
				if _, err := read(b, v2, rotateBenchTenant(i%tenants), ids[i]); err != nil {
					b.Fatal(err)
				}
			}
			v2.Close()
			b.ReportMetric(elapsed/float64(b.N)*1000, "ms/10k-objects")
			b.ReportMetric(elapsed/float64(b.N)/float64(tenants)*1e6, "us/tenant")
		})
	}
}

func rotateBenchTenant(i int) string { return fmt.Sprintf("live:usr_bench%05d", i) }
