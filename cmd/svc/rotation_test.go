package main

import (
	"net/url"
	"strings"
	"syscall"
	"testing"
	"time"

	"svc.dev/svc/internal/vendorfake/graph"
)

// The real binary keeps a rotated refresh token (issue 25, 4): its vendor_b_mail connector runs
// as a plugin against a Graph fake (in this test's process) that revokes each refresh token as
// it rotates it. A plan refreshes the expired access token; after a restart, with the access
// token expired again, the source still plans, which it can only do with the rotated refresh
// token the binary stored, sealed, in its data directory.
func TestRotatedRefreshTokenSurvivesARestart(t *testing.T) {
	g := graph.Seeded(graph.Seed{Seed: 9, Messages: 10})
	defer g.Close()
	g.RotateRefreshTokens()
	q := url.Values{}
	for k, v := range g.ProviderConfig() {
		q.Set(k, v)
	}
	kept := make(chan struct{}, 16)
	r := &crashRig{t: t, bin: svcBinary(t), data: t.TempDir(), root: t.TempDir(), home: t.TempDir(),
		devSource: "vendor_b_mail:rotating@example.com?" + q.Encode(),
		onLine: func(line string) {
			if strings.Contains(line, "kept a source's renewed credentials") {
				select { // never blocks the server's stderr
				case kept <- struct{}{}:
				default:
				}
			}
		}}
	r.start()
	defer func() { r.cmd.Process.Signal(syscall.SIGTERM); r.exited() }()
	_, srcs, _ := r.call("GET", "/v1/sources?provider=vendor_b_mail", "")
	src := ""
	for _, s := range srcs["data"].([]any) {
		if s := s.(map[string]any); s["external_account_id"] == "rotating@example.com" {
			src = s["id"].(string)
		}
	}
	if src == "" {
		t.Fatalf("no vendor_b_mail source at the test's fake: %v", srcs)
	}
	plan := func() {
		t.Helper()
		g.ExpireAccess()
		if st, _, raw := r.call("POST", "/v1/plans", `{"intent":"svc","source_ids":["`+src+`"]}`); st != 201 {
			t.Fatalf("plan: %d %s", st, raw)
		}
		if _, s, _ := r.call("GET", "/v1/sources/"+src, ""); s["status"] != "connected" {
			t.Fatalf("source: %v", s)
		}
	}
	plan()
	select { // the plugin's report reaches the host, which stores it
	case <-kept:
	case <-time.After(30 * time.Second):
		t.Fatal("the rotated token was not kept")
	}
	r.cmd.Process.Signal(syscall.SIGTERM)
	r.exited()
	r.start()
	plan()
}
