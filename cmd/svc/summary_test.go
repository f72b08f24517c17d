package main

import (
	"bytes"
	"context"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"svc.dev/svc/platform"
	"svc.dev/svc/server"
)

// The summaries a user reads on the README's tour, golden (issue 20, 8): the plan of the
// simulated clean-up and the seeded clean-up's execution, the plan and the apply of an export
// of the archive mailbox and of the restore of the seeded clean-up by its receipt, on a dev-seeded server with a fixed clock. Ids, hashes, keys,
// addresses and times are replaced by placeholders; progress lines are left out (their number
// follows the poll's timing). Run with -update to rewrite testdata/tour_summaries.golden.
func TestTourSummariesGolden(t *testing.T) {
	path, err := filepath.Abs(filepath.Join("testdata", "tour_summaries.golden"))
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("XDG_DATA_HOME", t.TempDir())
	t.Chdir(t.TempDir()) // no ./svc-data here: the flags say where the server is
	now := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	srv, err := server.New(server.Config{DataDir: t.TempDir(), Password: platform.PasswordParams{Memory: 64, Time: 1, Threads: 1},
		RateLimit: platform.RateLimit{Limit: 100000, Window: time.Minute}, Now: func() time.Time { return now }, IntelScanEvery: -1})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(func() { ts.Close(); srv.Close() })
	creds, err := srv.Seed(context.Background(), ts.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	flags := []string{"--server", ts.URL, "--api-key", creds.TestAPIKey, "--connection", creds.ConnectionID}
	var golden bytes.Buffer
	cli := func(title string, args ...string) string {
		t.Helper()
		out, err := runCLI(t, append(args, flags...)...)
		if err != nil {
			t.Fatalf("svc %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		if title != "" {
			golden.WriteString("== " + title + "\n" + withoutProgress(out) + "\n")
		}
		return out
	}
	planAndApply := func(title string, args ...string) string {
		t.Helper()
		out := cli(title+": plan", args...)
		m := regexp.MustCompile(`plan authorize (pln_\S+) --hash ([0-9a-f]{64})`).FindStringSubmatch(out)
		if m == nil {
			t.Fatalf("%s: no authorize line in\n%s", title, out)
		}
		return cli(title+": apply", "apply", m[1], "--hash", m[2], "--poll", "5ms")
	}
	// The clean-up's plan as the tour makes it; its execution is the one the dev seed made of
	// the same kind of plan (applying this one too would vault 220 MiB more: a minute under
	// the race detector), read with svc executions get, whose summary is svc apply's.
	cli("clean-up: plan", "plan", "create", "--intent", "svc", "--policy", `{"minAgeDays":30,"removePromotional":true,"excludeStarred":true}`)
	exe := regexp.MustCompile(`(?m)^(exe_\S+)\s`).FindStringSubmatch(cli("", "executions", "list"))[1]
	seeded := cli("the seeded clean-up: executions get", "executions", "get", exe)
	receiptID := regexp.MustCompile(`receipt\s+(rcp_\S+)`).FindStringSubmatch(seeded)[1]
	src := regexp.MustCompile(`(?m)^(src_\S+)\s.*Simulated archive mailbox`).FindStringSubmatch(cli("", "sources", "list"))[1]
	dst := regexp.MustCompile(`(?m)^(dst_\S+)\s.*Local export folder`).FindStringSubmatch(cli("", "destinations", "list"))[1]
	planAndApply("export", "plan", "create", "--intent", "export", "--destination", dst, "--source", src)
	planAndApply("restore", "receipt", "restore", receiptID)

	got := placeholders(golden.String())
	if *update {
		os.WriteFile(path, []byte(got), 0o644)
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if got != string(want) {
		t.Fatalf("the summaries changed (run with -update if intended):\n%s", got)
	}
}

// withoutProgress drops the plain progress lines of svc apply.
func withoutProgress(out string) string {
	return regexp.MustCompile(`(?m)^ *\d+%  .*\n`).ReplaceAllString(out, "")
}

// placeholders replaces what differs from run to run.
func placeholders(s string) string {
	for _, r := range []struct{ re, with string }{
		{`\b(pln|src|dst|rcp|exe|ast|cxn|vlt)_[0-9A-HJKMNP-TV-Z]{26}\b`, "${1}_ID"},
		{`\b[0-9a-f]{64}\b`, "HASH"},
		{`signed by \S+`, "signed by KEY_ID"},
		{`sk_test_\S+`, "sk_test_KEY"},
		{`http://127\.0\.0\.1:\d+`, "http://127.0.0.1:PORT"},
		{`\d{4}-\d{2}-\d{2} \d{2}:\d{2} UTC`, "TIME"},
	} {
		s = regexp.MustCompile(r.re).ReplaceAllString(s, r.with)
	}
	return s
}
