package server

import (
	"bytes"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// DefaultMaxConns is how many connections a server holds open at once by default.
const DefaultMaxConns = 4096

// connLimit bounds the connections an http.Server holds: at the bound, a new connection
// closes the one idle the longest (keep-alive, or opened and silent) to make room, and is
// refused with a 503 problem only when every connection is busy with a request. An anonymous
// client holding a thousand idle connections thus costs the server at most the bound, and
// never keeps another client out.
type connLimit struct {
	net.Listener
	max int

	mu    sync.Mutex
	conns map[net.Conn]*connInfo
	// refusing bounds the refusals in progress; past it a connection is closed unanswered.
	refusing chan struct{}
}

type connInfo struct {
	busy  bool
	since time.Time // of the current state
}

// LimitConnections makes hs hold at most max connections accepted from ln (0: DefaultMaxConns)
// and returns the listener to serve on; it sets hs.ConnState. Idle connections are closed
// after hs.IdleTimeout as usual; at the bound, the longest idle goes first.
func LimitConnections(hs *http.Server, ln net.Listener, max int) net.Listener {
	if max <= 0 {
		max = DefaultMaxConns
	}
	l := &connLimit{Listener: ln, max: max, conns: map[net.Conn]*connInfo{}, refusing: make(chan struct{}, maxRefusing)}
	prev := hs.ConnState
	hs.ConnState = func(c net.Conn, st http.ConnState) {
		l.state(c, st)
		if prev != nil {
			prev(c, st)
		}
	}
	return l
}

// overloaded is what a connection refused at the bound reads before it is closed.
var overloaded = func() string {
	body := `{"type":"https://svc.dev/problems/unavailable","title":"Unavailable","status":503,` +
		`"detail":"The server holds as many connections as it may; retry in a few seconds.","code":"unavailable"}`
	return "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/problem+json\r\nRetry-After: 5\r\n" +
		"Connection: close\r\nContent-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n" + body
}()

// Accept implements net.Listener.
func (l *connLimit) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if l.admit(c) {
			return c, nil
		}
		select {
		case l.refusing <- struct{}{}:
			go func() {
				defer func() { <-l.refusing }()
				refuse(c)
			}()
		default:
			c.Close()
		}
	}
}

// maxRefusing is how many refused connections are answered at once.
const maxRefusing = 64

// refuse answers a connection refused at the bound with the 503 problem and closes it. It
// reads the request's head first (for a second at most), so that the client takes the answer
// for the response to its request, not for bytes arriving on a connection it has not used yet.
func refuse(c net.Conn) {
	defer c.Close()
	c.SetDeadline(time.Now().Add(time.Second))
	buf := make([]byte, 4096)
	var head []byte
	for !bytes.Contains(head, []byte("\r\n\r\n")) && len(head) < 16<<10 {
		n, err := c.Read(buf)
		head = append(head, buf[:n]...)
		if err != nil {
			break
		}
	}
	c.Write([]byte(overloaded))
}

// admit records c when there is room, making room by closing the longest idle connection.
func (l *connLimit) admit(c net.Conn) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.conns) >= l.max {
		var oldest net.Conn
		var at time.Time
		for oc, info := range l.conns {
			if !info.busy && (oldest == nil || info.since.Before(at)) {
				oldest, at = oc, info.since
			}
		}
		if oldest == nil {
			return false
		}
		delete(l.conns, oldest)
		oldest.Close()
	}
	l.conns[c] = &connInfo{since: time.Now()}
	return true
}

func (l *connLimit) state(c net.Conn, st http.ConnState) {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch st {
	case http.StateClosed, http.StateHijacked:
		delete(l.conns, c)
	case http.StateActive, http.StateIdle, http.StateNew:
		if info, ok := l.conns[c]; ok {
			info.busy, info.since = st == http.StateActive, time.Now()
		}
	}
}

// open is how many connections are held (for tests).
func (l *connLimit) open() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.conns)
}
