package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"svc.dev/svc/server/devseed"
	"syscall"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// svcBinary builds the real binary once per test run.
func svcBinary(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "svc")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	if err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	return bin
}

// start runs `svc serve --dev` on a free loopback port and returns its base URL.
func start(t *testing.T, bin, data string) (*exec.Cmd, string, *logTail) {
	t.Helper()
	return startWith(t, bin, data, nil)
}

// startWith is start with more environment variables and flags.
func startWith(t *testing.T, bin, data string, env []string, args ...string) (*exec.Cmd, string, *logTail) {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"serve", "--dev", "--addr", "127.0.0.1:0", "--data", data}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	log := &logTail{done: make(chan struct{})}
	found := make(chan string, 1)
	go func() {
		defer close(log.done)
		sc := bufio.NewScanner(stderr)
		re := regexp.MustCompile(`base_url=(\S+)`)
		for sc.Scan() {
			log.WriteString(sc.Text() + "\n")
			if m := re.FindStringSubmatch(sc.Text()); m != nil {
				found <- m[1]
			}
		}
	}()
	select {
	case url := <-found:
		return cmd, url, log
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		t.Fatalf("svc serve did not start:\n%s", log)
	}
	return nil, "", nil
}

func TestServeDevAndGracefulShutdown(t *testing.T) {
	bin := svcBinary(t)
	data := t.TempDir()
	cmd, base, log := start(t, bin, data)

	raw, err := os.ReadFile(filepath.Join(data, devseed.CredentialsFile))
	if err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(filepath.Join(data, devseed.CredentialsFile)); fi.Mode().Perm() != 0o600 {
		t.Errorf("dev-credentials.json mode %v, want 0600", fi.Mode().Perm())
	}
	var creds map[string]string
	if err := json.Unmarshal(raw, &creds); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"base_url", "test_api_key", "live_api_key", "connection_id", "session_cookie", "user_id", "org_id", "application_id"} {
		if creds[k] == "" {
			t.Errorf("dev-credentials.json lacks %s", k)
		}
	}
	if creds["base_url"] != base {
		t.Errorf("base_url %q, want %q", creds["base_url"], base)
	}
	get := func(path, hk, hv string) int {
		req, _ := http.NewRequest("GET", base+path, nil)
		req.Header.Set(hk, hv)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, res.Body)
		res.Body.Close()
		return res.StatusCode
	}
	if s := get("/v1/plans?connection_id="+creds["connection_id"], "Authorization", "Bearer "+creds["test_api_key"]); s != 200 {
		t.Fatalf("test key + connection: %d", s)
	}
	if s := get("/v1/account", "Cookie", "svc_session="+creds["session_cookie"]); s != 200 {
		t.Fatalf("session cookie: %d", s)
	}
	// Without --base-url, signed links name the listen address whatever Host a request says
	// (issue 21): the seeded export's download URL, read with a forged Host.
	req, _ := http.NewRequest("GET", base+"/v1/jobs?kind=export", nil)
	req.Host = "evil.example"
	req.Header.Set("Cookie", "svc_session="+creds["session_cookie"])
	req.Header.Set("Svc-Mode", "test")
	if res, err := http.DefaultClient.Do(req); err != nil {
		t.Fatal(err)
	} else {
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != 200 || !strings.Contains(string(body), `"url":"`+base+"/v1/exports/") || strings.Contains(string(body), "evil.example") {
			t.Fatalf("export links without --base-url: %d %s", res.StatusCode, body)
		}
	}

	// The plan client: create a plan over the seeded simulated sources, then authorize it as
	// the end user (the plan needs the user's approval: it removes more than an application
	// may alone).
	credsFile := filepath.Join(data, devseed.CredentialsFile)
	out, err := exec.Command(bin, "plan", "create", "--credentials", credsFile, "--intent", "svc",
		"--policy", `{"minAgeDays":30,"removePromotional":true}`).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "What would happen") || !strings.Contains(string(out), "Decision: ") {
		t.Fatalf("svc plan create: %v\n%s", err, out)
	}
	// Sources and destinations, for the ids plans take.
	lo, err := exec.Command(bin, "sources", "list", "--credentials", credsFile).CombinedOutput()
	drive := regexp.MustCompile(`(src_\S+)\s+simulated\s+files\s+connected\s+Simulated drive`).FindStringSubmatch(string(lo))
	if err != nil || drive == nil {
		t.Fatalf("svc sources list: %v\n%s", err, lo)
	}
	lo, err = exec.Command(bin, "destinations", "create", "--credentials", credsFile, "--source", drive[1], "--label", "Drive copy",
		"--path-template", "copies/{name}").CombinedOutput()
	if err != nil || !strings.Contains(string(lo), "copies/{name}") {
		t.Fatalf("svc destinations create: %v\n%s", err, lo)
	}
	lo, err = exec.Command(bin, "destinations", "list", "--credentials", credsFile).CombinedOutput()
	if err != nil || !strings.Contains(string(lo), "Local export folder") || !strings.Contains(string(lo), "Drive copy") {
		t.Fatalf("svc destinations list: %v\n%s", err, lo)
	}
	m := regexp.MustCompile(`svc plan authorize (pln_\S+) --hash ([0-9a-f]{64})`).FindStringSubmatch(string(out))
	if m == nil {
		t.Fatalf("no authorize hint in:\n%s", out)
	}
	out, err = exec.Command(bin, "plan", "authorize", m[1], "--hash", m[2], "--server", base, "--session", creds["session_cookie"], "--test-mode").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "state    authorized") {
		t.Fatalf("svc plan authorize: %v\n%s", err, out)
	}
	out, err = exec.Command(bin, "plan", "authorize", m[1], "--hash", m[2], "--credentials", credsFile).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "invalid_state") {
		t.Fatalf("authorizing twice must fail with invalid_state: %v\n%s", err, out)
	}

	// SIGTERM drains and exits cleanly, releasing the bbolt file.
	cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() {
		<-log.done // read stderr to the end before Wait closes it
		done <- cmd.Wait()
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("exit after SIGTERM: %v\n%s", err, log)
		}
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		t.Fatal("svc did not stop on SIGTERM")
	}
	if !strings.Contains(log.String(), "msg=stopped") {
		t.Errorf("no clean stop in the log:\n%s", log)
	}
	db, err := bolt.Open(filepath.Join(data, "svc.db"), 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		t.Fatalf("store still locked after shutdown: %v", err)
	}
	db.Close()

	// A restart keeps the same working credentials (the seed job does not run twice).
	cmd2, base2, _ := start(t, bin, data)
	defer func() { cmd2.Process.Signal(syscall.SIGINT); cmd2.Wait() }()
	raw2, _ := os.ReadFile(filepath.Join(data, devseed.CredentialsFile))
	var creds2 map[string]string
	json.Unmarshal(raw2, &creds2)
	if creds2["test_api_key"] != creds["test_api_key"] || creds2["user_id"] != creds["user_id"] || creds2["base_url"] != base2 {
		t.Fatalf("restart changed credentials: %v -> %v", creds, creds2)
	}
	if s := get2(t, base2+"/v1/account", creds2["session_cookie"]); s != 200 {
		t.Fatalf("after restart: %d", s)
	}
	// The vendor connectors' sources at the local fakes: one each, pointed at the fakes this
	// start began (a plan over one lists it), never connected twice.
	lo, err = exec.Command(bin, "sources", "list", "--credentials", credsFile).CombinedOutput()
	if err != nil {
		t.Fatalf("svc sources list: %v\n%s", err, lo)
	}
	for _, label := range []string{"Vendor A mailbox", "Vendor A drive", "Vendor A shared drive", "Vendor B mailbox", "Vendor B drive", "Vendor C files"} {
		if n := strings.Count(string(lo), label+" (local fake)"); n != 1 {
			t.Errorf("%s: %d sources after a restart, want 1:\n%s", label, n, lo)
		}
	}
	// The second vendor_a_files source is the Drive fake's shared drive: a plan over it lists
	// the shared drive's files.
	shared := regexp.MustCompile(`(src_\S+)\s+vendor_a_files\s.*Vendor A shared drive \(local fake\)`).FindStringSubmatch(string(lo))
	if shared == nil {
		t.Fatalf("no vendor_a_files shared-drive source:\n%s", lo)
	}
	out, err = exec.Command(bin, "plan", "create", "--credentials", credsFile, "--intent", "svc", "--source", shared[1]).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "Decision: ") {
		t.Fatalf("a plan over the shared drive of the vendor_a_files fake: %v\n%s", err, out)
	}
	dropbox := regexp.MustCompile(`(src_\S+)\s+vendor_c_files`).FindStringSubmatch(string(lo))
	if dropbox == nil {
		t.Fatalf("no vendor_c_files source:\n%s", lo)
	}
	out, err = exec.Command(bin, "plan", "create", "--credentials", credsFile, "--intent", "svc", "--source", dropbox[1]).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "Decision: ") {
		t.Fatalf("a plan over the vendor_c_files fake after a restart: %v\n%s", err, out)
	}
}

// logTail collects a process's stderr; done closes at EOF.
type logTail struct {
	strings.Builder
	done chan struct{}
}

func get2(t *testing.T, url, session string) int {
	req, _ := http.NewRequestWithContext(context.Background(), "GET", url, nil)
	req.Header.Set("Cookie", "svc_session="+session)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	return res.StatusCode
}

// API operations are metered exactly once across a crash: the binary is killed right after
// answering live calls (inside the quarter second before their counts reach the store), and
// the restarted server counts every one of them, once.
func TestLiveCallsMeteredAcrossACrash(t *testing.T) {
	bin := svcBinary(t)
	data := t.TempDir()
	cmd, base, log := start(t, bin, data)
	raw, _ := os.ReadFile(filepath.Join(data, devseed.CredentialsFile))
	var creds map[string]string
	json.Unmarshal(raw, &creds)
	call := func(path string) []byte {
		req, _ := http.NewRequest("GET", base+path, nil)
		req.Header.Set("Authorization", "Bearer "+creds["live_api_key"])
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return b
	}
	apiOps := func() float64 {
		var u struct {
			Lines []struct {
				Meter    string  `json:"meter"`
				Quantity float64 `json:"quantity"`
			} `json:"lines"`
		}
		json.Unmarshal(call("/v1/usage"), &u)
		for _, l := range u.Lines {
			if l.Meter == "api_operations" {
				return l.Quantity
			}
		}
		return -1
	}
	before := apiOps() // counted or not yet; it is one call either way
	for range 25 {
		call("/v1/events")
	}
	cmd.Process.Signal(syscall.SIGKILL) // within 250 ms of the last calls: their counts are only logged
	cmd.Wait()
	cmd, base, log = start(t, bin, data)
	defer func() { cmd.Process.Signal(syscall.SIGTERM); cmd.Wait() }()
	got := apiOps()
	// before, the call that read it, 25 calls, and this read: each counted once, the last one
	// possibly not yet (it is metered as it is answered).
	if want := before + 1 + 25; got != want && got != want+1 {
		t.Fatalf("api_operations after the crash: %v, want %v (before %v)\n%s", got, want, before, log)
	}
}

// --spamd and --rspamd name one filter, in the forms the clients need.
func TestJunkFilterFlags(t *testing.T) {
	for _, tc := range []struct {
		spamd, rspamd, want string
	}{
		{want: "<nil>"},
		{spamd: "127.0.0.1:783", want: "*spamc.Client"},
		{rspamd: "http://127.0.0.1:11333", want: "*spamc.Rspamd"},
		{spamd: "localhost", want: "error"},
		{rspamd: "127.0.0.1:11333", want: "error"},
		{spamd: "127.0.0.1:783", rspamd: "http://127.0.0.1:11333", want: "error"},
	} {
		f, err := junkFilter(tc.spamd, tc.rspamd)
		got := fmt.Sprintf("%T", f)
		if f == nil {
			got = "<nil>"
		}
		if err != nil {
			got = "error"
		}
		if got != tc.want {
			t.Errorf("--spamd %q --rspamd %q: %s (%v), want %s", tc.spamd, tc.rspamd, got, err, tc.want)
		}
	}
}
