package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"svc.dev/svc/platform"
	"svc.dev/svc/providers"
	"svc.dev/svc/server"
	"svc.dev/svc/server/devseed"
)

// A plan that removes more than an application may alone: its summary says the end user must
// approve it and prints an authorize line with --as-user; the same line without it (the test
// key) is refused step_up_required with the hint; the printed line, run as printed from the
// directory holding ./svc-data/dev-credentials.json, authorizes it (issue 20, 3).
func TestStepUpAuthorizeLineRunsAsPrinted(t *testing.T) {
	t.Setenv("XDG_DATA_HOME", t.TempDir())
	for _, k := range []string{"SVC_URL", "SVC_API_KEY", "SVC_SESSION", "SVC_CONNECTION_ID", "SVC_DATA"} {
		t.Setenv(k, "")
	}
	wd := t.TempDir()
	t.Chdir(wd)
	srv, err := server.New(server.Config{DataDir: filepath.Join(wd, "svc-data"), Password: platform.PasswordParams{Memory: 64, Time: 1, Threads: 1},
		RateLimit: platform.RateLimit{Limit: 100000, Window: time.Minute}, IntelScanEvery: -1})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(func() { ts.Close(); srv.Close() })
	creds, err := srv.Seed(context.Background(), ts.URL, &devseed.Options{NoExecution: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join("svc-data", devseed.CredentialsFile)); err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	old := time.Now().AddDate(-2, 0, 0)
	for i := range 1001 { // one more than an application may remove alone
		p := filepath.Join(root, fmt.Sprintf("f-%04d.txt", i))
		os.WriteFile(p, []byte(fmt.Sprint("old ", i)), 0o600)
		os.Chtimes(p, old, old)
	}
	src, err := srv.ConnectSource(context.Background(), platform.Tenant{Owner: creds.UserID, Mode: platform.ModeTest},
		server.SourceSpec{Provider: providers.VendorDLocal, Config: providers.Config{"root": root}, Kind: "folder", DisplayName: "Old files"})
	if err != nil {
		t.Fatal(err)
	}

	out, err := runCLI(t, "plan", "create", "--source", src.Id, "--policy", `{"minAgeDays":30}`)
	if err != nil {
		t.Fatalf("plan create: %v\n%s", err, out)
	}
	line := regexp.MustCompile(`(?m)^  svc (plan authorize pln_\S+ --hash [0-9a-f]{64}.*)$`).FindStringSubmatch(out)
	if line == nil || !strings.HasSuffix(line[1], " --as-user") || !strings.Contains(out, "end user's approval") {
		t.Fatalf("no authorize line with --as-user:\n%s", out)
	}
	args := strings.Fields(line[1])
	if _, err := runCLI(t, args[:len(args)-1]...); err == nil || !strings.Contains(err.Error(), "step_up_required") || !strings.Contains(err.Error(), "--as-user") {
		t.Fatalf("authorize with the test key: %v", err)
	}
	out, err = runCLI(t, append(args, "--json")...)
	var p struct{ State string }
	if err != nil || json.Unmarshal([]byte(out), &p) != nil || p.State != "authorized" {
		t.Fatalf("the printed line: %v\n%s", err, out)
	}
}
