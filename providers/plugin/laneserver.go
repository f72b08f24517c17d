package plugin

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"sync"
	"time"

	"svc.dev/svc/providers"
)

// laneServer accepts the host's lanes in a plugin process.
type laneServer struct {
	mu    sync.Mutex
	ln    *net.UnixListener
	path  string
	token []byte
	lanes map[uint64]*pluginLane
}

func (s *laneServer) open(path string) ([]byte, error) {
	if !lanesSupported {
		return nil, errUnsupportedLanes
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ln != nil {
		if path != s.path {
			return nil, fmt.Errorf("content channel already listens on %s: %w", s.path, providers.ErrInvalidArgument)
		}
		return s.token, nil
	}
	if !filepath.IsAbs(path) {
		return nil, fmt.Errorf("content channel path %q is not absolute: %w", path, providers.ErrInvalidArgument)
	}
	token := make([]byte, tokenSize)
	if _, err := rand.Read(token); err != nil {
		return nil, err
	}
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		return nil, fmt.Errorf("content channel: %w", err)
	}
	s.ln, s.path, s.token = ln, path, token
	s.lanes = make(map[uint64]*pluginLane)
	go s.accept(ln)
	return token, nil
}

var errUnsupportedLanes = errors.New("content lanes are not supported on this platform")

func (s *laneServer) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ln != nil {
		s.ln.Close()
	}
}

func (s *laneServer) accept(ln *net.UnixListener) {
	for {
		c, err := ln.AcceptUnix()
		if err != nil {
			return
		}
		go s.hello(c)
	}
}

// hello checks a new lane's hello, maps its memory and registers it.
func (s *laneServer) hello(c *net.UnixConn) {
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	var hello [helloSize]byte
	n, fds, err := readHello(c, hello[:])
	if err == nil && n < helloSize {
		_, err = io.ReadFull(c, hello[n:])
	}
	l, err := s.register(hello, fds, err, c)
	for _, fd := range fds {
		closeFD(fd) // the mapping keeps the memory
	}
	if err != nil {
		c.Close()
		return
	}
	_ = c.SetDeadline(time.Time{})
	if _, err := c.Write([]byte{1}); err != nil {
		l.kill()
		return
	}
	l.readFrees()
}

func (s *laneServer) register(hello [helloSize]byte, fds []int, err error, c *net.UnixConn) (*pluginLane, error) {
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	token := s.token
	s.mu.Unlock()
	id := binary.LittleEndian.Uint64(hello[8:])
	slots := binary.LittleEndian.Uint32(hello[16:])
	size := binary.LittleEndian.Uint32(hello[20:])
	switch {
	case !bytes.Equal(hello[:4], laneMagic[:]) || binary.LittleEndian.Uint32(hello[4:]) != laneVersion:
		return nil, errors.New("bad hello")
	case subtle.ConstantTimeCompare(hello[24:24+tokenSize], token) != 1:
		return nil, errors.New("bad token")
	case len(fds) != 1:
		return nil, errors.New("want one memory descriptor")
	case id == 0 || slots == 0 || slots > 64 || size < 4<<10 || size > 64<<20 || uint64(slots)*uint64(size) > 256<<20:
		return nil, errors.New("bad lane geometry")
	}
	mem, err := mapSharedMemory(fds[0], int(slots)*int(size))
	if err != nil {
		return nil, err
	}
	l := &pluginLane{s: s, id: id, conn: c, mem: mem, slots: int(slots), size: int(size),
		freeSlots: make(chan uint32, slots), dead: make(chan struct{})}
	for i := range slots {
		l.freeSlots <- i
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, dup := s.lanes[id]; dup {
		unmapSharedMemory(mem)
		return nil, errors.New("duplicate lane id")
	}
	s.lanes[id] = l
	return l, nil
}

// take reserves lane id for a fetch.
func (s *laneServer) take(id uint64) (*pluginLane, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	l, ok := s.lanes[id]
	if !ok || l.busy {
		return nil, fmt.Errorf("content lane %d is unknown or busy: %w", id, errLaneUnavailable)
	}
	l.busy = true
	return l, nil
}

// put ends a fetch's use of a lane; a lane that died meanwhile is unmapped
// now that nothing writes to its memory.
func (s *laneServer) put(l *pluginLane) {
	s.mu.Lock()
	defer s.mu.Unlock()
	l.busy = false
	if l.gone && l.mem != nil {
		unmapSharedMemory(l.mem)
		l.mem = nil
	}
}

// pluginLane is the plugin's end of a lane.
type pluginLane struct {
	s         *laneServer
	id        uint64
	conn      *net.UnixConn
	mem       []byte
	slots     int
	size      int
	freeSlots chan uint32
	dead      chan struct{}
	killOnce  sync.Once
	out       [frameSize]byte

	busy, gone bool // guarded by s.mu
}

// readFrees reads the host's frames until the lane closes: only frees are
// valid.
func (l *pluginLane) readFrees() {
	var in [frameSize]byte
	for {
		if _, err := io.ReadFull(l.conn, in[:]); err != nil {
			break
		}
		f := getFrame(&in)
		if f.kind != frameFree || f.slot >= uint32(l.slots) {
			break
		}
		select {
		case l.freeSlots <- f.slot:
		default: // more frees than slots
		}
	}
	l.kill()
}

// kill closes the lane; its memory is unmapped once no fetch uses it.
func (l *pluginLane) kill() {
	l.killOnce.Do(func() {
		l.conn.Close()
		close(l.dead)
		l.s.mu.Lock()
		defer l.s.mu.Unlock()
		delete(l.s.lanes, l.id)
		l.gone = true
		if !l.busy && l.mem != nil {
			unmapSharedMemory(l.mem)
			l.mem = nil
		}
	})
}

var errLaneClosed = errors.New("content lane closed")

func (l *pluginLane) frame(f frame) error {
	putFrame(&l.out, f)
	_, err := l.conn.Write(l.out[:])
	return err
}

// capacity is what the lane holds at once.
func (l *pluginLane) capacity() int { return l.slots * l.size }

// send streams body into the lane as transfer. The returned error is for
// the call's status.
func (l *pluginLane) send(ctx context.Context, transfer uint32, body io.Reader) error {
	// A cancelled fetch (the host gave up, or its deadline passed) must not
	// leave this goroutine blocked in a write.
	stop := context.AfterFunc(ctx, func() { _ = l.conn.SetWriteDeadline(time.Unix(1, 0)) })
	defer func() {
		if stop() {
			return
		}
		l.kill() // the deadline was poisoned: the lane is of no further use
	}()
	broken := func(err error) error {
		l.kill()
		if ctx.Err() != nil {
			return statusFromError(ctx.Err())
		}
		return statusFromError(fmt.Errorf("%w: %v", errLaneClosed, err))
	}
	for {
		var slot uint32
		select {
		case slot = <-l.freeSlots:
		case <-l.dead:
			return broken(errLaneClosed)
		case <-ctx.Done():
			return broken(ctx.Err())
		}
		off := int(slot) * l.size
		n, rerr := io.ReadFull(body, l.mem[off:off+l.size])
		if n > 0 {
			if err := l.frame(frame{kind: frameData, slot: slot, n: uint32(n), transfer: transfer}); err != nil {
				return broken(err)
			}
		} else {
			l.freeSlots <- slot
		}
		switch {
		case rerr == io.EOF || rerr == io.ErrUnexpectedEOF:
			if err := l.frame(frame{kind: frameEnd, transfer: transfer}); err != nil {
				return broken(err)
			}
			return nil
		case rerr != nil:
			if err := l.frame(frame{kind: frameAbort, transfer: transfer}); err != nil {
				return broken(err)
			}
			return statusFromError(rerr)
		}
	}
}
