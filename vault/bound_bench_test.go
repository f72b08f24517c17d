package vault_test

import (
	"bytes"
	"context"
	"io"
	"math/rand/v2"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"svc.dev/svc/vault"
	"svc.dev/svc/vault/vaulttest"
)

// BenchmarkBoundFormats measures what binding chunks to their content (associated data,
// seal versions 3 and 4, medium read-backs) and holding back the final segment on reads
// cost, against the old path (seal versions 1 and 2, no held-back segment) in the same
// run: the two alternate (old, new, new, old) so that what else the machine does falls on
// both. Vaulting: 10,000 messages of about 4 KB with 32 Puts in flight, and 4 files of 48
// MiB one after the other; download: every one of them read back through Open to its end
// (messages 8 at a time). It reports each rate and the ratio new/old (1 is free, below 1 is
// a cost).
//
//	go test ./vault -run '^$' -bench BoundFormats -benchtime=1x
func BenchmarkBoundFormats(b *testing.B) {
	msgs := make([][]byte, smallCount)
	for i := range msgs {
		msgs[i] = message4K(i)
	}
	const largeSize, largeCount = 48 << 20, 4
	large := make([][]byte, largeCount)
	for i := range large {
		large[i] = make([]byte, largeSize)
		rand.NewChaCha8([32]byte{byte(i), 77}).Read(large[i])
	}
	type figures struct{ putSmall, getSmall, putLarge, getLarge time.Duration }
	var old, bound figures
	run := func(legacy bool, f *figures) {
		dir, err := os.MkdirTemp("", "svc-vault-bench-bound-")
		if err != nil {
			b.Fatal(err)
		}
		defer os.RemoveAll(dir)
		v, err := vault.Open(dir, vaulttest.NewMeta(), vaulttest.NewKeyStore(), vaulttest.KEK, nil)
		if err != nil {
			b.Fatal(err)
		}
		defer v.Close()
		vault.SetLegacyFormat(v, legacy)
		ctx := context.Background()
		ids := make([]string, len(msgs))
		t0 := time.Now()
		parallel(b, 32, len(msgs), func(i int) error {
			o, err := v.Put(ctx, tenant, vault.PutRequest{MIMEType: "message/rfc822", SizeBytes: int64(len(msgs[i]))}, bytes.NewReader(msgs[i]))
			ids[i] = o.ID
			return err
		})
		f.putSmall += time.Since(t0)
		t0 = time.Now()
		parallel(b, 8, len(ids), func(i int) error { return readDiscard(ctx, v, ids[i], int64(len(msgs[i]))) })
		f.getSmall += time.Since(t0)
		lids := make([]string, len(large))
		t0 = time.Now()
		for i, data := range large {
			o, err := v.Put(ctx, tenant, vault.PutRequest{Name: "f.bin", SizeBytes: largeSize}, bytes.NewReader(data))
			if err != nil {
				b.Fatal(err)
			}
			lids[i] = o.ID
		}
		f.putLarge += time.Since(t0)
		t0 = time.Now()
		for _, id := range lids {
			if err := readDiscard(ctx, v, id, largeSize); err != nil {
				b.Fatal(err)
			}
		}
		f.getLarge += time.Since(t0)
	}
	for b.Loop() {
		run(true, &old)
		run(false, &bound)
		run(false, &bound)
		run(true, &old)
	}
	n := float64(2 * b.N)
	msgRate := func(d time.Duration) float64 { return float64(len(msgs)) * n / d.Seconds() }
	mbps := func(d time.Duration) float64 { return float64(largeSize*largeCount) * n / d.Seconds() / 1e6 }
	b.ReportMetric(msgRate(old.putSmall), "old-put-msgs/s")
	b.ReportMetric(msgRate(bound.putSmall), "new-put-msgs/s")
	b.ReportMetric(msgRate(bound.putSmall)/msgRate(old.putSmall), "put-small-new/old")
	b.ReportMetric(msgRate(old.getSmall), "old-get-msgs/s")
	b.ReportMetric(msgRate(bound.getSmall), "new-get-msgs/s")
	b.ReportMetric(msgRate(bound.getSmall)/msgRate(old.getSmall), "get-small-new/old")
	b.ReportMetric(mbps(old.putLarge), "old-put-MB/s")
	b.ReportMetric(mbps(bound.putLarge), "new-put-MB/s")
	b.ReportMetric(mbps(bound.putLarge)/mbps(old.putLarge), "put-large-new/old")
	b.ReportMetric(mbps(old.getLarge), "old-get-MB/s")
	b.ReportMetric(mbps(bound.getLarge), "new-get-MB/s")
	b.ReportMetric(mbps(bound.getLarge)/mbps(old.getLarge), "get-large-new/old")
}

// parallel runs fn(0..n-1) on workers goroutines, failing b on the first error.
func parallel(b *testing.B, workers, n int, fn func(i int) error) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				if err := fn(i); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
}

// readDiscard reads an object to its end, as a download does.
func readDiscard(ctx context.Context, v *vault.Vault, id string, size int64) error {
	rc, _, err := v.Open(ctx, tenant, id)
	if err != nil {
		return err
	}
	defer rc.Close()
	_, err = vault.CopyContent(io.Discard, rc, size)
	return err
}
