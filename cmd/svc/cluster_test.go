package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"svc.dev/svc"
	"svc.dev/svc/internal/pgtest"
	"svc.dev/svc/internal/versitygw"
	"svc.dev/svc/receipt"
	"svc.dev/svc/server/devseed"
)

// replica is one `svc serve` of a cluster test.
type replica struct {
	name string
	cmd  *exec.Cmd
	base string
	data string
	mu   sync.Mutex
	log  strings.Builder
	done chan struct{}
	dead bool
}

func (r *replica) logs() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.log.String()
}

// cluster is three replicas of svc serve on one PostgreSQL database and one S3 bucket.
type cluster struct {
	t        *testing.T
	bin      string
	env      []string
	args     []string
	replicas []*replica
	creds    map[string]string
	dsn      string
}

// startReplica starts `svc serve --dev` with the cluster's flags in its own process group
// (so that a SIGKILL can take its provider plugins with it).
func (c *cluster) startReplica(name, data string, extra ...string) *replica {
	c.t.Helper()
	r := &replica{name: name, data: data, done: make(chan struct{})}
	args := append([]string{"serve", "--dev", "--addr", "127.0.0.1:0", "--data", data}, c.args...)
	r.cmd = exec.Command(c.bin, append(args, extra...)...)
	r.cmd.Env = append(os.Environ(), c.env...)
	r.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stderr, _ := r.cmd.StderrPipe()
	if err := r.cmd.Start(); err != nil {
		c.t.Fatal(err)
	}
	found := make(chan string, 1)
	go func() {
		defer close(r.done)
		sc := bufio.NewScanner(stderr)
		sc.Buffer(nil, 1<<20)
		re := regexp.MustCompile(`base_url=(\S+)`)
		for sc.Scan() {
			r.mu.Lock()
			if r.log.Len() < 4<<20 {
				r.log.WriteString(sc.Text() + "\n")
			}
			r.mu.Unlock()
			if m := re.FindStringSubmatch(sc.Text()); m != nil {
				found <- m[1]
			}
		}
	}()
	select {
	case r.base = <-found:
	case <-r.done:
		c.t.Fatalf("replica %s ended before it listened:\n%s", name, r.logs())
	case <-time.After(90 * time.Second):
		r.cmd.Process.Kill()
		c.t.Fatalf("replica %s did not start:\n%s", name, r.logs())
	}
	c.replicas = append(c.replicas, r)
	return r
}

// kill ends a replica with SIGKILL, with its plugins.
func (r *replica) kill() {
	syscall.Kill(-r.cmd.Process.Pid, syscall.SIGKILL)
	r.cmd.Wait()
	<-r.done
	r.dead = true
}

// stop ends a replica with SIGTERM (then its plugins).
func (r *replica) stop() {
	if r.dead {
		return
	}
	r.cmd.Process.Signal(syscall.SIGTERM)
	waited := make(chan struct{})
	go func() { r.cmd.Wait(); close(waited) }()
	select {
	case <-waited:
	case <-time.After(30 * time.Second):
		r.cmd.Process.Kill()
		<-waited
	}
	syscall.Kill(-r.cmd.Process.Pid, syscall.SIGKILL)
	r.dead = true
}

// alive returns the replicas still running.
func (c *cluster) alive() []*replica {
	var out []*replica
	for _, r := range c.replicas {
		if !r.dead {
			out = append(out, r)
		}
	}
	return out
}

// call makes an API request on replica r with the test key, within the dev connection; hdr
// are header names and values, and the pseudo-headers "key" (another key, "" for none) and
// "conn" ("no": outside the connection).
func (c *cluster) call(r *replica, method, path, body string, hdr ...string) (int, map[string]any, []byte, http.Header) {
	c.t.Helper()
	key := c.creds["test_api_key"]
	conn := true
	for i := 0; i+1 < len(hdr); i += 2 {
		switch hdr[i] {
		case "key":
			key = hdr[i+1]
		case "conn":
			conn = hdr[i+1] == "yes"
		}
	}
	if conn {
		sep := "?"
		if strings.Contains(path, "?") {
			sep = "&"
		}
		path += sep + "connection_id=" + c.creds["connection_id"]
	}
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, _ := http.NewRequest(method, r.base+path, rd)
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		if hdr[i] != "key" && hdr[i] != "conn" {
			req.Header.Set(hdr[i], hdr[i+1])
		}
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, nil, nil
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	var m map[string]any
	json.Unmarshal(raw, &m)
	return res.StatusCode, m, raw, res.Header
}

// Three replicas of the real binary on one PostgreSQL database (scripts/postgres) and one
// S3-compatible bucket (versitygw, scripts/install-versitygw.sh), requests spread over them.
// The replica running a 500-asset execution (preserve, then trash) is killed with SIGKILL
// mid-way; another replica takes the execution over when its lease expires and finishes it.
// Then: every asset preserved once (one committed vault object) and trashed once, with its
// verified copy; the receipt verifies offline; 16 concurrent requests with one
// Idempotency-Key, spread over the replicas, made one plan; the webhook's receiver got every
// event (at least once: a delivery in flight at the kill may come again, which receivers
// dedupe by event id); live API calls spread over the replicas were metered once each.
// SVC_CLUSTER_FULL=1 runs the long version (5,000 assets); docs/scale-out.md.
func TestClusterOfThreeReplicas(t *testing.T) {
	assets := 500
	if os.Getenv("SVC_CLUSTER_FULL") != "" {
		assets = 5000
	}
	dsn := pgtest.Database(t)
	gw := versitygw.Start(t)
	bucket := gw.Bucket(t, nil)
	bin := svcBinary(t)
	root, home := t.TempDir(), t.TempDir()
	shas := map[string]string{}
	old := time.Now().AddDate(-2, 0, 0)
	for i := range assets {
		name := fmt.Sprintf("f%05d.bin", i)
		data := make([]byte, 2000+mrand.IntN(30_000))
		rand.Read(data)
		os.WriteFile(filepath.Join(root, name), data, 0o600)
		os.Chtimes(filepath.Join(root, name), old, old)
		sum := sha256.Sum256(data)
		shas[name] = hex.EncodeToString(sum[:])
	}
	master := make([]byte, 32)
	rand.Read(master)
	c := &cluster{t: t, bin: bin, dsn: dsn,
		env: []string{svc.MasterKeyEnv + "=" + base64.StdEncoding.EncodeToString(master), "XDG_DATA_HOME=" + home,
			"AWS_ACCESS_KEY_ID=" + gw.AccessKey, "AWS_SECRET_ACCESS_KEY=" + gw.SecretKey},
		args: []string{"--database", dsn, "--lease", "3s",
			"--vault-hot", "s3://" + gw.Endpoint + "/" + bucket + "/hot?insecure=true",
			"--vault-cold", "s3://" + gw.Endpoint + "/" + bucket + "/cold?insecure=true"}}
	defer func() {
		for _, r := range c.replicas {
			r.stop()
		}
		if t.Failed() {
			for _, r := range c.replicas {
				t.Logf("replica %s log (tail):\n%s", r.name, tail(r.logs(), 6000))
			}
		}
	}()
	first := c.startReplica("r1", t.TempDir(), "--dev-source", "vendor_d_local:"+root)
	raw, err := os.ReadFile(filepath.Join(first.data, devseed.CredentialsFile))
	if err != nil {
		t.Fatal(err)
	}
	json.Unmarshal(raw, &c.creds)
	for _, name := range []string{"r2", "r3"} {
		data := t.TempDir()
		// The receipt signing keys are in the database (nothing of keys/ is copied: every
		// replica signs with the key set the first one stored); dev-credentials.json makes the
		// dev seed find the seeded tenant instead of making another.
		copyFile(t, filepath.Join(first.data, devseed.CredentialsFile), filepath.Join(data, devseed.CredentialsFile))
		c.startReplica(name, data)
	}
	spread := func(i int) *replica { return c.replicas[i%len(c.replicas)] }
	ctx := context.Background()
	db, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close(ctx)

	// The source, seen from every replica.
	var src string
	for i := range 3 {
		st, srcs, raw, _ := c.call(spread(i), "GET", "/v1/sources?provider=vendor_d_local", "")
		if st != 200 {
			t.Fatalf("sources on %s: %d %s", spread(i).name, st, raw)
		}
		for _, s := range srcs["data"].([]any) {
			if s := s.(map[string]any); s["external_account_id"] == root {
				src = s["id"].(string)
			}
		}
	}
	if src == "" {
		t.Fatal("the folder source is not listed")
	}

	// A webhook (made on r2) for the execution's events and every preserved asset's.
	rc := newWebhookReceiver()
	defer rc.Close()
	hooked := time.Now().UTC().Add(-time.Second) // events before the webhook (the dev seed's) are not its
	st, _, raw, _ := c.call(c.replicas[1], "POST", "/v1/webhooks",
		`{"url":"`+rc.URL+`/hook","event_types":["svc.execution.*","svc.vault.object.committed"],"mode":"test"}`, "conn", "no")
	if st != 201 {
		t.Fatalf("webhook: %d %s", st, raw)
	}

	// 16 concurrent requests with one Idempotency-Key, spread over the replicas: one plan.
	plans := func() int {
		var n int
		if err := db.QueryRow(ctx, "SELECT count(*) FROM plans").Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	before := plans()
	body := `{"intent":"svc","source_ids":["` + src + `"],"policy":{"minAgeDays":30}}`
	var wg sync.WaitGroup
	var mu sync.Mutex
	ids, statuses := map[string]int{}, map[int]int{}
	for i := range 16 {
		wg.Go(func() {
			st, p, raw, _ := c.call(spread(i), "POST", "/v1/plans", body, "Idempotency-Key", "cluster-plan-1")
			mu.Lock()
			defer mu.Unlock()
			statuses[st]++
			switch st {
			case 201:
				ids[p["planId"].(string)]++
			case 409:
				if !strings.Contains(string(raw), "idempotency_key_in_use") {
					t.Errorf("409 that is not idempotency_key_in_use: %s", raw)
				}
			default:
				t.Errorf("idempotent plan on %s: %d %s", spread(i).name, st, raw)
			}
		})
	}
	wg.Wait()
	if len(ids) != 1 || plans()-before != 1 {
		t.Fatalf("16 same-key requests made %d distinct plans (%d stored): statuses %v", len(ids), plans()-before, statuses)
	}

	// Live API calls spread over the replicas, each metered once.
	usage := func(r *replica) float64 {
		st, u, raw, _ := c.call(r, "GET", "/v1/usage", "", "key", c.creds["live_api_key"], "conn", "no")
		if st != 200 {
			t.Fatalf("usage: %d %s", st, raw)
		}
		for _, l := range u["lines"].([]any) {
			if l := l.(map[string]any); l["meter"] == "api_operations" {
				return l["quantity"].(float64)
			}
		}
		t.Fatalf("no api_operations line: %s", raw)
		return 0
	}
	base := usage(c.replicas[0])
	const liveCalls = 30
	for i := range liveCalls {
		if st, _, raw, _ := c.call(spread(i), "GET", "/v1/webhooks", "", "key", c.creds["live_api_key"], "conn", "no"); st != 200 {
			t.Fatalf("live call: %d %s", st, raw)
		}
	}
	time.Sleep(time.Second) // each replica's meter adds its log every quarter second

	// The execution: planned on r3, authorized on r2, started on any of the three.
	st, p, raw, _ := c.call(c.replicas[2], "POST", "/v1/plans", body)
	if st != 201 || len(p["objects"].([]any)) != assets {
		t.Fatalf("plan: %d %.300s", st, raw)
	}
	planID := p["planId"].(string)
	// The user authorizes it (signed in): an application alone may not remove more than 1,000
	// objects (the long version's 5,000).
	if st, _, raw, _ := c.call(c.replicas[1], "POST", "/v1/plans/"+planID+"/authorize", `{"plan_hash":"`+p["hash"].(string)+`"}`,
		"key", "", "conn", "no", "Cookie", "svc_session="+c.creds["session_cookie"], "Svc-Mode", "test"); st != 200 {
		t.Fatalf("authorize: %d %s", st, raw)
	}
	st, x, raw, _ := c.call(c.replicas[mrand.IntN(3)], "POST", "/v1/plans/"+planID+"/execute", "")
	if st != 202 {
		t.Fatalf("execute: %d %s", st, raw)
	}
	exeID := x["id"].(string)

	// Kill the replica holding the execution's lease once a tenth of the files are trashed.
	trashedNow := func() int {
		n, _ := filepath.Glob(filepath.Join(home, "Trash", "files", "*"))
		return len(n)
	}
	deadline := time.Now().Add(2 * time.Minute)
	for trashedNow() < assets/10 && time.Now().Before(deadline) {
		time.Sleep(2 * time.Millisecond)
	}
	victim := c.holderOf(ctx, db, exeID)
	if victim == nil {
		t.Fatalf("no replica holds execution %s's lease (%d trashed)", exeID, trashedNow())
	}
	victim.kill()
	killedAt := trashedNow()
	if killedAt >= assets {
		t.Fatalf("the execution finished before its replica was killed")
	}
	t.Logf("killed %s (running %s) with %d of %d files trashed", victim.name, exeID, killedAt, assets)

	// Another replica adopts it (the lease expires after 3 s) and finishes it.
	alive := c.alive()
	deadline = time.Now().Add(3 * time.Minute)
	for i := 0; x["receipt_id"] == nil && time.Now().Before(deadline); i++ {
		time.Sleep(100 * time.Millisecond)
		_, x, _, _ = c.call(alive[i%len(alive)], "GET", "/v1/executions/"+exeID, "")
	}
	if x["receipt_id"] == nil || x["status"] != "completed" {
		t.Fatalf("the execution did not complete after the kill: %v", x)
	}
	if by := c.holderOf(ctx, db, exeID); by != nil {
		t.Errorf("a finished execution's lease is still held by %s", by.name)
	}

	// The receipt verifies offline, with the keys one replica publishes.
	_, _, rcpt, _ := c.call(alive[0], "GET", "/v1/receipts/"+x["receipt_id"].(string), "")
	res, err := http.Get(alive[1].base + "/.well-known/svc-receipts.json")
	if err != nil {
		t.Fatal(err)
	}
	ks, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if _, err := receipt.Verify(rcpt, ks); err != nil {
		t.Fatalf("the receipt does not verify: %v", err)
	}
	c.checkAssets(ctx, db, rcpt, root, home, src, shas)

	// Every event of the webhook's types reached the receiver.
	time.Sleep(4 * time.Second) // the webhook's lease, if the victim held it, expires; queues are polled
	c.checkWebhook(alive[0], rc, hooked)

	// Each live call counted once, whichever replica answered it (and the first usage read).
	if got := usage(alive[len(alive)-1]) - base; got != liveCalls+1 {
		t.Errorf("%v API operations metered for %d live calls and one usage read", got, liveCalls)
	}
}

// holderOf returns the live replica that holds the lease of execution exeID, nil when none
// does. A lease's holder names the process id (svc.Replica.Holder).
func (c *cluster) holderOf(ctx context.Context, db *pgx.Conn, exeID string) *replica {
	var holder string
	err := db.QueryRow(ctx, "SELECT holder FROM leases WHERE name LIKE $1 AND expires_at > clock_timestamp()", "execution:%/"+exeID).Scan(&holder)
	if err != nil {
		return nil
	}
	m := regexp.MustCompile(`-(\d+)-[0-9a-f]{8}$`).FindStringSubmatch(holder)
	if m == nil {
		c.t.Fatalf("lease holder %q names no process", holder)
	}
	pid, _ := strconv.Atoi(m[1])
	for _, r := range c.replicas {
		if r.cmd.Process.Pid == pid && !r.dead {
			return r
		}
	}
	return nil
}

// checkAssets: every file trashed once, with its verified copy in the receipt; one committed
// vault object per asset; nothing left at the source.
func (c *cluster) checkAssets(ctx context.Context, db *pgx.Conn, rcpt []byte, root, home, src string, shas map[string]string) {
	t := c.t
	var rc struct {
		Objects []struct {
			ProviderObjectID string  `json:"providerObjectId"`
			VaultSHA256      *string `json:"vaultSha256"`
		} `json:"objects"`
	}
	json.Unmarshal(rcpt, &rc)
	bySHA := map[string]*string{}
	for _, o := range rc.Objects {
		bySHA[o.ProviderObjectID] = o.VaultSHA256
	}
	trashed := map[string]int{}
	infos, _ := filepath.Glob(filepath.Join(home, "Trash", "info", "*.trashinfo"))
	for _, info := range infos {
		if _, err := os.Lstat(filepath.Join(home, "Trash", "files", strings.TrimSuffix(filepath.Base(info), ".trashinfo"))); err != nil {
			continue // a reservation the kill left without its file: nothing was trashed by it
		}
		b, _ := os.ReadFile(info)
		if m := regexp.MustCompile(`(?m)^Path=(.*)$`).FindSubmatch(b); m != nil {
			trashed[filepath.Base(string(m[1]))]++
		}
	}
	for name, sha := range shas {
		if trashed[name] != 1 {
			t.Errorf("%s trashed %d times", name, trashed[name])
		}
		if v := bySHA[name]; v == nil || *v != sha {
			t.Errorf("%s: the receipt's vault copy %v, want its content's %s", name, v, sha)
		}
		if _, err := os.Stat(filepath.Join(root, name)); err == nil {
			t.Errorf("%s is still at the source", name)
		}
	}
	rows, err := db.Query(ctx, `SELECT body->>'asset_id', count(*) FROM vault_objects
		WHERE state = 'committed' AND body->>'source_id' = $1 GROUP BY 1`, src)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		var asset string
		var k int
		rows.Scan(&asset, &k)
		n++
		if k != 1 {
			t.Errorf("asset %s has %d committed vault objects", asset, k)
		}
	}
	if n != len(shas) {
		t.Errorf("%d assets with a committed vault object, want %d", n, len(shas))
	}
}

// checkWebhook: every event of the webhook's types in the tenant's stream since the webhook
// was made was delivered;
// a repeat (a delivery in flight at the kill, made again) is logged, as receivers dedupe by
// event id.
func (c *cluster) checkWebhook(r *replica, rc *webhookReceiver, since time.Time) {
	t := c.t
	want := map[string]bool{}
	cursor := ""
	for {
		path := "/v1/events?types=svc.execution.completed,svc.execution.started,svc.vault.object.committed&limit=200&since=" + since.Format(time.RFC3339)
		if cursor != "" {
			path += "&cursor=" + cursor
		}
		// The user's own view of their test tenant's stream (a session), whose events the
		// connection's webhook gets.
		st, page, raw, _ := c.call(r, "GET", path, "", "key", "", "conn", "no", "Cookie", "svc_session="+c.creds["session_cookie"], "Svc-Mode", "test")
		if st != 200 {
			t.Fatalf("events: %d %s", st, raw)
		}
		for _, e := range page["data"].([]any) {
			want[e.(map[string]any)["id"].(string)] = true
		}
		next, _ := page["next_cursor"].(string)
		if next == "" {
			break
		}
		cursor = next
	}
	deadline := time.Now().Add(time.Minute)
	got := rc.counts()
	for missing(want, got) > 0 && time.Now().Before(deadline) {
		time.Sleep(200 * time.Millisecond)
		got = rc.counts()
	}
	if n := missing(want, got); n > 0 {
		t.Errorf("%d of %d events never reached the webhook's receiver", n, len(want))
	}
	repeats := 0
	for _, k := range got {
		if k > 1 {
			repeats++
		}
	}
	t.Logf("webhook: %d events delivered, %d of them more than once (receivers dedupe by event id)", len(got), repeats)
}

func missing(want map[string]bool, got map[string]int) int {
	n := 0
	for id := range want {
		if got[id] == 0 {
			n++
		}
	}
	return n
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o600); err != nil {
		t.Fatal(err)
	}
}
