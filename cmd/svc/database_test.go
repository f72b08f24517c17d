package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"svc.dev/svc/internal/pgtest"
	"svc.dev/svc/server/devseed"
)

// svc serve --dev --database keeps its records in PostgreSQL: the dev seed (sign-up,
// organization, application, keys, connection, export job) runs on it, a plan made through the
// CLI lands in its tables and runs to a receipt that verifies (every file preserved in the
// vault before it leaves its folder), no bbolt file is made, and a restart finds the seed's
// credentials working.
func TestServeOnPostgres(t *testing.T) {
	dsn := pgtest.Database(t)
	bin := svcBinary(t)
	data, root := t.TempDir(), t.TempDir()
	old := time.Now().AddDate(-2, 0, 0)
	for i := range 25 {
		p := filepath.Join(root, fmt.Sprintf("old-%02d.txt", i))
		os.WriteFile(p, []byte(strings.Repeat("x", 1000*(i+1))), 0o600)
		os.Chtimes(p, old, old)
	}
	cmd, base, log := startWith(t, bin, data, nil, "--database", dsn, "--dev-source", "vendor_d_local:"+root)

	raw, err := os.ReadFile(filepath.Join(data, devseed.CredentialsFile))
	if err != nil {
		t.Fatal(err)
	}
	var creds map[string]string
	if err := json.Unmarshal(raw, &creds); err != nil {
		t.Fatal(err)
	}
	if s := get2(t, base+"/v1/account", creds["session_cookie"]); s != 200 {
		t.Fatalf("the seeded session: %d\n%s", s, log)
	}
	credsFile := filepath.Join(data, devseed.CredentialsFile)
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
	planID := m[1]
	out, err = exec.Command(bin, "apply", m[1], "--hash", m[2], "--credentials", credsFile).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "completed: 25 assets attempted, 25 completed, 0 failed") || !regexp.MustCompile(`Receipt rcp_\S+ verified`).Match(out) {
		t.Fatalf("svc apply: %v\n%s\n%s", err, out, log)
	}
	if left, _ := os.ReadDir(root); len(left) != 0 {
		t.Fatalf("%d files left", len(left))
	}

	// Vault search answers from PostgreSQL's index (pgsearch), not from DATA/search.
	req, _ := http.NewRequest("GET", base+"/v1/vault/search?q=type:file&limit=200&connection_id="+creds["connection_id"], nil)
	req.Header.Set("Authorization", "Bearer "+creds["test_api_key"])
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var page struct {
		Data []struct {
			VaultObject struct{ Name string } `json:"vault_object"`
		} `json:"data"`
	}
	err = json.NewDecoder(res.Body).Decode(&page)
	res.Body.Close()
	if err != nil || res.StatusCode != 200 || len(page.Data) < 25 {
		t.Fatalf("vault search: %d, %d hits, %v\n%s", res.StatusCode, len(page.Data), err, log)
	}
	if _, err := os.Stat(filepath.Join(data, "search")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("a bleve index with --database: %v", err)
	}

	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var n int
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM plans WHERE id = $1", planID).Scan(&n); err != nil || n != 1 {
		t.Fatalf("the plan in PostgreSQL: %d rows, %v", n, err)
	}
	for _, q := range []struct {
		sql  string
		want int
	}{
		{"SELECT count(*) FROM receipts", 1},
		{"SELECT count(*) FROM vault_objects WHERE state = 'committed'", 25},
		{"SELECT count(DISTINCT execution_id) FROM journal", 1},
		{"SELECT count(*) FROM search_docs WHERE type = 'file'", 25},
		{"SELECT count(*) FROM search_feed WHERE last > 0", 1},
	} {
		if err := conn.QueryRow(ctx, q.sql).Scan(&n); err != nil || n < q.want {
			t.Fatalf("%s: %d, %v, want at least %d", q.sql, n, err, q.want)
		}
	}
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM users").Scan(&n); err != nil || n == 0 {
		t.Fatalf("users in PostgreSQL: %d, %v", n, err)
	}
	if _, err := os.Stat(filepath.Join(data, "svc.db")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("svc.db with --database: %v", err)
	}

	stop := func(c *exec.Cmd, l *logTail) {
		t.Helper()
		c.Process.Signal(syscall.SIGTERM)
		done := make(chan error, 1)
		go func() { <-l.done; done <- c.Wait() }()
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("exit after SIGTERM: %v\n%s", err, l)
			}
		case <-time.After(30 * time.Second):
			c.Process.Kill()
			t.Fatal("svc did not stop on SIGTERM")
		}
	}
	stop(cmd, log)
	cmd2, base2, log2 := startWith(t, bin, data, nil, "--database", dsn)
	defer stop(cmd2, log2)
	raw2, _ := os.ReadFile(credsFile)
	var creds2 map[string]string
	json.Unmarshal(raw2, &creds2)
	if creds2["test_api_key"] != creds["test_api_key"] || creds2["user_id"] != creds["user_id"] {
		t.Fatalf("a restart changed the credentials: %v -> %v", creds, creds2)
	}
	if s := get2(t, base2+"/v1/account", creds2["session_cookie"]); s != 200 {
		t.Fatalf("after a restart: %d\n%s", s, log2)
	}
}
