package vault_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"svc.dev/svc/providers"
	"svc.dev/svc/providers/local"
	"svc.dev/svc/storage/bolt"
	"svc.dev/svc/vault"
	localbackend "svc.dev/svc/vault/backend/local"
	"svc.dev/svc/vault/vaulttest"
)

// The benchmarks measure, side by side in one run:
//
//   - BenchmarkLargeFiles: vaulting about 1.2 GB of files of mixed sizes
//     read from a vendor_d_local source, against reading and hashing the
//     same files with a plain read+SHA-256 loop (target: vault >= 50%),
//     and the disk's share alone (the same bytes written to the vault's
//     backend and read back, no hashing or encryption).
//   - BenchmarkSmallObjects: 10,000 messages of about 4 KB, against
//     writing each to its own file with one fsync per asset (target:
//     >= 5x), with assets per durable write: "fsync" is create, write,
//     fsync; "naive" adds the rename and directory fsync that make it
//     crash-safe; naive32 is naive with 32 writers like the vault.
//   - BenchmarkPeakMemory: peak heap and RSS while vaulting one 64 MiB and
//     one 1 GiB stream (target: the same).
//   - BenchmarkSmallObjectsStore: the vault's part of a clean-up on the
//     server's bbolt store, with CPU, allocations and syncs per message.
//
// docs/benchmarks.md records the figures and the command.

// largeSizes are the source files: 1.19 GiB over sizes from 2 to 256 MiB.
var largeSizes = func() []int {
	var s []int
	for _, c := range []struct{ n, mib int }{{1, 256}, {2, 128}, {4, 64}, {8, 32}, {16, 8}, {32, 2}} {
		for range c.n {
			s = append(s, c.mib<<20)
		}
	}
	return s
}()

var (
	sourceOnce sync.Once
	sourceDir  string
	sourceErr  error
)

// TestMain removes the benchmarks' source files when the process ends.
func TestMain(m *testing.M) {
	code := m.Run()
	if sourceDir != "" {
		os.RemoveAll(sourceDir)
	}
	os.Exit(code)
}

// largeSource writes the source files once per process, with random
// (incompressible) content, into a directory TestMain removes.
func largeSource(b *testing.B) (string, int64) {
	sourceOnce.Do(func() {
		sourceDir, sourceErr = os.MkdirTemp("", "svc-vault-bench-src-")
		if sourceErr != nil {
			return
		}
		buf := make([]byte, 1<<20)
		rng := rand.NewChaCha8([32]byte{42})
		for i, size := range largeSizes {
			f, err := os.Create(filepath.Join(sourceDir, "docs", fmt.Sprintf("f%02d.bin", i)))
			if os.IsNotExist(err) {
				os.MkdirAll(filepath.Join(sourceDir, "docs"), 0o700)
				f, err = os.Create(filepath.Join(sourceDir, "docs", fmt.Sprintf("f%02d.bin", i)))
			}
			if err != nil {
				sourceErr = err
				return
			}
			for left := size; left > 0; left -= len(buf) {
				rng.Read(buf)
				f.Write(buf[:min(left, len(buf))])
			}
			f.Close()
		}
	})
	if sourceErr != nil {
		b.Fatal(sourceErr)
	}
	var total int64
	for _, s := range largeSizes {
		total += int64(s)
	}
	return sourceDir, total
}

// readHash is the baseline: a plain loop reading every file and hashing it.
func readHash(b *testing.B, dir string) int64 {
	var n int64
	buf := make([]byte, 1<<20)
	entries, _ := os.ReadDir(filepath.Join(dir, "docs"))
	for _, e := range entries {
		f, err := os.Open(filepath.Join(dir, "docs", e.Name()))
		if err != nil {
			b.Fatal(err)
		}
		h := sha256.New()
		m, err := io.CopyBuffer(h, f, buf)
		f.Close()
		if err != nil {
			b.Fatal(err)
		}
		n += m
		_ = h.Sum(nil)
	}
	return n
}

// vaultFromProvider lists the vendor_d_local source and vaults every file
// with a few concurrent workers, fetching each against its listed version
// as the execution engine does.
func vaultFromProvider(b *testing.B, p providers.Provider, v *vault.Vault, workers int) int64 {
	ctx := context.Background()
	page, err := p.List(ctx, providers.ListRequest{SourceRef: "", PageSize: 1000})
	if err != nil {
		b.Fatal(err)
	}
	var n atomic.Int64
	work := make(chan providers.Object)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for o := range work {
				c, err := p.Fetch(ctx, providers.FetchRequest{ObjectID: o.ID, ExpectedVersion: o.Version})
				if err != nil {
					b.Error(err)
					continue
				}
				vo, err := v.Put(ctx, tenant, vault.PutRequest{Name: o.Name, MIMEType: o.MIMEType, Kind: string(o.Kind), SizeBytes: o.SizeBytes}, c.Body)
				c.Body.Close()
				if err != nil {
					b.Error(err)
					continue
				}
				n.Add(vo.SizeBytes)
			}
		})
	}
	for _, o := range page.Objects {
		if o.Kind != providers.KindFolder {
			work <- o
		}
	}
	close(work)
	wg.Wait()
	return n.Load()
}

// diskOnly is the disk's share of vaulting, the third figure of
// BenchmarkLargeFiles: the same files copied with the same workers into
// the vault's local backend (direct I/O, fsync, rename) and read back from
// it, without hashing, encryption or records. Vaulting cannot be faster.
func diskOnly(b *testing.B, src string, workers int) int64 {
	ctx := context.Background()
	be, err := localbackend.New(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	entries, _ := os.ReadDir(filepath.Join(src, "docs"))
	var n atomic.Int64
	work := make(chan string)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for name := range work {
				in, err := os.Open(filepath.Join(src, "docs", name))
				if err != nil {
					b.Error(err)
					continue
				}
				f, err := be.Create(ctx)
				if err == nil {
					_, err = io.Copy(f, in)
				}
				in.Close()
				if err == nil {
					err = f.Commit(ctx, name)
				}
				if err != nil {
					b.Error(err)
					continue
				}
				rc, err := be.Open(ctx, name, 0, -1)
				if err != nil {
					b.Error(err)
					continue
				}
				m, err := io.Copy(io.Discard, rc)
				rc.Close()
				if err != nil {
					b.Error(err)
				}
				n.Add(m)
			}
		})
	}
	for _, e := range entries {
		work <- e.Name()
	}
	close(work)
	wg.Wait()
	return n.Load()
}

func BenchmarkLargeFiles(b *testing.B) {
	dir, total := largeSource(b)
	p, err := local.New(context.Background(), providers.Config{"root": dir})
	if err != nil {
		b.Fatal(err)
	}
	workers := runtime.GOMAXPROCS(0)
	if w, err := strconv.Atoi(os.Getenv("VAULT_BENCH_WORKERS")); err == nil {
		workers = w
	}
	var hashTime, vaultTime, diskTime, hashCPU, vaultCPU time.Duration
	var stats vault.Stats
	b.SetBytes(total)
	for b.Loop() {
		readHash(b, dir) // warm the page cache like the measured pass
		t0, c0 := time.Now(), cpuTime()
		if n := readHash(b, dir); n != total {
			b.Fatalf("read %d bytes of %d", n, total)
		}
		hashTime += time.Since(t0)
		hashCPU += cpuTime() - c0

		vdir, err := os.MkdirTemp("", "svc-vault-bench-")
		if err != nil {
			b.Fatal(err)
		}
		v, err := vault.Open(vdir, vaulttest.NewMeta(), vaulttest.NewKeyStore(), vaulttest.KEK, nil)
		if err != nil {
			b.Fatal(err)
		}
		t0, c0 = time.Now(), cpuTime()
		if n := vaultFromProvider(b, p, v, workers); n != total {
			b.Fatalf("vaulted %d bytes of %d", n, total)
		}
		vaultTime += time.Since(t0)
		vaultCPU += cpuTime() - c0
		stats = v.Stats()
		v.Close()
		b.StopTimer()
		os.RemoveAll(vdir)
		b.StartTimer()

		t0 = time.Now()
		if n := diskOnly(b, dir, workers); n != total {
			b.Fatalf("copied %d bytes of %d", n, total)
		}
		diskTime += time.Since(t0)
	}
	mbps := func(d time.Duration) float64 { return float64(total) * float64(b.N) / d.Seconds() / 1e6 }
	b.ReportMetric(mbps(hashTime), "readhash-MB/s")
	b.ReportMetric(mbps(vaultTime), "vault-MB/s")
	b.ReportMetric(mbps(vaultTime)/mbps(hashTime), "vault/readhash")
	b.ReportMetric(mbps(diskTime), "disk-MB/s")
	b.ReportMetric(mbps(vaultTime)/mbps(diskTime), "vault/disk")
	b.ReportMetric(float64(workers), "workers")
	gb := float64(total) * float64(b.N) / 1e9
	b.ReportMetric(hashCPU.Seconds()/gb, "readhash-cpu-s/GB")
	b.ReportMetric(vaultCPU.Seconds()/gb, "vault-cpu-s/GB")
	b.Logf("%d files, %d bytes; vault stats of the last run %+v", len(largeSizes), total, stats)
}

// cpuTime returns the process's user and system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// message returns a message of about 4 KB: headers and a plain text body.
func message4K(i int) []byte { return benchMail(i, 4000, "") }

// benchMail returns message i of a benchmark: a plain-text mail of about size bytes of words,
// with extra header lines (each ending in CRLF) before its Content-Type.
func benchMail(i, size int, extra string) []byte {
	var buf bytes.Buffer
	fmt.Fprintf(&buf, "From: sender%d@example.com\r\nTo: me@example.com\r\nSubject: Update number %d\r\nDate: Sun, 22 Nov 2026 10:00:00 +0000\r\nMessage-ID: <%d@example.com>\r\n%sContent-Type: text/plain; charset=utf-8\r\n\r\n", i%97, i, i, extra)
	rng := rand.New(rand.NewPCG(uint64(i), 7))
	words := []string{"invoice", "account", "trial", "renewal", "payment", "receipt", "order", "shipping", "newsletter", "offer", "meeting", "project"}
	for buf.Len() < size {
		buf.WriteString(words[rng.IntN(len(words))])
		if rng.IntN(12) == 0 {
			buf.WriteString(".\r\n")
		} else {
			buf.WriteByte(' ')
		}
	}
	return buf.Bytes()
}

// bboltLikeMeta makes every metadata transaction durable about the way
// bbolt commits (two syncs: the dirty pages, then the meta page; here two
// writes and fsyncs of a file), so that the figures include what the
// server's metadata store will cost.
type bboltLikeMeta struct {
	*vaulttest.Meta
	f *os.File
	n atomic.Int64
}

func (m *bboltLikeMeta) Update(ctx context.Context, tenant string, fn func(vault.MetaTx) error) error {
	if err := m.Meta.Update(ctx, tenant, fn); err != nil {
		return err
	}
	m.n.Add(1)
	for range 2 {
		if _, err := m.f.WriteAt(make([]byte, 4096), 0); err != nil {
			return err
		}
		if err := m.f.Sync(); err != nil {
			return err
		}
	}
	return nil
}

const smallCount = 10_000

// naiveSmall writes each message to its own file the safe way (temporary
// file, fsync, rename, directory fsync): one durable write per asset. With
// fsyncOnly it only creates, writes and fsyncs each file (one fsync per
// asset and nothing else: faster, though a crash can lose the name).
func naiveSmall(b *testing.B, msgs [][]byte, workers int, fsyncOnly bool) {
	dir, err := os.MkdirTemp("", "svc-vault-bench-naive-")
	if err != nil {
		b.Fatal(err)
	}
	defer os.RemoveAll(dir)
	d, _ := os.Open(dir)
	defer d.Close()
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= len(msgs) {
					return
				}
				tmp := filepath.Join(dir, "tmp-"+strconv.Itoa(i))
				f, err := os.Create(tmp)
				if err != nil {
					b.Error(err)
					return
				}
				f.Write(msgs[i])
				f.Sync()
				f.Close()
				if fsyncOnly {
					continue
				}
				os.Rename(tmp, filepath.Join(dir, fmt.Sprintf("%x", sha256.Sum256(msgs[i]))))
				d.Sync()
			}
		})
	}
	wg.Wait()
}

func vaultSmall(b *testing.B, msgs [][]byte, workers int, durableMeta bool) (vault.Stats, int64) {
	dir, err := os.MkdirTemp("", "svc-vault-bench-small-")
	if err != nil {
		b.Fatal(err)
	}
	defer os.RemoveAll(dir)
	var meta vault.Meta = vaulttest.NewMeta()
	var bm *bboltLikeMeta
	if durableMeta {
		f, err := os.Create(filepath.Join(dir, "meta.db"))
		if err != nil {
			b.Fatal(err)
		}
		defer f.Close()
		bm = &bboltLikeMeta{Meta: vaulttest.NewMeta(), f: f}
		meta = bm
	}
	v, err := vault.Open(dir, meta, vaulttest.NewKeyStore(), vaulttest.KEK, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer v.Close()
	ctx := context.Background()
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= len(msgs) {
					return
				}
				if _, err := v.Put(ctx, tenant, vault.PutRequest{MIMEType: "message/rfc822", SizeBytes: int64(len(msgs[i]))}, bytes.NewReader(msgs[i])); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	var txs int64
	if bm != nil {
		txs = bm.n.Load()
	}
	return v.Stats(), txs
}

func BenchmarkSmallObjects(b *testing.B) {
	msgs := make([][]byte, smallCount)
	for i := range msgs {
		msgs[i] = message4K(i)
	}
	const workers = 32
	var tFsync1, tNaive1, tNaiveN, tVault, tVaultMeta time.Duration
	var s, sm vault.Stats
	var txs int64
	for b.Loop() {
		t0 := time.Now()
		naiveSmall(b, msgs, 1, true)
		tFsync1 += time.Since(t0)
		t0 = time.Now()
		naiveSmall(b, msgs, 1, false)
		tNaive1 += time.Since(t0)
		t0 = time.Now()
		naiveSmall(b, msgs, workers, false)
		tNaiveN += time.Since(t0)
		t0 = time.Now()
		s, _ = vaultSmall(b, msgs, workers, false)
		tVault += time.Since(t0)
		t0 = time.Now()
		sm, txs = vaultSmall(b, msgs, workers, true)
		tVaultMeta += time.Since(t0)
	}
	rate := func(d time.Duration) float64 { return float64(smallCount*b.N) / d.Seconds() }
	b.ReportMetric(rate(tFsync1), "fsync-assets/s")
	b.ReportMetric(rate(tVault)/rate(tFsync1), "vault/fsync")
	b.ReportMetric(rate(tNaive1), "naive-assets/s")
	b.ReportMetric(rate(tNaiveN), "naive32-assets/s")
	b.ReportMetric(rate(tVault), "vault-assets/s")
	b.ReportMetric(rate(tVaultMeta), "vault+meta-assets/s")
	b.ReportMetric(rate(tVault)/rate(tNaive1), "vault/naive")
	b.ReportMetric(rate(tVaultMeta)/rate(tNaive1), "vault+meta/naive")
	b.ReportMetric(rate(tVault)/rate(tNaiveN), "vault/naive32")
	b.ReportMetric(s.AssetsPerDurableWrite(), "assets/durable-write")
	b.ReportMetric(float64(smallCount)/float64(max(txs, 1)), "assets/meta-tx")
	b.Logf("vault %+v; with metadata fsyncs %+v, %d metadata transactions", s, sm, txs)
}

// genReader streams n pseudo-random bytes without holding them.
type genReader struct {
	rng *rand.ChaCha8
	n   int64
}

func (g *genReader) Read(p []byte) (int, error) {
	if g.n <= 0 {
		return 0, io.EOF
	}
	if int64(len(p)) > g.n {
		p = p[:g.n]
	}
	g.rng.Read(p)
	g.n -= int64(len(p))
	return len(p), nil
}

// peakHeap samples the heap in use every millisecond while fn runs.
func peakHeap(fn func()) uint64 {
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	runtime.GC()
	var peak atomic.Uint64
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		t := time.NewTicker(time.Millisecond)
		defer t.Stop()
		for {
			metrics.Read(sample)
			if v := sample[0].Value.Uint64(); v > peak.Load() {
				peak.Store(v)
			}
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	}()
	fn()
	close(done)
	<-stopped
	return peak.Load()
}

func peakRSS() int64 {
	raw, _ := os.ReadFile("/proc/self/status")
	for _, line := range strings.Split(string(raw), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10
		}
	}
	return 0
}

func BenchmarkPeakMemory(b *testing.B) {
	for _, size := range []int64{64 << 20, 1 << 30} {
		b.Run(fmt.Sprintf("%dMiB", size>>20), func(b *testing.B) {
			b.SetBytes(size)
			var heap uint64
			var rss int64
			for b.Loop() {
				dir, err := os.MkdirTemp("", "svc-vault-bench-mem-")
				if err != nil {
					b.Fatal(err)
				}
				v, err := vault.Open(dir, vaulttest.NewMeta(), vaulttest.NewKeyStore(), vaulttest.KEK, nil)
				if err != nil {
					b.Fatal(err)
				}
				put(b, v, tenant, []byte("warm up"), vault.PutRequest{})
				// Return what earlier benchmarks left to the OS, then reset
				// the peak (VmHWM) to the current RSS.
				debug.FreeOSMemory()
				_ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0)
				heap = max(heap, peakHeap(func() {
					if _, err := v.Put(context.Background(), tenant, vault.PutRequest{SizeBytes: size}, &genReader{rand.NewChaCha8([32]byte{1}), size}); err != nil {
						b.Fatal(err)
					}
				}))
				rss = max(rss, peakRSS())
				v.Close()
				b.StopTimer()
				os.RemoveAll(dir)
				b.StartTimer()
			}
			b.ReportMetric(float64(heap)/(1<<20), "peak-heap-MiB")
			b.ReportMetric(float64(rss)/(1<<20), "peak-RSS-MiB")
		})
	}
}

// countingMeta counts the metadata transactions the vault asks for (the store may fold
// several into one bbolt commit: its group commit).
type countingMeta struct {
	vault.Meta
	updates, views atomic.Int64
}

func (m *countingMeta) Update(ctx context.Context, tenant string, fn func(vault.MetaTx) error) error {
	m.updates.Add(1)
	return m.Meta.Update(ctx, tenant, fn)
}

func (m *countingMeta) View(ctx context.Context, tenant string, fn func(vault.MetaTx) error) error {
	m.views.Add(1)
	return m.Meta.View(ctx, tenant, fn)
}

// mailSized returns a message of about size bytes, as message4K does, with a List-Unsubscribe.
func mailSized(i, size int) []byte {
	return benchMail(i, size, fmt.Sprintf("List-Unsubscribe: <https://example.com/u/%d>\r\n", i))
}

// BenchmarkSmallObjectsStore is the vault's part of a clean-up (cmd/svc BenchmarkCleanup's
// "vault alone"): VAULT_BENCH_SMALL messages (default 10,000) of 1 to 12 KB, 32 Puts in
// flight, records on the server's bbolt store. Besides the rate it reports what each
// message costs the process (CPU time, allocations) and how the writes group: metadata
// transactions asked of the store and durable pack writes per 1,000 messages.
func BenchmarkSmallObjectsStore(b *testing.B) {
	n := 10_000
	if v, err := strconv.Atoi(os.Getenv("VAULT_BENCH_SMALL")); err == nil && v > 0 {
		n = v
	}
	msgs := make([][]byte, n)
	for i := range msgs {
		msgs[i] = mailSized(i, 1000+(i*7919)%11000)
	}
	const workers = 32
	var elapsed, cpu time.Duration
	var allocs, bytesAlloc uint64
	var updates, views int64
	var s vault.Stats
	for b.Loop() {
		dir := b.TempDir()
		db, err := bolt.Open(filepath.Join(dir, "svc.db"))
		if err != nil {
			b.Fatal(err)
		}
		meta := &countingMeta{Meta: db.VaultMeta()}
		v, err := vault.Open(filepath.Join(dir, "vault"), meta, db.VaultMeta(), vaulttest.KEK, nil)
		if err != nil {
			b.Fatal(err)
		}
		ctx := context.Background()
		var m0, m1 runtime.MemStats
		runtime.ReadMemStats(&m0)
		t0, c0 := time.Now(), cpuTime()
		var next atomic.Int64
		var wg sync.WaitGroup
		for range workers {
			wg.Go(func() {
				for {
					i := int(next.Add(1) - 1)
					if i >= len(msgs) {
						return
					}
					if _, err := v.Put(ctx, "test:bench", vault.PutRequest{MIMEType: "message/rfc822", SizeBytes: -1, SizeHint: int64(len(msgs[i]))}, bytes.NewReader(msgs[i])); err != nil {
						b.Error(err)
						return
					}
				}
			})
		}
		wg.Wait()
		elapsed += time.Since(t0)
		cpu += cpuTime() - c0
		runtime.ReadMemStats(&m1)
		allocs += m1.Mallocs - m0.Mallocs
		bytesAlloc += m1.TotalAlloc - m0.TotalAlloc
		updates += meta.updates.Load()
		views += meta.views.Load()
		s = v.Stats()
		v.Close()
		db.Close()
	}
	total := float64(n * b.N)
	b.ReportMetric(total/elapsed.Seconds(), "msgs/s")
	b.ReportMetric(float64(cpu.Microseconds())/total, "cpu-us/msg")
	b.ReportMetric(float64(allocs)/total, "allocs/msg")
	b.ReportMetric(float64(bytesAlloc)/total, "B/msg")
	b.ReportMetric(float64(updates)*1000/total, "meta-updates/1000")
	b.ReportMetric(float64(views)*1000/total, "meta-views/1000")
	b.ReportMetric(float64(s.DurableWrites)*1000/float64(n), "durable-writes/1000")
	b.Logf("%d messages, stats of the last run %+v", n, s)
}
