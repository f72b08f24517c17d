package main

import (
	"net"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestSIGTERMEndsWithinTheDrain: a request stuck mid-body (a client that sent 10 of 1,000
// bytes and went quiet) does not keep a SIGTERMed server alive past the drain deadline; and
// the health endpoints answer until then.
func TestSIGTERMEndsWithinTheDrain(t *testing.T) {
	bin := svcBinary(t)
	cmd, base, log := startWith(t, bin, t.TempDir(), nil, "--drain", "1s", "--debug-addr", "127.0.0.1:0")
	for _, path := range []string{"/healthz", "/readyz"} {
		res, err := http.Get(base + path)
		if err != nil || res.StatusCode != 200 {
			t.Fatalf("%s: %v %v", path, res, err)
		}
		res.Body.Close()
	}
	conn, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.Write([]byte("POST /v1/auth/sign-in HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{\"email\":"))
	time.Sleep(200 * time.Millisecond) // the handler is reading the body

	start := time.Now()
	cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
		t.Logf("stopped %v after SIGTERM", time.Since(start).Round(time.Millisecond))
		if took := time.Since(start); took > 1*time.Second+6*time.Second {
			t.Errorf("stopped %v after SIGTERM, want within the 1 s drain plus a few seconds", took)
		}
	case <-time.After(20 * time.Second):
		cmd.Process.Kill()
		t.Fatalf("still running 20 s after SIGTERM:\n%s", log)
	}
	<-log.done
	if !strings.Contains(log.String(), "msg=stopped") {
		t.Errorf("no clean stop in the log:\n%s", log)
	}
}
