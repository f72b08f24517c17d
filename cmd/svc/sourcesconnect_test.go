package main

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"svc.dev/svc/internal/vendorfake/dropbox"
	"svc.dev/svc/internal/versitygw"
	"svc.dev/svc/server/devseed"
)

// devServer runs `svc serve --dev` with args and returns its base URL and the dev user's
// session cookie; the server stops with the test.
func devServer(t *testing.T, bin string, env []string, args ...string) (base, data, cookie string) {
	t.Helper()
	data = t.TempDir()
	cmd, base, log := startWith(t, bin, data, env, args...)
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		if err := cmd.Wait(); err != nil || t.Failed() {
			t.Logf("serve: %v\n%s", err, log)
		}
	})
	raw, err := os.ReadFile(filepath.Join(data, devseed.CredentialsFile))
	if err != nil {
		t.Fatal(err)
	}
	var creds map[string]string
	if err := json.Unmarshal(raw, &creds); err != nil {
		t.Fatal(err)
	}
	return base, data, creds["session_cookie"]
}

// liveSources lists the user's live sources through the API: id -> provider.
func liveSources(t *testing.T, base, cookie string) map[string]map[string]any {
	t.Helper()
	req, _ := http.NewRequest("GET", base+"/v1/sources?limit=200", nil)
	req.Header.Set("Cookie", "svc_session="+cookie)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var list struct {
		Data []map[string]any `json:"data"`
	}
	json.NewDecoder(res.Body).Decode(&list)
	out := map[string]map[string]any{}
	for _, s := range list.Data {
		out[s["id"].(string)] = s
	}
	return out
}

var connectedLine = regexp.MustCompile(`connected (src_[0-9A-HJKMNP-TV-Z]{26})  (\S+)  (\S+)  connected`)

// svc sources connect vendor_d_local PATH and object_store_compatible s3://... connect the
// signed-in user's folder and bucket through the real binary; a folder outside --local-root and
// a bucket with a wrong key are refused and leave nothing behind.
func TestSourcesConnectFolderAndBucket(t *testing.T) {
	bin := svcBinary(t)
	gw := versitygw.Start(t)
	bucket := gw.Bucket(t, map[string]string{"notes/a.txt": "alpha", "notes/b.txt": "beta"})
	root := t.TempDir()
	photos := filepath.Join(root, "photos")
	os.MkdirAll(photos, 0o700)
	os.WriteFile(filepath.Join(photos, "p.jpg"), []byte("jpeg"), 0o600)
	base, data, cookie := devServer(t, bin, nil, "--local-root", root)
	credFlag := "--credentials=" + filepath.Join(data, devseed.CredentialsFile)
	run := func(env []string, args ...string) (string, error) {
		cmd := exec.Command(bin, append(args, credFlag)...)
		cmd.Env = append(os.Environ(), env...)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	before := len(liveSources(t, base, cookie))

	out, err := run(nil, "sources", "connect", "vendor_d_local", t.TempDir())
	if err == nil || !strings.Contains(out, "--local-root") {
		t.Fatalf("a folder outside the roots: %v\n%s", err, out)
	}
	keys := []string{"AWS_ACCESS_KEY_ID=" + gw.AccessKey, "AWS_SECRET_ACCESS_KEY=wrong"}
	out, err = run(keys, "sources", "connect", "object_store_compatible", "s3://"+gw.Endpoint+"/"+bucket+"/notes?insecure=true")
	if err == nil || !strings.Contains(out, "access_key_id") {
		t.Fatalf("a wrong secret: %v\n%s", err, out)
	}
	if n := len(liveSources(t, base, cookie)); n != before {
		t.Fatalf("refusals recorded sources: %d -> %d", before, n)
	}

	// The folder, given relative to where the command runs.
	cmd := exec.Command(bin, "sources", "connect", "vendor_d_local", "photos", credFlag)
	cmd.Dir = root
	raw, err := cmd.CombinedOutput()
	m := connectedLine.FindStringSubmatch(string(raw))
	if err != nil || m == nil || m[2] != "vendor_d_local" || m[3] != "folder" || !strings.Contains(string(raw), photos) {
		t.Fatalf("connect folder: %v\n%s", err, raw)
	}
	folder := m[1]
	keys = []string{"AWS_ACCESS_KEY_ID=" + gw.AccessKey, "AWS_SECRET_ACCESS_KEY=" + gw.SecretKey}
	out, err = run(keys, "sources", "connect", "object_store_compatible", "s3://"+gw.Endpoint+"/"+bucket+"/notes", "--insecure", "--name", "Notes bucket")
	m = connectedLine.FindStringSubmatch(out)
	if err != nil || m == nil || m[2] != "object_store_compatible" || m[3] != "bucket" || !strings.Contains(out, "Notes bucket") {
		t.Fatalf("connect bucket: %v\n%s", err, out)
	}
	bucketSrc := m[1]
	got := liveSources(t, base, cookie)
	if len(got) != before+2 || got[folder]["provider"] != "vendor_d_local" || got[bucketSrc]["provider"] != "object_store_compatible" {
		t.Fatalf("live sources after: %v", got)
	}
	// The bucket's secret is sealed at rest, not in the store's file.
	if db, _ := os.ReadFile(filepath.Join(data, "svc.db")); bytes.Contains(db, []byte(gw.SecretKey)) {
		t.Fatal("the bucket's secret key is stored in the clear")
	}
}

// svc sources connect PROVIDER starts the connect flow for the signed-in user: it prints the
// page (and opens it with $BROWSER under --open), waits while the user, in a browser,
// continues to the provider (the dev server's local fake of each vendor, through its OAuth
// endpoints, with PKCE: Google's for vendor_a, Microsoft's identity platform's for vendor_b,
// Dropbox's for vendor_c), and prints the new source once the callback connected it; that
// source then reaches the fake's account with the token it got and the dev defaults of its
// connector (each vendor's own endpoint keys).
func TestSourcesConnectProviderAccount(t *testing.T) {
	bin := svcBinary(t)
	base, data, cookie := devServer(t, bin, nil)
	for _, tc := range []struct {
		provider, kind, label string
		account               string // the source ref: the account the token answer names, else "default"
	}{
		{"vendor_a_mail", "mail", "Vendor A mailbox (local fake)", "default"},
		{"vendor_a_files", "files", "Vendor A drive (local fake)", "default"},
		{"vendor_b_mail", "mail", "Vendor B mailbox (local fake)", "default"},
		{"vendor_b_files", "files", "Vendor B drive (local fake)", "default"},
		{"vendor_c_files", "files", "Vendor C files (local fake)", dropbox.AccountID},
	} {
		t.Run(tc.provider, func(t *testing.T) {
			id := connectThroughConsent(t, bin, base, data, cookie, tc.provider, tc.kind, tc.label)
			src := liveSources(t, base, cookie)[id]
			if src == nil || src["status"] != "connected" || src["external_account_id"] != tc.account {
				t.Fatalf("source: %v", src)
			}
			// The token works: a plan over the new source lists the fake account.
			req, _ := http.NewRequest("POST", base+"/v1/plans", strings.NewReader(`{"intent":"rescue","source_ids":["`+id+`"]}`))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Cookie", "svc_session="+cookie)
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			var plan map[string]any
			json.Unmarshal([]byte(bodyOf(res)), &plan)
			if objs, _ := plan["objects"].([]any); res.StatusCode != 201 || len(objs) == 0 {
				t.Fatalf("plan over the new source: %d %v", res.StatusCode, plan)
			}
		})
	}
}

// connectThroughConsent runs `svc sources connect PROVIDER --open` against a dev server and
// plays the browser the command opens, signed in as the dev user: the connect page, its
// "Continue to" the provider's consent (the fake consents at once), and the callback. It
// returns the id of the source the command printed, which must be of that provider and kind.
func connectThroughConsent(t *testing.T, bin, base, data, cookie, provider, kind, label string) string {
	t.Helper()
	dir := t.TempDir()
	opened := filepath.Join(dir, "opened")
	browser := filepath.Join(dir, "browser")
	os.WriteFile(browser, []byte("#!/bin/sh\nprintf '%s' \"$1\" > "+opened+".tmp && mv "+opened+".tmp "+opened+"\n"), 0o700)

	cli := exec.Command(bin, "sources", "connect", provider, "--open", "--poll", "100ms", "--timeout", "60s",
		"--credentials="+filepath.Join(data, devseed.CredentialsFile))
	cli.Env = append(os.Environ(), "BROWSER="+browser)
	var out lockedBuffer // read while the command writes
	cli.Stdout, cli.Stderr = &out, &out
	if err := cli.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cli.Wait() }()
	var page string
	for deadline := time.Now().Add(30 * time.Second); page == ""; time.Sleep(50 * time.Millisecond) {
		if b, err := os.ReadFile(opened); err == nil {
			page = string(b)
		}
		if time.Now().After(deadline) {
			cli.Process.Kill()
			t.Fatalf("no browser was opened:\n%s", out.String())
		}
	}
	if !strings.HasPrefix(page, base+"/connect/csn_") || !strings.Contains(out.String(), page) {
		t.Fatalf("opened %q; output:\n%s", page, out.String())
	}

	// The browser, signed in as the dev user: the page, then the provider, then back.
	jar, _ := cookiejar.New(nil)
	u, _ := url.Parse(base)
	jar.SetCookies(u, []*http.Cookie{{Name: "svc_session", Value: cookie, Path: "/"}})
	br := &http.Client{Jar: jar, Timeout: 20 * time.Second}
	res, err := br.Get(page)
	if err != nil {
		t.Fatal(err)
	}
	body := bodyOf(res)
	token := regexp.MustCompile(`name="csrf_token" value="([0-9a-f]{64})"`).FindStringSubmatch(body)
	if res.StatusCode != 200 || token == nil || !strings.Contains(body, "Continue to "+label) {
		t.Fatalf("page: %d\n%s", res.StatusCode, body)
	}
	res, err = br.PostForm(page+"/provider", url.Values{"csrf_token": {token[1]}})
	if err != nil {
		t.Fatal(err)
	}
	if body := bodyOf(res); res.StatusCode != 200 || !strings.Contains(body, "is connected") {
		t.Fatalf("after the provider: %d\n%s", res.StatusCode, body)
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("svc sources connect: %v\n%s", err, out.String())
		}
	case <-time.After(30 * time.Second):
		cli.Process.Kill()
		t.Fatalf("svc sources connect did not finish:\n%s", out.String())
	}
	m := connectedLine.FindStringSubmatch(out.String())
	if m == nil || m[2] != provider || m[3] != kind {
		t.Fatalf("output:\n%s", out.String())
	}
	return m[1]
}

func bodyOf(res *http.Response) string {
	defer res.Body.Close()
	var b bytes.Buffer
	b.ReadFrom(res.Body)
	return b.String()
}

// lockedBuffer is a bytes.Buffer a process may write to while the test reads it.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
