package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"svc.dev/svc/platform/archive"
)

// svc account export --wait -o FILE exports the dev account, downloads the archive and checks
// it against its index.
func TestAccountExportCommand(t *testing.T) {
	bin := svcBinary(t)
	data := t.TempDir()
	cmd, _, log := start(t, bin, data)
	defer func() {
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
	}()
	out := filepath.Join(t.TempDir(), "export.tar.gz")
	res, err := exec.Command(bin, "account", "export", "--wait", "-o", out, "--credentials", filepath.Join(data, "dev-credentials.json"),
		"--test-mode", "--poll", "50ms").CombinedOutput()
	if err != nil || !strings.Contains(string(res), "verified") {
		t.Fatalf("export: %v\n%s\n%s", err, res, log)
	}
	f, err := os.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	idx, err := archive.Verify(f, nil)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, e := range idx.Files {
		found = found || strings.HasPrefix(e.Path, "test/vault/content/")
	}
	if !found {
		t.Fatalf("no vault content in %v", idx.Files)
	}
	// svc jobs lists them (the application's view through its connection): the seed's export
	// and this one.
	creds := filepath.Join(data, "dev-credentials.json")
	list, err := exec.Command(bin, "jobs", "list", "--kind", "export", "--credentials", creds).CombinedOutput()
	if err != nil || strings.Count(string(list), "succeeded") != 2 || strings.Contains(string(list), "seed") {
		t.Fatalf("jobs list: %v\n%s", err, list)
	}
	id := strings.Fields(strings.Split(string(list), "\n")[1])[0]
	if out, err := exec.Command(bin, "jobs", "cancel", id, "--credentials", creds).CombinedOutput(); err == nil || !strings.Contains(string(out), "finished") {
		t.Fatalf("cancelling a finished job: %v\n%s", err, out)
	}
	if out, err := exec.Command(bin, "jobs", "get", id, "--credentials", creds).CombinedOutput(); err != nil || !strings.Contains(string(out), `"kind":"export"`) {
		t.Fatalf("jobs get: %v\n%s", err, out)
	}
	// A damaged archive is refused.
	data2, _ := os.ReadFile(out)
	data2[len(data2)/2] ^= 0xff
	bad := filepath.Join(t.TempDir(), "bad.tar.gz")
	os.WriteFile(bad, data2, 0o600)
	sum := sha256.Sum256(data2)
	if err := checkArchive(io.Discard, bad, hex.EncodeToString(sum[:])); err == nil {
		t.Fatal("a damaged archive passed the check")
	}
}

// A download cut off half way resumes with Range where it stopped.
func TestDownloadResumes(t *testing.T) {
	content := make([]byte, 1<<20)
	rand.Read(content)
	var calls atomic.Int32
	var ranged atomic.Value
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) == 1 {
			w.Header().Set("Content-Length", "1048576")
			w.Header().Set("ETag", `"a"`)
			w.WriteHeader(200)
			w.Write(content[:300_000])
			w.(http.Flusher).Flush()
			panic(http.ErrAbortHandler)
		}
		ranged.Store(r.Header.Get("Range"))
		w.Header().Set("ETag", `"a"`)
		http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(content))
	}))
	defer srv.Close()
	path := filepath.Join(t.TempDir(), "a")
	if err := download(context.Background(), io.Discard, srv.URL, path, int64(len(content))); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(path)
	if !bytes.Equal(got, content) || calls.Load() != 2 || ranged.Load() != "bytes=300000-" {
		t.Fatalf("resumed download: %d bytes, %d calls, range %v", len(got), calls.Load(), ranged.Load())
	}
}
