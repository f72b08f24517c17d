package server

import (
	"io"
	"log/slog"
	"net"
	"net/http"
	"testing"
	"time"
)

// A client that reads none of a large response loses its connection once a write has waited
// writeStall; the handler's write fails instead of holding the connection for ever.
func TestStalledReaderIsCutOff(t *testing.T) {
	old := writeStall
	writeStall = 300 * time.Millisecond
	defer func() { writeStall = old }()
	s := &Server{cfg: Config{MaxBodyBytes: 1 << 10, BodyReadTimeout: time.Second}, log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	failed := make(chan time.Duration, 1)
	h := s.middleware(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		start, chunk := time.Now(), make([]byte, 64<<10)
		for range 4096 { // 256 MiB, far beyond the sockets' buffers
			if _, err := w.Write(chunk); err != nil {
				failed <- time.Since(start)
				return
			}
		}
		failed <- 0
	}))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: h}
	go hs.Serve(ln)
	defer hs.Close()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	io.WriteString(c, "GET /big HTTP/1.1\r\nHost: svc\r\n\r\n") // and never read
	select {
	case took := <-failed:
		if took == 0 {
			t.Fatal("256 MiB were written to a client that read nothing")
		}
		t.Logf("the stalled response failed after %s", took)
	case <-time.After(20 * time.Second):
		t.Fatal("the response to a stalled reader is still being written")
	}
}
