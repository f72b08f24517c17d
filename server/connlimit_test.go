package server

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

func serveLimited(t *testing.T, max int, h http.Handler) (string, *connLimit) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: time.Minute}
	l := LimitConnections(hs, ln, max).(*connLimit)
	go hs.Serve(l)
	t.Cleanup(func() { hs.Close() })
	return ln.Addr().String(), l
}

// A thousand idle connections, some after a request (keep-alive) and some that never sent a
// byte, hold at most the bound, and a new client is still served (issue 21, 3).
func TestThousandIdleConnectionsStillServeANewClient(t *testing.T) {
	addr, l := serveLimited(t, 100, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok") }))
	var idle []net.Conn
	defer func() {
		for _, c := range idle {
			c.Close()
		}
	}()
	for i := range 1000 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatalf("dial %d: %v", i, err)
		}
		idle = append(idle, c)
		if i%2 == 0 { // one request, then idle on keep-alive
			io.WriteString(c, "GET /x HTTP/1.1\r\nHost: svc\r\n\r\n")
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err == nil {
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		}
	}
	time.Sleep(50 * time.Millisecond)
	if n := l.open(); n > 100 {
		t.Fatalf("the server holds %d connections, over its bound of 100", n)
	}
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := client.Get("http://" + addr + "/new")
	if err != nil {
		t.Fatalf("a new client is not served: %v", err)
	}
	defer resp.Body.Close()
	if body, _ := io.ReadAll(resp.Body); resp.StatusCode != 200 || string(body) != "ok" {
		t.Fatalf("new client: %d %s", resp.StatusCode, body)
	}
}

// When every connection is busy with a request, a new one is refused with a 503 problem
// (never hangs), and served again once a request ends.
func TestConnectionsAllBusyRefuseWithAProblem(t *testing.T) {
	release := make(chan struct{})
	var started sync.WaitGroup
	started.Add(3)
	addr, _ := serveLimited(t, 3, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/block" {
			started.Done()
			<-release
		}
		io.WriteString(w, "ok")
	}))
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	var done sync.WaitGroup
	for range 3 {
		done.Add(1)
		go func() {
			defer done.Done()
			if resp, err := client.Get("http://" + addr + "/block"); err == nil {
				resp.Body.Close()
			}
		}()
	}
	started.Wait()
	resp, err := client.Get("http://" + addr + "/new")
	if err != nil {
		t.Fatalf("refusal: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 503 || resp.Header.Get("Retry-After") == "" || !strings.Contains(string(body), `"code":"unavailable"`) {
		t.Fatalf("at the bound with every connection busy: %d %s", resp.StatusCode, body)
	}
	close(release)
	done.Wait()
	// The server sees the three connections close a moment after their clients do (slower
	// under -race on a loaded machine): a new client is served once it has.
	deadline := time.Now().Add(5 * time.Second)
	for {
		resp, err := client.Get("http://" + addr + "/new")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the requests ended: %v %v", resp, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
