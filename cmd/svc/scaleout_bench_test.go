package main

import (
	"bufio"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"svc.dev/svc"
	"svc.dev/svc/internal/pgtest"
	"svc.dev/svc/internal/versitygw"
)

// BenchmarkScaleOut measures the real binary on each store side by side, in one run, and
// prints the figures and their ratios to bbolt (issue 26, item 7; scripts/bench-scale):
//
//   - the API benchmark: GET /v1/plans?limit=50 (a page of 50 plans of 5 objects each) over
//     HTTP, from one client in a loop (latency percentiles, requests/s) and from 8 clients
//     at once (requests/s);
//   - a whole clean-up of SVC_BENCH_ASSETS messages (default 10,000) end to end: plan, then
//     execution to its receipt (every message fetched, vaulted, verified, trashed,
//     journaled), as BenchmarkCleanup runs it.
//
// Stores: bbolt (the default, in the data directory) and PostgreSQL with each replica count
// of SVC_BENCH_REPLICAS (comma separated, default "1"), one database per configuration on the
// throwaway cluster of internal/pgtest (scripts/bench-scale starts it with fsync on, as bbolt
// syncs) or the server SVC_TEST_POSTGRES names. With more than one replica every replica has
// its own data directory, the same master key (SVC_MASTER_KEY) and one vault on an
// S3-compatible server (versitygw, as replicas need); the page requests go round the replicas,
// and the clean-up runs on one replica (an execution is one lease's work) while the others
// serve and look for work to adopt. SVC_BENCH_PAGE_REQUESTS sets the loop's requests
// (default 300).
func BenchmarkScaleOut(b *testing.B) {
	assets := envInt("SVC_BENCH_ASSETS", 10_000)
	requests := envInt("SVC_BENCH_PAGE_REQUESTS", 300)
	counts := []int{1}
	if v := os.Getenv("SVC_BENCH_REPLICAS"); v != "" {
		counts = counts[:0]
		for _, f := range strings.Split(v, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || n < 1 {
				b.Fatalf("SVC_BENCH_REPLICAS=%q: want counts such as 1,3", v)
			}
			counts = append(counts, n)
		}
	}
	bin := svcBinaryTB(b)
	for b.Loop() {
		configs := []scaleConfig{{name: "bbolt", replicas: 1}}
		for _, n := range counts {
			configs = append(configs, scaleConfig{name: fmt.Sprintf("postgres, %d replica(s)", n), replicas: n, postgres: true})
		}
		var results []scaleResult
		for _, c := range configs {
			results = append(results, runScaleConfig(b, bin, c, assets, requests))
		}
		printScale(b, results, assets, requests)
	}
}

type scaleConfig struct {
	name     string
	replicas int
	postgres bool
}

type scaleResult struct {
	cfg                scaleConfig
	p50, p95, p99      time.Duration // one client's page latency
	rate1, rate8       float64       // pages/s: one client, eight clients
	plan, execute      time.Duration // the clean-up's plan and execution to its receipt
	after              time.Duration // the server's own work after the receipt
	searchCurrent      time.Duration // from the receipt until a search found the index current
	cpuServer, cpuPlug time.Duration // CPU of the server and its plugins during the execution
}

func runScaleConfig(b *testing.B, bin string, c scaleConfig, assets, requests int) scaleResult {
	b.Helper()
	var extra []string
	if c.postgres {
		extra = append(extra, "--database", pgtest.Database(b))
	}
	res := scaleResult{cfg: c}
	work := b.TempDir()
	if c.replicas > 1 {
		extra = append(extra, replicaFlags(b)...)
	}

	// The API benchmark, on a server of its own.
	small := filepath.Join(work, "small")
	os.MkdirAll(small, 0o700)
	old := time.Now().AddDate(-2, 0, 0)
	for i := range 5 {
		p := filepath.Join(small, fmt.Sprintf("old-%d.txt", i))
		os.WriteFile(p, []byte(strings.Repeat("x", 1000*(i+1))), 0o600)
		os.Chtimes(p, old, old)
	}
	// The limit per principal would answer 429 long before the loop ends: it is raised out of
	// the way (the rate limiter's own cost stays in the figures).
	srv := startScaleServer(b, bin, filepath.Join(work, "data-page"),
		append([]string{"--dev-source", "vendor_d_local:" + small, "--rate-limit", "1000000"}, extra...))
	src := srv.sourceFor(b, small)
	servers := []*scaleServer{srv}
	for i := 1; i < c.replicas; i++ {
		data := filepath.Join(work, fmt.Sprintf("data-page-%d", i))
		os.MkdirAll(data, 0o700)
		// The first replica's credentials make the dev seed find its tenant, not make another.
		raw, _ := os.ReadFile(filepath.Join(work, "data-page", "dev-credentials.json"))
		os.WriteFile(filepath.Join(data, "dev-credentials.json"), raw, 0o600)
		servers = append(servers, startScaleServer(b, bin, data, append([]string{"--rate-limit", "1000000"}, extra...)))
	}
	for range 60 { // more plans than a page
		if st := srv.call(b, "POST", "/v1/plans", `{"intent":"svc","source_ids":["`+src+`"],"policy":{"minAgeDays":30}}`, nil); st != 201 {
			b.Fatalf("%s: create a plan: %d", c.name, st)
		}
	}
	var turn atomic.Int64
	page := func() error { // on each replica in turn
		var out struct {
			Data []json.RawMessage `json:"data"`
		}
		srv := servers[int(turn.Add(1))%len(servers)]
		if st := srv.call(b, "GET", "/v1/plans?limit=50", "", &out); st != 200 || len(out.Data) != 50 {
			return fmt.Errorf("%s: GET /v1/plans?limit=50: %d, %d plans", c.name, st, len(out.Data))
		}
		return nil
	}
	for range 20 {
		if err := page(); err != nil { // warm up
			b.Fatal(err)
		}
	}
	lat := make([]time.Duration, requests)
	t0 := time.Now()
	for i := range lat {
		t := time.Now()
		if err := page(); err != nil {
			b.Fatal(err)
		}
		lat[i] = time.Since(t)
	}
	res.rate1 = float64(requests) / time.Since(t0).Seconds()
	slices.Sort(lat)
	res.p50, res.p95, res.p99 = lat[len(lat)/2], lat[len(lat)*95/100], lat[len(lat)*99/100]
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	t0 = time.Now()
	for w := range 8 {
		wg.Go(func() {
			for i := w; i < requests; i += 8 {
				if err := page(); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		b.Fatal(err)
	}
	res.rate8 = float64(requests) / time.Since(t0).Seconds()
	for _, s := range servers {
		s.stop()
	}

	// The clean-up, on a fresh database: one server per run, as BenchmarkCleanup runs it, and
	// the other replicas beside it.
	if c.postgres {
		extra = []string{"--database", pgtest.Database(b)}
	}
	if c.replicas > 1 {
		extra = append(extra, replicaFlags(b)...)
		for i := 1; i < c.replicas; i++ {
			data := filepath.Join(work, fmt.Sprintf("data-cleanup-%d", i))
			os.MkdirAll(data, 0o700)
			cmd := exec.Command(bin, append([]string{"serve", "--addr", "127.0.0.1:0", "--data", data}, extra...)...)
			cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
			if err := cmd.Start(); err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() {
				cmd.Process.Signal(syscall.SIGTERM)
				cmd.Wait()
				syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			})
		}
	}
	root := filepath.Join(work, "mail")
	writeMaildir(b, filepath.Join(root, "INBOX"), assets)
	readAll(b, maildirFiles(b, filepath.Join(root, "INBOX")))
	run := runCleanup(b, bin, root, filepath.Join(work, "data-cleanup"), filepath.Join(work, "home"), assets, extra...)
	res.plan, res.execute, res.after, res.searchCurrent = run.plan, run.execute, run.after, run.searchCurrent
	res.cpuServer, res.cpuPlug = run.cpuServer, run.cpuPlugins
	return res
}

func printScale(b *testing.B, rs []scaleResult, assets, requests int) {
	if len(rs) == 0 {
		return
	}
	durable := "PostgreSQL fsync off (a test cluster)"
	if os.Getenv("SVC_PG_DURABLE") == "1" {
		durable = "PostgreSQL fsync on"
	}
	if os.Getenv(pgtest.EnvDSN) != "" {
		durable = "PostgreSQL at " + pgtest.EnvDSN
	}
	b.Logf("scale-out benchmark, %s: %d CPUs, load %s; %s; %d page requests; %d-message clean-up",
		time.Now().UTC().Format("2006-01-02 15:04 MST"), numCPU(), loadAvg(), durable, requests, assets)
	head := fmt.Sprintf("%-44s", "")
	for _, r := range rs {
		head += fmt.Sprintf(" %22s", r.cfg.name)
	}
	for range rs[1:] {
		head += fmt.Sprintf(" %12s", "ratio")
	}
	b.Log(head)
	row := func(name, unit string, v func(scaleResult) float64) {
		line := fmt.Sprintf("%-44s", name+" ("+unit+")")
		for _, r := range rs {
			line += fmt.Sprintf(" %22.2f", v(r))
		}
		for _, r := range rs[1:] {
			line += fmt.Sprintf(" %12.2f", v(r)/v(rs[0]))
		}
		b.Log(line)
	}
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	row("page of 50 plans, 1 client, p50", "ms", func(r scaleResult) float64 { return ms(r.p50) })
	row("page of 50 plans, 1 client, p95", "ms", func(r scaleResult) float64 { return ms(r.p95) })
	row("page of 50 plans, 1 client, p99", "ms", func(r scaleResult) float64 { return ms(r.p99) })
	row("page of 50 plans, 1 client", "pages/s", func(r scaleResult) float64 { return r.rate1 })
	row("page of 50 plans, 8 clients", "pages/s", func(r scaleResult) float64 { return r.rate8 })
	row(fmt.Sprintf("plan of %d messages", assets), "s", func(r scaleResult) float64 { return r.plan.Seconds() })
	row(fmt.Sprintf("execution of %d messages to the receipt", assets), "s", func(r scaleResult) float64 { return r.execute.Seconds() })
	row("execution", "messages/s", func(r scaleResult) float64 { return float64(assets) / r.execute.Seconds() })
	row("server CPU during the execution", "us/message", func(r scaleResult) float64 { return float64(r.cpuServer.Microseconds()) / float64(assets) })
	row("plugin CPU during the execution", "us/message", func(r scaleResult) float64 { return float64(r.cpuPlug.Microseconds()) / float64(assets) })
	row("server busy after the receipt", "s", func(r scaleResult) float64 { return r.after.Seconds() })
	row("search index current after the receipt", "s", func(r scaleResult) float64 { return r.searchCurrent.Seconds() })
	b.Log("ratio: the configuration's figure over bbolt's (for times, above 1 is slower; for rates, above 1 is faster)")
}

// scaleServer is one svc serve --dev process of the benchmark.
type scaleServer struct {
	cmd   *exec.Cmd
	base  string
	creds map[string]string
	http  *http.Client
}

func startScaleServer(tb testing.TB, bin, data string, extra []string) *scaleServer {
	tb.Helper()
	cmd := exec.Command(bin, append([]string{"serve", "--dev", "--addr", "127.0.0.1:0", "--data", data}, extra...)...)
	cmd.Env = append(os.Environ(), "XDG_DATA_HOME="+filepath.Join(data, "..", "home"))
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	// Enough idle connections for the eight clients: each keeps its own.
	s := &scaleServer{cmd: cmd, http: &http.Client{Timeout: time.Minute, Transport: &http.Transport{MaxIdleConnsPerHost: 16}}}
	tb.Cleanup(s.stop)
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(nil, 1<<20)
		re := regexp.MustCompile(`base_url=(\S+)`)
		for sc.Scan() {
			if m := re.FindStringSubmatch(sc.Text()); m != nil {
				found <- m[1]
			}
		}
	}()
	select {
	case s.base = <-found:
	case <-time.After(2 * time.Minute):
		tb.Fatal("svc serve did not start")
	}
	raw, err := os.ReadFile(filepath.Join(data, "dev-credentials.json"))
	if err != nil {
		tb.Fatal(err)
	}
	if err := json.Unmarshal(raw, &s.creds); err != nil {
		tb.Fatal(err)
	}
	return s
}

// stop ends the server and its plugins.
func (s *scaleServer) stop() {
	if s.cmd.ProcessState != nil {
		return
	}
	s.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { s.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		s.cmd.Process.Kill()
		<-done
	}
	syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
}

// call sends a request with the dev tenant's test key through its connection.
func (s *scaleServer) call(tb testing.TB, method, path, body string, out any) int {
	sep := "?"
	if strings.Contains(path, "?") {
		sep = "&"
	}
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, _ := http.NewRequest(method, s.base+path+sep+"connection_id="+s.creds["connection_id"], rd)
	req.Header.Set("Authorization", "Bearer "+s.creds["test_api_key"])
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := s.http.Do(req)
	if err != nil {
		tb.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	if out != nil {
		json.NewDecoder(res.Body).Decode(out)
	} else {
		io.Copy(io.Discard, res.Body)
	}
	return res.StatusCode
}

// sourceFor returns the id of the vendor_d_local source of folder dir.
func (s *scaleServer) sourceFor(tb testing.TB, dir string) string {
	var srcs struct {
		Data []struct {
			ID      string `json:"id"`
			Account string `json:"external_account_id"`
		} `json:"data"`
	}
	s.call(tb, "GET", "/v1/sources?provider=vendor_d_local", "", &srcs)
	for _, src := range srcs.Data {
		if src.Account == dir {
			return src.ID
		}
	}
	tb.Fatalf("no source for %s", dir)
	return ""
}

// replicaFlags gives the benchmark's replicas what they share besides the database: the
// master key (in this process's environment, which every server inherits) and a vault on a
// fresh bucket of an S3-compatible server.
func replicaFlags(b *testing.B) []string {
	b.Helper()
	if os.Getenv(svc.MasterKeyEnv) == "" {
		key := make([]byte, 32)
		rand.Read(key)
		b.Setenv(svc.MasterKeyEnv, base64.StdEncoding.EncodeToString(key))
	}
	gw := versitygw.Start(b)
	bucket := gw.Bucket(b, nil)
	b.Setenv("AWS_ACCESS_KEY_ID", gw.AccessKey)
	b.Setenv("AWS_SECRET_ACCESS_KEY", gw.SecretKey)
	return []string{"--vault-hot", "s3://" + gw.Endpoint + "/" + bucket + "/hot?insecure=true",
		"--vault-cold", "s3://" + gw.Endpoint + "/" + bucket + "/cold?insecure=true"}
}
