package main

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"

	"svc.dev/svc/internal/versitygw"
)

// svc vault scrub checks a stopped server's vault, says what it found, and exits 1 when
// objects are corrupt; it refuses a data directory a running server holds.
func TestVaultScrubCommand(t *testing.T) {
	bin := svcBinary(t)
	data := t.TempDir()
	cmd, _, log := start(t, bin, data) // the dev seed executes a clean-up: the vault has content
	scrub := func() (string, error) {
		out, err := exec.Command(bin, "vault", "scrub", "--data", data).CombinedOutput()
		return string(out), err
	}
	if out, err := scrub(); err == nil || !strings.Contains(out, "running") {
		t.Fatalf("scrub beside a running server: %v\n%s", err, out)
	}
	cmd.Process.Signal(syscall.SIGTERM)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("serve: %v\n%s", err, log)
	}
	out, err := scrub()
	if err != nil || !strings.Contains(out, " 0 corrupt") || strings.Contains(out, " 0 objects") {
		t.Fatalf("scrub of an intact vault: %v\n%s", err, out)
	}
	// A failing disk: every stored file gets a flipped byte.
	n := 0
	filepath.WalkDir(filepath.Join(data, "vault"), func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || filepath.Base(filepath.Dir(path)) == "tmp" {
			return nil
		}
		if b, err := os.ReadFile(path); err == nil && len(b) > 200 {
			b[len(b)/2] ^= 0xff
			os.WriteFile(path, b, 0o600)
			n++
		}
		return nil
	})
	if n == 0 {
		t.Fatal("no vault files")
	}
	out, err = scrub()
	if err == nil || !strings.Contains(out, "corrupt: vlt_") {
		t.Fatalf("scrub of a corrupted vault: %v\n%s", err, out)
	}
}

// The vault's cold tier on an S3-compatible server (versitygw on loopback): the running server
// moves what is due there, and svc vault scrub, given the same backends, verifies it there.
func TestVaultColdTierOnS3(t *testing.T) {
	gw := versitygw.Start(t)
	bucket := gw.Bucket(t, nil)
	bin := svcBinary(t)
	data := t.TempDir()
	env := []string{"AWS_ACCESS_KEY_ID=" + gw.AccessKey, "AWS_SECRET_ACCESS_KEY=" + gw.SecretKey}
	cold := "s3://" + gw.Endpoint + "/" + bucket + "/cold?insecure=true"
	cmd, base, log := startWith(t, bin, data, env, "--vault-cold", cold, "--cold-after", "1ns", "--scrub-every", "1s")
	raw, _ := os.ReadFile(filepath.Join(data, "dev-credentials.json"))
	var creds map[string]string
	json.Unmarshal(raw, &creds)
	allCold := func() (int, bool) {
		req, _ := http.NewRequest("GET", base+"/v1/vault/objects?limit=200&connection_id="+creds["connection_id"], nil)
		req.Header.Set("Authorization", "Bearer "+creds["test_api_key"])
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, false
		}
		defer res.Body.Close()
		var list struct {
			Data []map[string]any `json:"data"`
		}
		json.NewDecoder(res.Body).Decode(&list)
		for _, o := range list.Data {
			if o["cold_since"] == nil {
				return len(list.Data), false
			}
		}
		return len(list.Data), len(list.Data) > 0
	}
	deadline := time.Now().Add(30 * time.Second)
	for n, ok := allCold(); !ok; n, ok = allCold() {
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatalf("%d vault objects, not all cold after 30 s:\n%s", n, log)
		}
		time.Sleep(200 * time.Millisecond)
	}
	cmd.Process.Signal(syscall.SIGTERM)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("serve: %v\n%s", err, log)
	}
	n := 0
	for o := range gw.Client.ListObjects(context.Background(), bucket, minio.ListObjectsOptions{Prefix: "cold/", Recursive: true}) {
		if o.Err != nil {
			t.Fatal(o.Err)
		}
		n++
	}
	if n == 0 {
		t.Fatal("nothing in the cold bucket")
	}
	scrub := exec.Command(bin, "vault", "scrub", "--data", data, "--vault-cold", cold)
	scrub.Env = append(os.Environ(), env...)
	out, err := scrub.CombinedOutput()
	if err != nil || !strings.Contains(string(out), " 0 corrupt") {
		t.Fatalf("scrub on the S3 cold tier: %v\n%s", err, out)
	}
}

// The dev seed's vaulted mail is searchable; svc vault reindex rebuilds a lost index offline;
// svc receipt restore plans the undo of the seeded clean-up.
func TestSearchReindexAndReceiptRestore(t *testing.T) {
	bin := svcBinary(t)
	data := t.TempDir()
	cmd, base, log := start(t, bin, data)
	raw, _ := os.ReadFile(filepath.Join(data, "dev-credentials.json"))
	var creds map[string]string
	json.Unmarshal(raw, &creds)
	get := func(path string) map[string]any {
		t.Helper()
		req, _ := http.NewRequest("GET", base+path, nil)
		req.Header.Set("Authorization", "Bearer "+creds["test_api_key"])
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		var out map[string]any
		json.NewDecoder(res.Body).Decode(&out)
		return out
	}
	hits := func() int {
		return len(get("/v1/vault/search?q=invoice&limit=200&connection_id=" + creds["connection_id"])["data"].([]any))
	}
	n := hits()
	if n == 0 {
		t.Fatalf("no seeded mail found for 'invoice':\n%s", log)
	}
	exes := get("/v1/executions?connection_id=" + creds["connection_id"])["data"].([]any)
	if len(exes) == 0 {
		t.Fatal("no seeded execution")
	}
	rid := exes[0].(map[string]any)["receipt_id"].(string)
	out, err := exec.Command(bin, "receipt", "restore", rid, "--credentials", filepath.Join(data, "dev-credentials.json"), "--json").CombinedOutput()
	if err != nil {
		t.Fatalf("svc receipt restore: %v\n%s", err, out)
	}
	var p map[string]any
	if err := json.Unmarshal(out, &p); err != nil || p["intent"] != "restore" || p["state"] != "draft" || len(p["objects"].([]any))+len(p["excluded"].([]any)) == 0 {
		t.Fatalf("restore plan: %v\n%s", err, out)
	}
	out, err = exec.Command(bin, "receipt", "restore", "rcp_01JD0000000000000000000000", "--credentials", filepath.Join(data, "dev-credentials.json")).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "404 not_found") {
		t.Fatalf("restore of an unknown receipt: %v\n%s", err, out)
	}

	cmd.Process.Signal(syscall.SIGTERM)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("serve: %v\n%s", err, log)
	}
	os.RemoveAll(filepath.Join(data, "search"))
	out, err = exec.Command(bin, "vault", "reindex", "--data", data).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "objects indexed") {
		t.Fatalf("reindex: %v\n%s", err, out)
	}
	cmd, base, log = start(t, bin, data)
	defer func() { cmd.Process.Signal(syscall.SIGTERM); cmd.Wait() }()
	if got := hits(); got != n {
		t.Fatalf("after reindex %d hits, before %d\n%s", got, n, log)
	}
}
