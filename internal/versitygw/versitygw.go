// Package versitygw starts a real S3-compatible server (versitygw) on
// loopback for tests and benchmarks of anything that speaks S3 (the
// vault's S3 backend). The binary comes from PATH or $(go env GOPATH)/bin,
// where scripts/install-versitygw.sh installs it. (A copy of
// providers/internal/versitygw, which the providers keep to themselves.)
package versitygw

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// Server is a running versitygw.
type Server struct {
	Endpoint  string // host:port
	AccessKey string
	SecretKey string
	Client    *minio.Client
}

// Binary returns the versitygw binary's path, or "" when it is not
// installed.
func Binary() string {
	if p, err := exec.LookPath("versitygw"); err == nil {
		return p
	}
	gopath := os.Getenv("GOPATH")
	if gopath == "" {
		out, err := exec.Command("go", "env", "GOPATH").Output()
		if err == nil {
			gopath = strings.TrimSpace(string(out))
		}
	}
	for _, dir := range filepath.SplitList(gopath) {
		p := filepath.Join(dir, "bin", "versitygw")
		if fi, err := os.Stat(p); err == nil && fi.Mode().Perm()&0o111 != 0 {
			return p
		}
	}
	return ""
}

// Start starts versitygw on 127.0.0.1 over a temporary directory and stops
// it when the test ends. It skips the test when the binary is absent.
func Start(t testing.TB) *Server {
	t.Helper()
	bin := Binary()
	if bin == "" {
		t.Skip("versitygw not installed (not in PATH or $(go env GOPATH)/bin): run scripts/install-versitygw.sh to run the S3 tests against a real S3-compatible server")
	}
	dir := t.TempDir()
	s := &Server{AccessKey: "svctestaccess", SecretKey: "svctestsecret0123456789"}
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ {
		port, err := freePort()
		if err != nil {
			t.Fatal(err)
		}
		s.Endpoint = fmt.Sprintf("127.0.0.1:%d", port)
		cmd := exec.Command(bin, "--port", s.Endpoint, "posix", dir)
		cmd.Env = append(os.Environ(), "ROOT_ACCESS_KEY="+s.AccessKey, "ROOT_SECRET_KEY="+s.SecretKey)
		logf, err := os.Create(filepath.Join(t.TempDir(), "versitygw.log"))
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stdout, cmd.Stderr = logf, logf
		if err := cmd.Start(); err != nil {
			t.Fatalf("start versitygw: %v", err)
		}
		var exited atomic.Bool
		go func() { _ = cmd.Wait(); exited.Store(true) }()
		t.Cleanup(func() { _ = cmd.Process.Kill() })
		if lastErr = waitListening(s.Endpoint, &exited); lastErr == nil {
			break
		}
		_ = cmd.Process.Kill()
	}
	if lastErr != nil {
		t.Fatalf("versitygw did not start: %v", lastErr)
	}
	c, err := minio.New(s.Endpoint, &minio.Options{Creds: credentials.NewStaticV4(s.AccessKey, s.SecretKey, ""), Region: "us-east-1"})
	if err != nil {
		t.Fatal(err)
	}
	s.Client = c
	return s
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func waitListening(addr string, exited *atomic.Bool) error {
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		if exited.Load() {
			return fmt.Errorf("versitygw exited")
		}
		c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
		if err == nil {
			c.Close()
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("not listening on %s", addr)
}

// Config returns the object_store_compatible provider config for the
// server.
func (s *Server) Config() map[string]string {
	return map[string]string{"endpoint": s.Endpoint, "access_key": s.AccessKey, "secret_key": s.SecretKey, "secure": "false"}
}

var bucketSeq atomic.Int64

// Bucket creates a fresh bucket holding the given objects and returns its
// name.
func (s *Server) Bucket(t testing.TB, objects map[string]string) string {
	t.Helper()
	ctx := context.Background()
	name := fmt.Sprintf("svc-test-%d-%d", os.Getpid(), bucketSeq.Add(1))
	if err := s.Client.MakeBucket(ctx, name, minio.MakeBucketOptions{}); err != nil {
		t.Fatalf("make bucket: %v", err)
	}
	for k, v := range objects {
		if _, err := s.Client.PutObject(ctx, name, k, strings.NewReader(v), int64(len(v)), minio.PutObjectOptions{}); err != nil {
			t.Fatalf("put %s: %v", k, err)
		}
	}
	return name
}
