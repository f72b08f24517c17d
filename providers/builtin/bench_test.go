package builtin_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"svc.dev/svc/providers"
	"svc.dev/svc/providers/builtin"
	"svc.dev/svc/providers/internal/fixtures"
)

// The provider benchmarks compare in-process providers with the same
// providers through the plugin boundary (this test binary re-executed as
// "plugin serve NAME"), side by side in one run:
//
//	go test -run '^$' -bench Boundary -benchtime 10x ./providers/builtin/
//	go test -run '^$' -bench List1M -benchtime 1x ./providers/builtin/
//
// BenchmarkBoundary reports objects/s and MB/s both ways and their ratios
// (streaming into io.Discard, and into SHA-256 as preserving does);
// BenchmarkList1M lists a million simulated objects and reports peak RSS.
// The two processes share the machine's cores with whatever else runs, so
// run them several times and compare medians (docs/benchmarks.md).

type workload struct {
	name     providers.Name
	cfg      providers.Config
	src      string
	bigID    string // the object streamed
	objects  int    // objects a full listing returns
	pageSize int
}

func simulatedWorkload(b *testing.B) workload {
	w := workload{name: providers.Simulated, cfg: providers.Config{"seed": "5", "objects": "20000"}, src: "files", objects: 20000, pageSize: providers.MaxPageSize}
	// Stream the largest object of the first page (a 199.5 MB video).
	p, _ := builtinRegistry(b, "").Open(context.Background(), w.name, w.cfg)
	page, err := p.List(context.Background(), providers.ListRequest{SourceRef: w.src, PageSize: providers.MaxPageSize})
	if err != nil {
		b.Fatal(err)
	}
	var best providers.Object
	for _, o := range page.Objects {
		if o.SizeBytes > best.SizeBytes {
			best = o
		}
	}
	w.bigID = best.ID
	return w
}

func localWorkload(b *testing.B) workload {
	root := b.TempDir()
	if err := fixtures.ManyFiles(filepath.Join(root, "many"), 10000, 512); err != nil {
		b.Fatal(err)
	}
	big := bytes.Repeat([]byte("0123456789abcdef"), 4<<20) // 64 MiB
	if err := os.WriteFile(filepath.Join(root, "many", "big.bin"), big, 0o644); err != nil {
		b.Fatal(err)
	}
	return workload{name: providers.VendorDLocal, cfg: providers.Config{"root": root}, src: "many", bigID: "big.bin", objects: 10001, pageSize: providers.MaxPageSize}
}

func builtinRegistry(b *testing.B, exe string) *providers.Registry {
	reg, err := builtin.Registry(builtin.Options{Executable: exe})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { reg.Close() })
	return reg
}

func listAll(b *testing.B, p providers.Provider, w workload) int {
	n, token := 0, ""
	for {
		page, err := p.List(context.Background(), providers.ListRequest{SourceRef: w.src, PageToken: token, PageSize: w.pageSize})
		if err != nil {
			b.Fatal(err)
		}
		n += len(page.Objects)
		if page.NextPageToken == "" {
			return n
		}
		token = page.NextPageToken
	}
}

// stream fetches the big object into dst: io.Discard for raw streaming, a
// SHA-256 hasher for what preserving into the vault does with the bytes.
func stream(b *testing.B, p providers.Provider, w workload, dst io.Writer) int64 {
	c, err := p.Fetch(context.Background(), providers.FetchRequest{SourceRef: w.src, ObjectID: w.bigID})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Body.Close()
	n, err := io.Copy(dst, c.Body)
	if err != nil {
		b.Fatal(err)
	}
	return n
}

// BenchmarkBoundary measures listing and streaming for simulated and
// vendor_d_local in process and through the plugin boundary, interleaved in
// every iteration, and reports the plugin/in-process ratios.
func BenchmarkBoundary(b *testing.B) {
	for _, mk := range []func(*testing.B) workload{simulatedWorkload, localWorkload} {
		w := mk(b)
		b.Run(string(w.name), func(b *testing.B) {
			ctx := context.Background()
			in, err := builtinRegistry(b, "").Open(ctx, w.name, w.cfg)
			if err != nil {
				b.Fatal(err)
			}
			out, err := builtinRegistry(b, os.Args[0]).Open(ctx, w.name, w.cfg)
			if err != nil {
				b.Fatal(err)
			}
			// Warm both (page cache, plugin start, first-call setup).
			listAll(b, in, w)
			listAll(b, out, w)
			stream(b, in, w, io.Discard)
			stream(b, out, w, io.Discard)
			var listIn, listOut, streamIn, streamOut, hashIn, hashOut time.Duration
			var objs, bytes int64
			b.ResetTimer()
			for range b.N {
				t := time.Now()
				n := listAll(b, in, w)
				listIn += time.Since(t)
				t = time.Now()
				if m := listAll(b, out, w); m != n {
					b.Fatalf("listed %d objects in process, %d through the plugin", n, m)
				}
				listOut += time.Since(t)
				objs += int64(n)
				t = time.Now()
				s := stream(b, in, w, io.Discard)
				streamIn += time.Since(t)
				t = time.Now()
				stream(b, out, w, io.Discard)
				streamOut += time.Since(t)
				t = time.Now()
				stream(b, in, w, sha256.New())
				hashIn += time.Since(t)
				t = time.Now()
				stream(b, out, w, sha256.New())
				hashOut += time.Since(t)
				bytes += s
			}
			b.StopTimer()
			rate := func(n int64, d time.Duration) float64 { return float64(n) / d.Seconds() }
			b.ReportMetric(rate(objs, listIn), "list-in-obj/s")
			b.ReportMetric(rate(objs, listOut), "list-plugin-obj/s")
			b.ReportMetric(listIn.Seconds()/listOut.Seconds(), "list-ratio")
			b.ReportMetric(rate(bytes, streamIn)/1e6, "stream-in-MB/s")
			b.ReportMetric(rate(bytes, streamOut)/1e6, "stream-plugin-MB/s")
			b.ReportMetric(streamIn.Seconds()/streamOut.Seconds(), "stream-ratio")
			b.ReportMetric(rate(bytes, hashIn)/1e6, "sha256-in-MB/s")
			b.ReportMetric(rate(bytes, hashOut)/1e6, "sha256-plugin-MB/s")
			b.ReportMetric(hashIn.Seconds()/hashOut.Seconds(), "sha256-ratio")
		})
	}
}

// BenchmarkList1M lists a 1,000,000-object simulated source and reports the
// peak RSS of this process (reset before the listing) and, through the
// plugin, of the plugin process.
func BenchmarkList1M(b *testing.B) {
	w := workload{name: providers.Simulated, cfg: providers.Config{"objects": "1000000"}, src: "mail", pageSize: providers.MaxPageSize}
	for _, mode := range []string{"in-process", "plugin"} {
		b.Run(mode, func(b *testing.B) {
			exe := ""
			if mode == "plugin" {
				exe = os.Args[0]
			}
			reg := builtinRegistry(b, exe)
			p, err := reg.Open(context.Background(), w.name, w.cfg)
			if err != nil {
				b.Fatal(err)
			}
			resetPeakRSS()
			start := time.Now()
			var n int
			for range b.N {
				n = listAll(b, p, w)
			}
			d := time.Since(start)
			if n != 1_000_000 {
				b.Fatalf("listed %d objects", n)
			}
			b.ReportMetric(float64(n*b.N)/d.Seconds(), "obj/s")
			b.ReportMetric(float64(peakRSS("self"))/(1<<20), "host-peak-RSS-MiB")
			if mode == "plugin" {
				b.ReportMetric(float64(peakRSS(strconv.Itoa(pluginPid(b, reg))))/(1<<20), "plugin-peak-RSS-MiB")
			}
		})
	}
}

func pluginPid(b *testing.B, reg *providers.Registry) int {
	r, _ := reg.Lookup(providers.Simulated)
	type pider interface{ Pid() int }
	if p, ok := r.Closer.(pider); ok {
		return p.Pid()
	}
	b.Fatal("no plugin pid")
	return 0
}

// resetPeakRSS resets this process's VmHWM (Linux clear_refs 5).
func resetPeakRSS() { _ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) }

// peakRSS returns a process's VmHWM in bytes.
func peakRSS(pid string) int64 {
	raw, err := os.ReadFile("/proc/" + pid + "/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10
		}
	}
	return 0
}
