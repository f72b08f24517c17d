package main

import (
	"bufio"
	"crypto/sha256"
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
	"strings"
	"syscall"
	"testing"
	"time"

	"svc.dev/svc/internal/pgtest"
	"svc.dev/svc/internal/versitygw"
	"svc.dev/svc/server/devseed"
)

// svc migrate moves a data directory the binary wrote (the dev seed, and a clean-up of a
// folder run to a receipt) into PostgreSQL and versitygw; it refuses the target once it holds
// the copy, unless --force; and a server on the cluster (another data directory, the same
// master key from the environment) serves the plans, executions, receipt (verified offline
// with the cluster's key set), vault objects' content and manifests the data directory held.
func TestMigrateDataDirToCluster(t *testing.T) {
	dsn := pgtest.Database(t)
	gw := versitygw.Start(t)
	bucket := gw.Bucket(t, nil)
	bin := svcBinary(t)
	data, root := t.TempDir(), t.TempDir()
	old := time.Now().AddDate(-2, 0, 0)
	for i := range 12 {
		p := filepath.Join(root, fmt.Sprintf("old-%02d.txt", i))
		os.WriteFile(p, []byte(strings.Repeat(string(rune('a'+i)), 1000*(i+1))), 0o600)
		os.Chtimes(p, old, old)
	}
	cmd, base, log := startWith(t, bin, data, nil, "--dev-source", "vendor_d_local:"+root)
	credsFile := filepath.Join(data, devseed.CredentialsFile)
	var creds map[string]string
	raw, _ := os.ReadFile(credsFile)
	if err := json.Unmarshal(raw, &creds); err != nil {
		t.Fatal(err)
	}
	lo, err := exec.Command(bin, "sources", "list", "--credentials", credsFile).CombinedOutput()
	src := regexp.MustCompile(`(src_\S+)\s+vendor_d_local`).FindSubmatch(lo)
	if err != nil || src == nil {
		t.Fatalf("svc sources list: %v\n%s", err, lo)
	}
	out, err := exec.Command(bin, "plan", "create", "--credentials", credsFile, "--source", string(src[1]), "--policy", `{"minAgeDays":30}`).CombinedOutput()
	m := regexp.MustCompile(`svc plan authorize (pln_\S+) --hash ([0-9a-f]{64})`).FindStringSubmatch(string(out))
	if err != nil || m == nil {
		t.Fatalf("svc plan create: %v\n%s\n%s", err, out, log)
	}
	out, err = exec.Command(bin, "apply", m[1], "--hash", m[2], "--credentials", credsFile).CombinedOutput()
	rm := regexp.MustCompile(`Receipt (rcp_\S+) verified`).FindSubmatch(out)
	if err != nil || rm == nil {
		t.Fatalf("svc apply: %v\n%s\n%s", err, out, log)
	}
	receiptID := string(rm[1])
	before := snapshot(t, base, creds, receiptID)
	if len(before.vaultContent) < 12 || len(before.plans) == 0 {
		t.Fatalf("the single node holds %d vault objects, %d plans", len(before.vaultContent), len(before.plans))
	}
	cmd.Process.Signal(syscall.SIGTERM)
	<-log.done
	if err := cmd.Wait(); err != nil {
		t.Fatalf("serve: %v\n%s", err, log)
	}

	env := append(os.Environ(), "AWS_ACCESS_KEY_ID="+gw.AccessKey, "AWS_SECRET_ACCESS_KEY="+gw.SecretKey)
	hot := "s3://" + gw.Endpoint + "/" + bucket + "/hot?insecure=true"
	cold := "s3://" + gw.Endpoint + "/" + bucket + "/cold?insecure=true"
	migrate := func(extra ...string) (string, error) {
		c := exec.Command(bin, append([]string{"migrate", "--from", data, "--to", dsn, "--vault-hot", hot, "--vault-cold", cold}, extra...)...)
		c.Env = env
		out, err := c.CombinedOutput()
		return string(out), err
	}
	out1, err := migrate()
	if err != nil {
		t.Fatalf("svc migrate: %v\n%s", err, out1)
	}
	for _, want := range []string{"plans", "executions", "receipts", "journals", "vault objects", "platform users", "vault hot tier: ", "receipt keys: 1 in the database", "migrated and checked"} {
		if !strings.Contains(out1, want) {
			t.Errorf("the summary lacks %q:\n%s", want, out1)
		}
	}
	if regexp.MustCompile(`vault hot tier: 0 files`).MatchString(out1) {
		t.Errorf("no vault file copied:\n%s", out1)
	}
	out2, err := migrate()
	if err == nil || !strings.Contains(out2, "the target is not empty") || !strings.Contains(out2, "--force") {
		t.Fatalf("a second migrate into the cluster: %v\n%s", err, out2)
	}
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() == 0 {
		t.Fatalf("exit status %v", err)
	}
	if out3, err := migrate("--force"); err != nil || !strings.Contains(out3, "migrated and checked") {
		t.Fatalf("migrate --force: %v\n%s", err, out3)
	}

	// The cluster: another data directory, the master key from the environment.
	key, err := os.ReadFile(filepath.Join(data, "master.key"))
	if err != nil {
		t.Fatal(err)
	}
	c2 := exec.Command(bin, "serve", "--addr", "127.0.0.1:0", "--data", t.TempDir(), "--database", dsn, "--vault-hot", hot, "--vault-cold", cold)
	c2.Env = append(env, "SVC_MASTER_KEY="+base64.StdEncoding.EncodeToString(key))
	base2, log2 := startCmd(t, c2)
	defer func() {
		c2.Process.Signal(syscall.SIGTERM)
		<-log2.done
		c2.Wait()
	}()
	after := snapshot(t, base2, creds, receiptID)
	if !slices.Equal(after.plans, before.plans) || !slices.Equal(after.executions, before.executions) {
		t.Errorf("plans %v -> %v, executions %v -> %v", before.plans, after.plans, before.executions, after.executions)
	}
	if after.receipt != before.receipt {
		t.Errorf("the receipt changed:\n%s\n%s", before.receipt, after.receipt)
	}
	if len(after.vaultContent) != len(before.vaultContent) {
		t.Errorf("vault objects: %d -> %d", len(before.vaultContent), len(after.vaultContent))
	}
	for id, sum := range before.vaultContent {
		if after.vaultContent[id] != sum {
			t.Errorf("vault object %s: content %s -> %s", id, sum, after.vaultContent[id])
		}
	}
	if after.manifests != before.manifests || before.manifests == "" {
		t.Errorf("the manifest bundles differ:\n%.300s\n%.300s", before.manifests, after.manifests)
	}
	// Offline verification with the cluster's published key set.
	rf := filepath.Join(t.TempDir(), "receipt.json")
	os.WriteFile(rf, []byte(after.receipt), 0o600)
	keys := filepath.Join(t.TempDir(), "keys.json")
	os.WriteFile(keys, []byte(fetch(t, base2+"/.well-known/svc-receipts.json", "")), 0o600)
	if out, err := exec.Command(bin, "receipt", "verify", rf, "--keys", keys).CombinedOutput(); err != nil {
		t.Fatalf("svc receipt verify with the cluster's keys: %v\n%s\n%s", err, out, log2)
	}
	// The cluster's receipt key rotates while it runs; without the master key it does not.
	rot := exec.Command(bin, "keys", "rotate", "--receipts", "--database", dsn, "--data", t.TempDir())
	if out, err := rot.CombinedOutput(); err == nil || !strings.Contains(string(out), "no master key") {
		t.Fatalf("rotate without the master key: %v\n%s", err, out)
	}
	rot = exec.Command(bin, "keys", "rotate", "--receipts", "--database", dsn, "--data", t.TempDir())
	rot.Env = c2.Env
	if out, err := rot.CombinedOutput(); err != nil || !strings.Contains(string(out), "is published now") {
		t.Fatalf("svc keys rotate --receipts --database: %v\n%s", err, out)
	}
}

// served is what a server serves of the dev tenant.
type served struct {
	plans, executions []string
	receipt           string
	vaultContent      map[string]string // object id -> SHA-256 of its content
	manifests         string
}

func fetch(t *testing.T, url, key string) string {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if res.StatusCode != 200 {
		t.Fatalf("GET %s: %d %s", url, res.StatusCode, b)
	}
	return string(b)
}

func snapshot(t *testing.T, base string, creds map[string]string, receiptID string) served {
	t.Helper()
	key, cx := creds["test_api_key"], "connection_id="+creds["connection_id"]
	ids := func(path string) []string {
		var list struct {
			Data []struct {
				ID     string `json:"id"`
				PlanID string `json:"plan_id"`
			} `json:"data"`
		}
		if err := json.Unmarshal([]byte(fetch(t, base+path, key)), &list); err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, d := range list.Data {
			out = append(out, d.ID+d.PlanID)
		}
		slices.Sort(out)
		return out
	}
	s := served{plans: ids("/v1/plans?limit=200&" + cx), executions: ids("/v1/executions?limit=200&" + cx),
		receipt: fetch(t, base+"/v1/receipts/"+receiptID, key), vaultContent: map[string]string{},
		manifests: manifestsOf(t, fetch(t, base+"/v1/vault/manifests/export?"+cx, key))}
	for _, id := range ids("/v1/vault/objects?limit=200&" + cx) {
		sum := sha256.Sum256([]byte(fetch(t, base+"/v1/vault/objects/"+id+"/content?"+cx, key)))
		s.vaultContent[id] = fmt.Sprintf("%x", sum)
	}
	return s
}

// manifestsOf is a manifest bundle without the time it was generated.
func manifestsOf(t *testing.T, bundle string) string {
	t.Helper()
	var b map[string]json.RawMessage
	if err := json.Unmarshal([]byte(bundle), &b); err != nil {
		t.Fatal(err)
	}
	if len(b["manifests"]) < 100 {
		t.Fatalf("a bundle without manifests: %.300s", bundle)
	}
	delete(b, "generatedAt")
	delete(b, "bundleHash") // covers generatedAt
	out, _ := json.Marshal(b)
	return string(out)
}

// startCmd starts a prepared svc serve command and returns its base URL once it listens.
func startCmd(t *testing.T, cmd *exec.Cmd) (string, *logTail) {
	t.Helper()
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
		return url, log
	case <-log.done:
		cmd.Wait()
		t.Fatalf("svc serve exited:\n%s", log)
	case <-time.After(60 * time.Second):
		cmd.Process.Kill()
		t.Fatalf("svc serve did not start:\n%s", log)
	}
	return "", nil
}
