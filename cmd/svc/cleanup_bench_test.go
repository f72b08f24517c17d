package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"net"
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

	"svc.dev/svc/storage/bolt"
	"svc.dev/svc/vault"
	"svc.dev/svc/vault/vaulttest"
)

// BenchmarkCleanup measures a whole clean-up (preserve + trash) of a large Maildir through the
// real binary, side by side with what the same files cost elsewhere, in one run:
//
//   - restic: `restic backup` of the Maildir into a fresh local repository (content-addressed,
//     encrypted, durable), when a restic binary is on PATH or in GOBIN (scripts/bench-cleanup
//     installs it); skipped with a note otherwise;
//   - fsync copy: each message copied to its own file with its own fsync, one writer;
//   - vault: the vault alone storing every message (32 concurrent Puts, records on bbolt);
//   - svc: `svc serve --dev --dev-source vendor_d_local:DIR` (the Maildir provider as a plugin,
//     as the binary runs it), a plan of the whole mailbox (reported apart), authorized, then
//     executed until its receipt is issued: every message fetched, vaulted, verified and
//     trashed (the T flag), every step journaled.
//
// SVC_BENCH_MESSAGES sets the mailbox size (default 100,000). The figures are printed as a
// table and reported as metrics; peak RSS of the server and of its plugin processes too.
func BenchmarkCleanup(b *testing.B) {
	n := 100_000
	if v, err := strconv.Atoi(os.Getenv("SVC_BENCH_MESSAGES")); err == nil && v > 0 {
		n = v
	}
	bin := svcBinaryTB(b)
	for b.Loop() {
		work := b.TempDir()
		root := filepath.Join(work, "mail")
		t0 := time.Now()
		size := writeMaildir(b, filepath.Join(root, "INBOX"), n)
		b.Logf("wrote a Maildir of %d messages, %.1f MiB, in %v", n, float64(size)/(1<<20), time.Since(t0).Round(time.Millisecond))
		files := maildirFiles(b, filepath.Join(root, "INBOX"))
		readAll(b, files) // the page cache is warm for everyone

		res := map[string]float64{}
		// SVC_BENCH_ONLY=svc skips the three references, to iterate on svc alone (its ratio to
		// restic is then not printed).
		only := os.Getenv("SVC_BENCH_ONLY") == "svc"
		if !only {
			if restic := findRestic(); restic != "" {
				d := resticBackup(b, restic, root, filepath.Join(work, "restic"))
				res["restic"] = float64(n) / d.Seconds()
			} else {
				b.Log("restic not found (scripts/bench-cleanup installs it): its column is empty")
			}
			d := fsyncCopy(b, files, filepath.Join(work, "copy"))
			res["fsync"] = float64(n) / d.Seconds()
			d = vaultOnly(b, files, filepath.Join(work, "vault"))
			res["vault"] = float64(n) / d.Seconds()
		}

		run := runCleanup(b, bin, root, filepath.Join(work, "data"), filepath.Join(work, "home"), n)
		res["svc"] = float64(n) / run.execute.Seconds()

		b.Logf("%d messages, %.1f MiB (machine: %d CPUs, load %s)", n, float64(size)/(1<<20), numCPU(), loadAvg())
		b.Logf("%-34s %12s %10s", "", "messages/s", "MiB/s")
		row := func(name string, rate float64) {
			if rate > 0 {
				b.Logf("%-34s %12.0f %10.1f", name, rate, rate*float64(size)/float64(n)/(1<<20))
			} else {
				b.Logf("%-34s %12s %10s", name, "-", "-")
			}
		}
		row("restic backup", res["restic"])
		row("copy, one fsync per file", res["fsync"])
		row("vault alone (32 Puts in flight)", res["vault"])
		row("svc clean-up (execute to receipt)", res["svc"])
		b.Logf("svc plan of the mailbox: %v (%.0f messages/s); execution: %v; %d trashed, %d preserved only, %d failed",
			run.plan.Round(time.Millisecond), float64(n)/run.plan.Seconds(), run.execute.Round(time.Millisecond), run.trashed, run.kept, run.failed)
		b.Logf("anonymous RSS when the execution started: server %.1f MiB, plugins %.1f MiB; peak during the execution (sampled every 250 ms): server %.1f MiB, plugins %.1f MiB",
			float64(run.anonStartServer)/(1<<20), float64(run.anonStartPlugins)/(1<<20), float64(run.anonServer)/(1<<20), float64(run.anonPlugins)/(1<<20))
		b.ReportMetric(float64(run.anonServer)/(1<<20), "server-peak-anon-MiB")
		b.Logf("peak RSS (VmHWM, with the store's mapped file): server %.1f MiB, plugins %.1f MiB; CPU during the execution: server %v (%.0f us/message), plugins %v (%.0f us/message)",
			float64(run.rssServer)/(1<<20), float64(run.rssPlugins)/(1<<20), run.cpuServer.Round(time.Millisecond),
			float64(run.cpuServer.Microseconds())/float64(n), run.cpuPlugins.Round(time.Millisecond), float64(run.cpuPlugins.Microseconds())/float64(n))
		b.Logf("store file: %.1f MiB after the plan, %.1f MiB at the end", float64(run.dbPlan)/(1<<20), float64(run.dbEnd)/(1<<20))
		b.Logf("after the receipt the server worked %v more (the search index catching up): CPU %v (%.0f us/message), peak anonymous RSS %.1f MiB",
			run.after.Round(100*time.Millisecond), run.cpuAfter.Round(time.Millisecond), float64(run.cpuAfter.Microseconds())/float64(n), float64(run.anonAfter)/(1<<20))
		if res["restic"] > 0 {
			b.Logf("svc / restic = %.2f (target >= 0.5); svc = %.0f messages/s (target >= 2,000)", res["svc"]/res["restic"], res["svc"])
			b.ReportMetric(res["svc"]/res["restic"], "svc/restic")
			b.ReportMetric(res["restic"], "restic-msgs/s")
		}
		b.ReportMetric(res["svc"], "svc-msgs/s")
		b.ReportMetric(res["fsync"], "fsync-msgs/s")
		b.ReportMetric(res["vault"], "vault-msgs/s")
		b.ReportMetric(float64(n)/run.plan.Seconds(), "plan-msgs/s")
		b.ReportMetric(float64(run.rssServer)/(1<<20), "server-peak-RSS-MiB")
		b.ReportMetric(float64(run.rssPlugins)/(1<<20), "plugin-peak-RSS-MiB")
	}
}

func svcBinaryTB(tb testing.TB) string {
	tb.Helper()
	bin := filepath.Join(tb.TempDir(), "svc")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	if err != nil {
		tb.Fatalf("build: %v\n%s", err, out)
	}
	return bin
}

// writeMaildir writes n newsletter-like messages (1-12 KB, two years old, bulk mail with a
// one-click unsubscribe) into a Maildir, as a mail client leaves them in cur/.
func writeMaildir(tb testing.TB, dir string, n int) int64 {
	tb.Helper()
	for _, sub := range []string{"cur", "new", "tmp"} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o700); err != nil {
			tb.Fatal(err)
		}
	}
	old := time.Now().AddDate(-2, 0, 0)
	rng := rand.New(rand.NewPCG(1, 2))
	words := strings.Fields("the of and a to in is you that it he was for on are as with his they at be this have from or one had by word but not what all were we when your can said there use an each which she do how their if will up other about out many then them these so some her would make like him into time has look two more write go see number no way could people my than first water been call who oil its now find long down day did get come made may part")
	var total int64
	var buf bytes.Buffer
	for i := range n {
		buf.Reset()
		date := old.Add(-time.Duration(i) * time.Minute)
		sender := fmt.Sprintf("news%d", i%400)
		fmt.Fprintf(&buf, "Return-Path: <bounce-%d@mail.shop%d.example>\r\n", i, i%400)
		fmt.Fprintf(&buf, "From: Shop %d News <%s@shop%d.example>\r\n", i%400, sender, i%400)
		fmt.Fprintf(&buf, "To: reader@example.org\r\nSubject: Weekly deals %d: %s %s %s\r\n", i, words[i%len(words)], words[(i*7)%len(words)], words[(i*13)%len(words)])
		fmt.Fprintf(&buf, "Date: %s\r\nMessage-ID: <m%d.%d@shop%d.example>\r\n", date.Format(time.RFC1123Z), i, rng.Uint32(), i%400)
		fmt.Fprintf(&buf, "List-Unsubscribe: <https://shop%d.example/u/%d>, <mailto:unsub-%d@shop%d.example>\r\nList-Unsubscribe-Post: List-Unsubscribe=One-Click\r\n", i%400, i, i, i%400)
		fmt.Fprintf(&buf, "Precedence: bulk\r\nX-Mailer: BulkMailer 3.1\r\nMIME-Version: 1.0\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n")
		body := 1000 + rng.IntN(11_000)
		for buf.Len() < body {
			buf.WriteString(words[rng.IntN(len(words))])
			if rng.IntN(12) == 0 {
				buf.WriteString(".\r\n")
			} else {
				buf.WriteByte(' ')
			}
		}
		name := filepath.Join(dir, "cur", fmt.Sprintf("%d.M%dP%d.bench:2,S", date.Unix(), i, 4242))
		if err := os.WriteFile(name, buf.Bytes(), 0o600); err != nil {
			tb.Fatal(err)
		}
		os.Chtimes(name, date, date)
		total += int64(buf.Len())
	}
	return total
}

func maildirFiles(tb testing.TB, dir string) []string {
	tb.Helper()
	ents, err := os.ReadDir(filepath.Join(dir, "cur"))
	if err != nil {
		tb.Fatal(err)
	}
	out := make([]string, len(ents))
	for i, e := range ents {
		out[i] = filepath.Join(dir, "cur", e.Name())
	}
	return out
}

func readAll(tb testing.TB, files []string) {
	for _, f := range files {
		if _, err := os.ReadFile(f); err != nil {
			tb.Fatal(err)
		}
	}
}

func findRestic() string {
	if p, err := exec.LookPath("restic"); err == nil {
		return p
	}
	gobin, _ := exec.Command("go", "env", "GOBIN").Output()
	gopath, _ := exec.Command("go", "env", "GOPATH").Output()
	for _, d := range []string{strings.TrimSpace(string(gobin)), filepath.Join(strings.TrimSpace(string(gopath)), "bin")} {
		if d == "" {
			continue
		}
		if p := filepath.Join(d, "restic"); isExec(p) {
			return p
		}
	}
	return ""
}

func isExec(p string) bool { fi, err := os.Stat(p); return err == nil && fi.Mode()&0o111 != 0 }

// resticBackup times `restic backup` of dir into a fresh repository (its init is not timed).
func resticBackup(tb testing.TB, restic, dir, repo string) time.Duration {
	tb.Helper()
	env := append(os.Environ(), "RESTIC_REPOSITORY="+repo, "RESTIC_PASSWORD=bench", "RESTIC_CACHE_DIR="+repo+"-cache")
	cmd := exec.Command(restic, "init")
	cmd.Env = env
	if out, err := cmd.CombinedOutput(); err != nil {
		tb.Fatalf("restic init: %v\n%s", err, out)
	}
	t0 := time.Now()
	cmd = exec.Command(restic, "backup", "--quiet", dir)
	cmd.Env = env
	if out, err := cmd.CombinedOutput(); err != nil {
		tb.Fatalf("restic backup: %v\n%s", err, out)
	}
	return time.Since(t0)
}

// fsyncCopy copies every file to its own new file with its own fsync, one at a time.
func fsyncCopy(tb testing.TB, files []string, dir string) time.Duration {
	tb.Helper()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		tb.Fatal(err)
	}
	t0 := time.Now()
	for i, name := range files {
		data, err := os.ReadFile(name)
		if err != nil {
			tb.Fatal(err)
		}
		f, err := os.Create(filepath.Join(dir, strconv.Itoa(i)))
		if err != nil {
			tb.Fatal(err)
		}
		if _, err := f.Write(data); err != nil {
			tb.Fatal(err)
		}
		if err := f.Sync(); err != nil {
			tb.Fatal(err)
		}
		f.Close()
	}
	return time.Since(t0)
}

// vaultOnly stores every file in a fresh vault with its records on bbolt, 32 Puts in flight.
func vaultOnly(tb testing.TB, files []string, dir string) time.Duration {
	tb.Helper()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		tb.Fatal(err)
	}
	db, err := bolt.Open(filepath.Join(dir, "svc.db"))
	if err != nil {
		tb.Fatal(err)
	}
	defer db.Close()
	v, err := vault.Open(filepath.Join(dir, "vault"), db.VaultMeta(), db.VaultMeta(), vaulttest.KEK, nil)
	if err != nil {
		tb.Fatal(err)
	}
	defer v.Close()
	var next atomic.Int64
	var wg sync.WaitGroup
	t0 := time.Now()
	for range 32 {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= len(files) {
					return
				}
				f, err := os.Open(files[i])
				if err != nil {
					tb.Error(err)
					return
				}
				_, err = v.Put(context.Background(), "test:bench", vault.PutRequest{MIMEType: "message/rfc822", SizeBytes: -1}, f)
				f.Close()
				if err != nil {
					tb.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	return time.Since(t0)
}

type cleanupRun struct {
	plan, execute         time.Duration
	trashed, kept, failed int
	rssServer, rssPlugins int64
	cpuServer, cpuPlugins time.Duration // user + system time during the execution
	// after is how long the server kept working after the receipt (the search index catching
	// up), and cpuAfter its CPU time then.
	after, cpuAfter time.Duration
	anonAfter       int64 // the server's peak anonymous RSS then
	// searchCurrent is how long after the receipt a search first found the index current.
	searchCurrent time.Duration
	// anonServer and anonPlugins are the highest anonymous RSS (heap, stacks: not the store's
	// memory-mapped file) seen while the execution ran, sampled every 250 ms.
	anonServer, anonPlugins int64
	// anonStartServer and anonStartPlugins are the anonymous RSS when the execution started
	// (what planning left: the Go runtime returns freed memory to the system slowly).
	anonStartServer, anonStartPlugins int64
	// dbPlan and dbEnd are the size of the store's file when the plan was made and once the
	// server was done after the receipt.
	dbPlan, dbEnd int64
}

// runCleanup runs svc serve --dev on the Maildir, plans a clean-up of it, authorizes it and
// times its execution to the receipt. extra are more flags of svc serve (--database DSN).
func runCleanup(tb testing.TB, bin, root, data, home string, n int, extra ...string) cleanupRun {
	tb.Helper()
	args := append([]string{"serve", "--dev", "--dev-source", "vendor_d_local:" + root, "--addr", "127.0.0.1:0", "--data", data}, extra...)
	env := append(os.Environ(), "XDG_DATA_HOME="+home)
	profDir := os.Getenv("SVC_BENCH_PROFILE")
	var debugAddr string
	if profDir != "" {
		debugAddr = freeLoopbackAddr(tb)
		args = append(args, "--debug-addr", debugAddr)
		env = append(env, "SVC_PLUGIN_DEBUG_DIR="+profDir)
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	defer func() {
		cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			cmd.Process.Kill()
		}
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}()
	found := make(chan string, 1)
	var logMu sync.Mutex
	var logTail []string
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(nil, 1<<20)
		re := regexp.MustCompile(`base_url=(\S+)`)
		for sc.Scan() {
			logMu.Lock()
			logTail = append(logTail, sc.Text())
			if len(logTail) > 20 {
				logTail = logTail[1:]
			}
			logMu.Unlock()
			if m := re.FindStringSubmatch(sc.Text()); m != nil {
				found <- m[1]
			}
		}
	}()
	var base string
	select {
	case base = <-found:
	case <-time.After(60 * time.Second):
		tb.Fatal("svc serve did not start")
	}
	fail := func(format string, args ...any) {
		logMu.Lock()
		defer logMu.Unlock()
		tb.Fatalf(format+"\nserver log:\n%s", append(args, strings.Join(logTail, "\n"))...)
	}
	raw, err := os.ReadFile(filepath.Join(data, "dev-credentials.json"))
	if err != nil {
		tb.Fatal(err)
	}
	var creds map[string]string
	json.Unmarshal(raw, &creds)
	client := &http.Client{Timeout: 10 * time.Minute}
	// asUser sends the end user's session instead of the key: a plan that removes this much
	// needs the user's authorization.
	asUser := false
	call := func(method, path, body string, out any) int {
		sep := "?"
		if strings.Contains(path, "?") {
			sep = "&"
		}
		var rd io.Reader
		if body != "" {
			rd = strings.NewReader(body)
		}
		u := base + path + sep + "connection_id=" + creds["connection_id"]
		if asUser {
			u = base + path
		}
		req, _ := http.NewRequest(method, u, rd)
		if asUser {
			req.AddCookie(&http.Cookie{Name: "svc_session", Value: creds["session_cookie"]})
			req.Header.Set("Svc-Mode", "test")
		} else {
			req.Header.Set("Authorization", "Bearer "+creds["test_api_key"])
		}
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		res, err := client.Do(req)
		if err != nil {
			fail("%s %s: %v", method, path, err)
		}
		defer res.Body.Close()
		if out != nil {
			json.NewDecoder(res.Body).Decode(out)
		} else {
			io.Copy(io.Discard, res.Body)
		}
		return res.StatusCode
	}
	var srcs struct {
		Data []struct {
			ID      string `json:"id"`
			Account string `json:"external_account_id"`
		} `json:"data"`
	}
	call("GET", "/v1/sources?provider=vendor_d_local", "", &srcs)
	var src string
	for _, s := range srcs.Data {
		if s.Account == root {
			src = s.ID
		}
	}
	if src == "" {
		fail("no source for %s", root)
	}
	var run cleanupRun
	var p struct {
		PlanID  string `json:"planId"`
		Hash    string `json:"hash"`
		Objects []struct {
			Actions []string `json:"actions"`
		} `json:"objects"`
	}
	t0 := time.Now()
	if st := call("POST", "/v1/plans", `{"intent":"svc","source_ids":["`+src+`"],"policy":{"minAgeDays":30,"removePromotional":true}}`, &p); st != 201 || len(p.Objects) != n {
		fail("plan: %d, %d objects", st, len(p.Objects))
	}
	run.plan = time.Since(t0)
	run.dbPlan = fileSize(filepath.Join(data, "svc.db"))
	for _, o := range p.Objects {
		if strings.Contains(strings.Join(o.Actions, ","), "trash") {
			run.trashed++
		}
	}
	p.Objects = nil
	asUser = true
	if st := call("POST", "/v1/plans/"+p.PlanID+"/authorize", `{"plan_hash":"`+p.Hash+`"}`, nil); st != 200 {
		fail("authorize: %d", st)
	}
	asUser = false
	var x struct {
		ID        string  `json:"id"`
		ReceiptID *string `json:"receipt_id"`
		Completed int     `json:"completed"`
		Failed    int     `json:"failed"`
		Status    string  `json:"status"`
	}
	if profDir != "" {
		// What planning left in the server: its live heap (after a collection) and the runtime's
		// memory statistics, before the execution starts.
		planHeap(tb, profDir, debugAddr)
	}
	cpu0s, cpu0p := groupCPU(cmd.Process.Pid)
	run.anonStartServer, run.anonStartPlugins = groupRSS(cmd.Process.Pid, "RssAnon:")
	t0 = time.Now()
	if st := call("POST", "/v1/plans/"+p.PlanID+"/execute", "", &x); st != 202 {
		fail("execute: %d", st)
	}
	var peakServer, peakPlugins int64
	var profiling sync.WaitGroup
	// SVC_BENCH_PROFILE_AT=after profiles the server's work after the receipt instead.
	profileAfter := os.Getenv("SVC_BENCH_PROFILE_AT") == "after"
	if profDir != "" && !profileAfter {
		profiling.Go(func() { profile(tb, profDir, debugAddr) })
	}
	for x.ReceiptID == nil {
		time.Sleep(250 * time.Millisecond) // as often as svc apply polls by default
		s, o := groupRSS(cmd.Process.Pid, "RssAnon:")
		run.anonServer, run.anonPlugins = max(run.anonServer, s), max(run.anonPlugins, o)
		call("GET", "/v1/executions/"+x.ID, "", &x)
		if time.Since(t0) > time.Hour {
			fail("the execution did not finish in an hour: %+v", x)
		}
	}
	run.execute = time.Since(t0)
	profiling.Wait()
	if profDir != "" && profileAfter {
		profiling.Go(func() { profile(tb, profDir, debugAddr) })
	}
	cpu1s, cpu1p := groupCPU(cmd.Process.Pid)
	run.cpuServer, run.cpuPlugins = cpu1s-cpu0s, cpu1p-cpu0p
	// What the server still does once the receipt is out, mostly indexing the vaulted
	// messages for search (deferred while the execution ran): until it uses less than 5% of a
	// core over a second.
	t1, prev := time.Now(), cpu1s
	for time.Since(t1) < 10*time.Minute {
		for range 4 {
			time.Sleep(250 * time.Millisecond)
			s, _ := groupRSS(cmd.Process.Pid, "RssAnon:")
			run.anonAfter = max(run.anonAfter, s)
		}
		now, _ := groupCPU(cmd.Process.Pid)
		if now-prev < 50*time.Millisecond {
			run.after = time.Since(t1) - time.Second
			run.cpuAfter = now - cpu1s
			break
		}
		prev = now
	}
	profiling.Wait()
	// Until a search finds the index current: a search waits up to 5 s for the index to catch
	// up and answers at once when it is (with the index in PostgreSQL, the indexing works in
	// the database's processes, not in the server's, so the CPU above does not show it).
	for time.Since(t1) < 10*time.Minute {
		ts := time.Now()
		call("GET", "/v1/vault/search?q=deals&limit=1", "", nil)
		if time.Since(ts) < time.Second {
			run.searchCurrent = time.Since(t1)
			break
		}
	}
	run.dbEnd = fileSize(filepath.Join(data, "svc.db"))
	if keep := os.Getenv("SVC_BENCH_KEEP"); keep != "" { // the store file, to look into (bbolt stats)
		if b, err := os.ReadFile(filepath.Join(data, "svc.db")); err == nil {
			os.WriteFile(keep, b, 0o600)
		}
	}
	peakServer, peakPlugins = groupRSS(cmd.Process.Pid, "VmHWM:")
	run.rssServer, run.rssPlugins = peakServer, peakPlugins
	run.failed = x.Failed
	run.kept = x.Completed - run.trashed
	if x.Status != "completed" {
		fail("execution %s: %+v", x.Status, x)
	}
	trashedFiles, _ := filepath.Glob(filepath.Join(root, "INBOX", "cur", "*:2,*T*"))
	if len(trashedFiles) != run.trashed {
		fail("%d messages carry the T flag, the plan trashes %d", len(trashedFiles), run.trashed)
	}
	return run
}

// groupCPU returns the user + system time of the process pid and the sum of the other
// processes of its process group.
func groupCPU(pid int) (self, others time.Duration) {
	for _, p := range groupPIDs(pid) {
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p))
		if err != nil {
			continue
		}
		f := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
		if len(f) < 13 {
			continue
		}
		ut, _ := strconv.ParseInt(f[11], 10, 64)
		st, _ := strconv.ParseInt(f[12], 10, 64)
		d := time.Duration(ut+st) * time.Second / 100 // clock ticks (USER_HZ)
		if p == pid {
			self = d
		} else {
			others += d
		}
	}
	return self, others
}

// groupPIDs lists the processes of the process group pid.
func groupPIDs(pid int) []int {
	var out []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// Fields after the command name: state ppid pgrp ...
		f := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
		if len(f) >= 3 && f[2] == strconv.Itoa(pid) {
			out = append(out, p)
		}
	}
	return out
}

// groupRSS returns a memory figure of /proc/PID/status (VmHWM: the peak RSS; RssAnon: the
// anonymous RSS now) of the process pid and the sum of the other processes of its process
// group (its plugins).
func groupRSS(pid int, field string) (self, others int64) {
	for _, p := range groupPIDs(pid) {
		hwm := procStatus(p, field)
		if p == pid {
			self = hwm
		} else {
			others += hwm
		}
	}
	return self, others
}

func procStatus(pid int, field string) int64 {
	raw, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	for _, line := range strings.Split(string(raw), "\n") {
		if v, ok := strings.CutPrefix(line, field); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}

func numCPU() int {
	raw, _ := os.ReadFile("/proc/cpuinfo")
	return strings.Count(string(raw), "processor\t:")
}

func loadAvg() string {
	raw, _ := os.ReadFile("/proc/loadavg")
	f := strings.Fields(string(raw))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

func freeLoopbackAddr(tb testing.TB) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// planHeap saves the server's heap profile after a collection (server-plan.heap.pprof) and
// its runtime memory statistics (server-plan.heap.txt) into dir.
func planHeap(tb testing.TB, dir, server string) {
	for path, file := range map[string]string{"/debug/pprof/heap?gc=1": "server-plan.heap.pprof", "/debug/pprof/heap?debug=1": "server-plan.heap.txt"} {
		res, err := http.Get("http://" + server + path)
		if err != nil {
			tb.Logf("plan heap: %v", err)
			return
		}
		f, err := os.Create(filepath.Join(dir, file))
		if err == nil {
			_, err = io.Copy(f, res.Body)
			f.Close()
		}
		res.Body.Close()
		if err != nil {
			tb.Logf("plan heap: %v", err)
		}
	}
}

// profile takes CPU profiles of the server (its --debug-addr) and of every plugin process
// that wrote its debug address to dir (SVC_PLUGIN_DEBUG_DIR), for SVC_BENCH_PROFILE_SECONDS
// (default 10) starting one second into the execution, then heap profiles of each, into dir.
func profile(tb testing.TB, dir, server string) {
	secs := 10
	if v, err := strconv.Atoi(os.Getenv("SVC_BENCH_PROFILE_SECONDS")); err == nil && v > 0 {
		secs = v
	}
	time.Sleep(time.Second)
	targets := map[string]string{"server": server}
	addrs, _ := filepath.Glob(filepath.Join(dir, "plugin-*.addr"))
	for _, a := range addrs {
		raw, err := os.ReadFile(a)
		if err == nil {
			targets[strings.TrimSuffix(filepath.Base(a), ".addr")] = string(raw)
		}
	}
	get := func(name, addr, path, file string) {
		res, err := http.Get("http://" + addr + path)
		if err != nil {
			tb.Logf("profile %s: %v", name, err)
			return
		}
		defer res.Body.Close()
		f, err := os.Create(filepath.Join(dir, file))
		if err != nil {
			tb.Logf("profile %s: %v", name, err)
			return
		}
		defer f.Close()
		io.Copy(f, res.Body)
	}
	var wg sync.WaitGroup
	for name, addr := range targets {
		wg.Go(func() {
			get(name, addr, "/debug/pprof/profile?seconds="+strconv.Itoa(secs), name+".cpu.pprof")
			get(name, addr, "/debug/pprof/heap", name+".heap.pprof")
		})
	}
	wg.Wait()
	tb.Logf("profiles of %v written to %s", slices.Sorted(maps.Keys(targets)), dir)
}

// fileSize is the size of the file at path, 0 when it cannot be read.
func fileSize(path string) int64 {
	fi, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return fi.Size()
}
