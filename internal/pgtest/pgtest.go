// Package pgtest gives tests a real PostgreSQL database: one throwaway cluster per test
// binary, started by the project's scripts/postgres (which installs PostgreSQL 15 when it is
// absent), or the server named by SVC_TEST_POSTGRES; and a fresh, empty database per test.
// When PostgreSQL cannot be had, the tests that ask for it skip and say why.
//
// A test binary that uses it calls Main from its TestMain, so that the cluster stops when
// the tests end.
package pgtest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// EnvDSN names the environment variable that points the tests at a running server instead
// of a throwaway cluster: the DSN of a role that may create databases.
const EnvDSN = "SVC_TEST_POSTGRES"

var cluster struct {
	once sync.Once
	dsn  string // the admin DSN
	dir  string // the throwaway cluster's directory, "" when SVC_TEST_POSTGRES names a server
	err  error
}

// Main runs the tests of m and stops the cluster that Database started, if any; call it from
// TestMain.
func Main(m *testing.M) {
	code := m.Run()
	if err := stop(); err != nil {
		fmt.Fprintln(os.Stderr, "pgtest:", err)
	}
	os.Exit(code)
}

// script is scripts/postgres of this module.
func script() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "scripts", "postgres")
}

func start() {
	if dsn := os.Getenv(EnvDSN); dsn != "" {
		cluster.dsn = dsn
		return
	}
	// The cluster runs as an unprivileged user when the tests run as root: its directory's
	// parent must let that user in.
	parent, err := os.MkdirTemp("", "svc-postgres-")
	if err != nil {
		cluster.err = err
		return
	}
	if err := os.Chmod(parent, 0o755); err != nil {
		cluster.err = err
		return
	}
	cluster.dir = filepath.Join(parent, "cluster")
	var stderr bytes.Buffer
	cmd := exec.Command("bash", script(), "start", cluster.dir)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		os.RemoveAll(parent)
		cluster.dir = ""
		cluster.err = fmt.Errorf("scripts/postgres start: %v: %s", err, lastLines(stderr.String(), 8))
		return
	}
	cluster.dsn = strings.TrimSpace(string(out))
}

func stop() error {
	if cluster.dir == "" {
		return nil
	}
	out, err := exec.Command("bash", script(), "stop", cluster.dir).CombinedOutput()
	os.RemoveAll(filepath.Dir(cluster.dir))
	if err != nil {
		return fmt.Errorf("scripts/postgres stop: %v: %s", err, lastLines(string(out), 8))
	}
	return nil
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// Database returns the DSN of a new, empty database for t, dropped when t ends; it skips t
// when PostgreSQL cannot be had (not installed and not installable, or not startable).
func Database(t testing.TB) string {
	t.Helper()
	cluster.once.Do(start)
	if cluster.err != nil {
		t.Skipf("PostgreSQL is not available (set %s to a server's DSN, or make scripts/postgres work): %v", EnvDSN, cluster.err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	admin, err := pgx.Connect(ctx, cluster.dsn)
	if err != nil {
		t.Fatalf("connect to the test server: %v", err)
	}
	defer admin.Close(ctx)
	var b [8]byte
	rand.Read(b[:])
	name := "svc_test_" + hex.EncodeToString(b[:])
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatalf("create a test database: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		admin, err := pgx.Connect(ctx, cluster.dsn)
		if err != nil {
			t.Errorf("connect to drop %s: %v", name, err)
			return
		}
		defer admin.Close(ctx)
		if _, err := admin.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
			t.Errorf("drop %s: %v", name, err)
		}
	})
	u, err := url.Parse(cluster.dsn)
	if err != nil {
		t.Fatalf("the test server's DSN: %v", err)
	}
	u.Path = "/" + name
	return u.String()
}
