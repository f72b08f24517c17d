package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"svc.dev/svc/server/devseed"
	"testing"
	"time"

	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/platform"
	"svc.dev/svc/providers"
	"svc.dev/svc/server"
)

// cliServer is a real server in process (server.New on a loopback listener, seeded like
// --dev) with a local folder of n old files connected in the test tenant.
func cliServer(t *testing.T, n int) (flags []string, root, sourceID string) {
	t.Helper()
	t.Setenv("XDG_DATA_HOME", t.TempDir())
	srv, err := server.New(server.Config{DataDir: t.TempDir(), Password: platform.PasswordParams{Memory: 64, Time: 1, Threads: 1},
		RateLimit: platform.RateLimit{Limit: 100000, Window: time.Minute}})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(func() { ts.Close(); srv.Close() })
	creds, err := srv.Seed(context.Background(), ts.URL, &devseed.Options{NoExecution: true})
	if err != nil {
		t.Fatal(err)
	}
	root = t.TempDir()
	old := time.Now().AddDate(-2, 0, 0)
	for i := range n {
		p := filepath.Join(root, fmt.Sprintf("f-%03d.txt", i))
		os.WriteFile(p, []byte(strings.Repeat("y", 500*(i+1))), 0o600)
		os.Chtimes(p, old, old)
	}
	src, err := srv.ConnectSource(context.Background(), platform.Tenant{Owner: creds.UserID, Mode: platform.ModeTest},
		server.SourceSpec{Provider: providers.VendorDLocal, Config: providers.Config{"root": root}, Kind: "folder", DisplayName: "Old files"})
	if err != nil {
		t.Fatal(err)
	}
	return []string{"--server", ts.URL, "--api-key", creds.TestAPIKey, "--connection", creds.ConnectionID}, root, src.Id
}

func runCLI(t *testing.T, args ...string) (string, error) {
	t.Helper()
	var out bytes.Buffer
	root := newRootCmd(&out, &out)
	root.SetArgs(args)
	err := root.ExecuteContext(context.Background())
	return out.String(), err
}

// The CLI's calls go through the client: sources, plans, apply; redirected output gets one
// plain progress line per 10%, not a redraw per tick.
func TestCLIThroughClient(t *testing.T) {
	flags, root, src := cliServer(t, 40)
	out, err := runCLI(t, append([]string{"sources", "list"}, flags...)...)
	if err != nil || !strings.Contains(out, src) {
		t.Fatalf("sources list: %v\n%s", err, out)
	}
	out, err = runCLI(t, append([]string{"plan", "create", "--source", src, "--policy", `{"minAgeDays":30}`}, flags...)...)
	m := regexp.MustCompile(`svc plan authorize (pln_\S+) --hash ([0-9a-f]{64})`).FindStringSubmatch(out)
	if err != nil || m == nil {
		t.Fatalf("plan create: %v\n%s", err, out)
	}
	out, err = runCLI(t, append([]string{"plan", "list", "--limit", "0"}, flags...)...)
	if err != nil || !strings.Contains(out, m[1]) {
		t.Fatalf("plan list: %v\n%s", err, out)
	}
	out, err = runCLI(t, append([]string{"apply", m[1], "--hash", m[2], "--poll", "time.Millisecond"}, flags...)...)
	if err == nil {
		t.Fatal("a bad --poll was accepted")
	}
	out, err = runCLI(t, append([]string{"apply", m[1], "--hash", m[2], "--poll", "1ms"}, flags...)...)
	if err != nil || !strings.Contains(out, "completed: 40 assets attempted, 40 completed, 0 failed") || !regexp.MustCompile(`Receipt rcp_\S+ verified`).MatchString(out) {
		t.Fatalf("apply: %v\n%s", err, out)
	}
	progress := regexp.MustCompile(`(?m)^ *\d+%  `).FindAllString(out, -1)
	if len(progress) == 0 || len(progress) > 11 || !strings.Contains(out, "100%  ") || strings.Contains(out, "\r") {
		t.Fatalf("%d progress lines (want 1 to 11, ending at 100%%, no redraws):\n%s", len(progress), out)
	}
	if left, _ := os.ReadDir(root); len(left) != 0 {
		t.Fatalf("%d files left", len(left))
	}
	// Problems read as the problem says.
	_, err = runCLI(t, append([]string{"plan", "show", "pln_01JZZZZZZZZZZZZZZZZZZZZZZZ"}, flags...)...)
	if err == nil || !strings.Contains(err.Error(), "(404 not_found)") {
		t.Fatalf("missing plan: %v", err)
	}
	_, err = runCLI(t, append([]string{"plan", "authorize", m[1], "--hash", strings.Repeat("0", 64)}, flags...)...)
	if err == nil || !strings.Contains(err.Error(), "409") {
		t.Fatalf("authorize an executed plan: %v", err)
	}
}

// Redirected progress writes a line only when a tenth is crossed, however often it is polled.
func TestLineProgress(t *testing.T) {
	var out bytes.Buffer
	p := newProgress(&out, &svcv1.Plan{Projection: &svcv1.Projection{BytesToPreserve: 1000}, Objects: make([]*svcv1.PlanObject, 4)})
	if _, ok := p.(*lineProgress); !ok {
		t.Fatalf("a buffer got %T", p)
	}
	for done := int64(0); done <= 1000; done++ {
		p.update(done, done/250)
		p.update(done, done/250) // a poll that saw no change
	}
	p.finish()
	lines := strings.Split(strings.TrimRight(out.String(), "\n"), "\n")
	if len(lines) != 11 || !strings.HasPrefix(lines[0], "  0%") || !strings.HasPrefix(lines[10], "100%") {
		t.Fatalf("%d lines:\n%s", len(lines), out.String())
	}
}

// svc openapi prints the served document without a running server, with --base-url as its
// server.
func TestOpenAPICommand(t *testing.T) {
	out, err := runCLI(t, "openapi", "--base-url", "https://api.example.org/")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Servers []struct{ URL string }
		Paths   map[string]map[string]struct {
			Summary   string
			Responses map[string]any
		}
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("not JSON: %v", err)
	}
	if len(doc.Servers) != 1 || doc.Servers[0].URL != "https://api.example.org" {
		t.Fatalf("servers %+v", doc.Servers)
	}
	op := doc.Paths["/v1/plans/{id}/authorize"]["post"]
	if op.Summary == "" || op.Responses["409"] == nil || op.Responses["403"] == nil || op.Responses["default"] != nil {
		t.Fatalf("authorize: %+v", op)
	}
}
