package plugin

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"sync"
	"time"

	"svc.dev/svc/providers"
	"svc.dev/svc/providers/internal/pluginpb"
)

// Content lanes carry Fetch content next to gRPC, because gRPC's framing
// (HTTP/2 frames, TLS, a copy into and out of each message) held streaming
// through the boundary to a fraction of in-process speed.
//
// A lane is one unix connection, to a socket the plugin listens on in a
// directory the host creates with mode 0700, plus a shared memory region of
// laneSlots slots of laneSlotSize bytes that the host creates (a memfd
// sealed against resizing, mapped read-only on the host) and passes with
// the lane's hello. The hello also carries a 32-byte secret the plugin
// returned over the authenticated gRPC connection.
//
// For a Fetch that names a lane, the plugin sends the object as usual, then
// reads the content straight into free slots and writes a 16-byte frame per
// filled slot; the host copies each slot out to its reader (never handing
// out the shared bytes) and writes a frame giving the slot back. An end
// frame closes the content and the Fetch stream's status confirms it; an
// abort frame means the status carries the plugin's error. A List that
// names a lane may have its encoded page sent the same way (when it fits in
// the lane at once, so the plugin never waits on the host), before the
// response says how many bytes to expect; the host then reads and checks
// the page exactly as one received in the response, which spares both
// sides gRPC's copies, framing and encryption of a large message.
//
// Every frame is checked (kind, slot, length, and the transfer number the
// request gave, so that nothing left over from an earlier use passes), every
// wait for one is bounded by the call timeout, and the bytes are counted
// against what was declared, exactly as chunks were. A lane serves one call
// at a time and is reused after a clean one; after anything else it is
// closed. Plugins that do not offer lanes (older SDKs, other platforms) get
// their content in messages as before.

const (
	laneSlots    = 4       // slots per lane: the plugin reads ahead this far
	laneSlotSize = 1 << 20 // bytes per slot
	maxLanes     = 8       // lanes per plugin process; more fetches at once use messages
	laneVersion  = 1
	helloSize    = 56 // magic, version, lane id, slots, slot size, token
	frameSize    = 16 // kind, slot, length, transfer
	tokenSize    = 32
)

// laneCapacity is what a lane holds at once: a List page up to this size
// may go on a lane.
const laneCapacity = laneSlots * laneSlotSize

var laneMagic = [4]byte{'S', 'V', 'C', 'L'}

// Frame kinds.
const (
	frameData  = 1 // plugin: a slot holds length bytes of content
	frameEnd   = 2 // plugin: the content is complete
	frameAbort = 3 // plugin: the content failed; the stream's status says why
	frameFree  = 4 // host: the slot may be filled again
)

// frame is one lane frame.
type frame struct{ kind, slot, n, transfer uint32 }

func putFrame(b *[frameSize]byte, f frame) {
	binary.LittleEndian.PutUint32(b[0:], f.kind)
	binary.LittleEndian.PutUint32(b[4:], f.slot)
	binary.LittleEndian.PutUint32(b[8:], f.n)
	binary.LittleEndian.PutUint32(b[12:], f.transfer)
}

func getFrame(b *[frameSize]byte) frame {
	return frame{binary.LittleEndian.Uint32(b[0:]), binary.LittleEndian.Uint32(b[4:]), binary.LittleEndian.Uint32(b[8:]), binary.LittleEndian.Uint32(b[12:])}
}

// ---- host side ----

// lanePool is the host's set of content lanes to one plugin process.
type lanePool struct {
	mu      sync.Mutex
	tried   bool
	ok      bool
	dir     string // created by the host, removed when the process goes
	path    string
	token   []byte
	idle    []*hostLane
	open    int
	nextID  uint64
	closed  bool
	timeout time.Duration
	opening chan struct{} // closed when the OpenContentChannel in flight is answered
}

// hostLane is the host's end of a lane.
type hostLane struct {
	id       uint64
	transfer uint32 // of the current use
	conn     *net.UnixConn
	mem      []byte
	in       [frameSize]byte
	out      [frameSize]byte
}

// begin starts a use of the lane and returns its reference for a request.
func (l *hostLane) begin() *pluginpb.ContentLane {
	l.transfer++
	return &pluginpb.ContentLane{Id: l.id, Transfer: l.transfer}
}

// acquire returns an idle lane, opening the channel or a new lane if
// needed, or nil when content should travel in messages instead. The call
// that opens the channel and the dial of a new lane run without lp.mu, so
// that closing the pool (a kill) never waits on the plugin.
func (lp *lanePool) acquire(ctx context.Context, rpc pluginpb.ProviderServiceClient) *hostLane {
	if !lanesSupported {
		return nil
	}
	lp.mu.Lock()
	for !lp.tried && !lp.closed {
		if ch := lp.opening; ch != nil {
			lp.mu.Unlock()
			select {
			case <-ch:
			case <-ctx.Done():
				return nil
			}
			lp.mu.Lock()
			continue
		}
		ch := make(chan struct{})
		lp.opening = ch
		lp.mu.Unlock()
		dir, path, token, err := openChannel(ctx, rpc, lp.timeout)
		lp.mu.Lock()
		lp.opening = nil
		close(ch)
		if lp.closed {
			if dir != "" {
				os.RemoveAll(dir)
			}
			break
		}
		// A fetch cancelled meanwhile says nothing about the plugin: the
		// next one asks again.
		lp.tried = err == nil || ctx.Err() == nil
		lp.ok = err == nil
		lp.dir, lp.path, lp.token = dir, path, token
	}
	if lp.closed || !lp.ok {
		lp.mu.Unlock()
		return nil
	}
	if n := len(lp.idle); n > 0 {
		l := lp.idle[n-1]
		lp.idle = lp.idle[:n-1]
		lp.mu.Unlock()
		return l
	}
	if lp.open >= maxLanes {
		lp.mu.Unlock()
		return nil
	}
	lp.nextID++
	lp.open++
	path, token, id := lp.path, lp.token, lp.nextID
	lp.mu.Unlock()
	l, err := dialLane(path, token, id, lp.timeout)
	if err != nil {
		lp.mu.Lock()
		lp.open--
		lp.mu.Unlock()
		return nil
	}
	return l
}

// openChannel asks the plugin to listen for lanes in a new directory, and
// returns the directory, the socket's path and the lanes' secret. Any
// failure (a plugin without lanes answers Unimplemented) leaves content in
// messages.
func openChannel(ctx context.Context, rpc pluginpb.ProviderServiceClient, timeout time.Duration) (dir, path string, token []byte, err error) {
	dir, err = os.MkdirTemp("", "svc-lanes-") // mode 0700
	if err != nil {
		return "", "", nil, err
	}
	path = filepath.Join(dir, "lanes.sock")
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	resp, err := rpc.OpenContentChannel(cctx, &pluginpb.OpenContentChannelRequest{SocketPath: path})
	if err == nil {
		err = validate(resp)
	}
	if err != nil {
		os.RemoveAll(dir)
		return "", "", nil, err
	}
	return dir, path, resp.GetToken(), nil
}

// release gives a lane back after a fetch: to the idle set if the fetch
// ended cleanly, else it is closed.
func (lp *lanePool) release(l *hostLane, reusable bool) {
	lp.mu.Lock()
	defer lp.mu.Unlock()
	if reusable && !lp.closed {
		lp.idle = append(lp.idle, l)
		return
	}
	lp.open--
	l.close()
}

// close closes the idle lanes and removes the socket's directory; lanes in
// use are closed when released.
func (lp *lanePool) close() {
	lp.mu.Lock()
	defer lp.mu.Unlock()
	lp.closed = true
	for _, l := range lp.idle {
		l.close()
	}
	lp.idle = nil
	if lp.dir != "" {
		os.RemoveAll(lp.dir)
	}
}

func dialLane(path string, token []byte, id uint64, timeout time.Duration) (*hostLane, error) {
	fd, mem, err := newSharedMemory(laneSlots * laneSlotSize)
	if err != nil {
		return nil, err
	}
	defer closeFD(fd) // the mapping and the plugin's copy keep the memory
	fail := func(err error) (*hostLane, error) {
		unmapSharedMemory(mem)
		return nil, fmt.Errorf("content lane: %w", err)
	}
	c, err := net.DialTimeout("unix", path, timeout)
	if err != nil {
		return fail(err)
	}
	conn := c.(*net.UnixConn)
	_ = conn.SetDeadline(time.Now().Add(timeout))
	var hello [helloSize]byte
	copy(hello[0:], laneMagic[:])
	binary.LittleEndian.PutUint32(hello[4:], laneVersion)
	binary.LittleEndian.PutUint64(hello[8:], id)
	binary.LittleEndian.PutUint32(hello[16:], laneSlots)
	binary.LittleEndian.PutUint32(hello[20:], laneSlotSize)
	copy(hello[24:], token)
	var ack [1]byte
	if err := writeHello(conn, hello[:], fd); err != nil {
		conn.Close()
		return fail(err)
	}
	if _, err := io.ReadFull(conn, ack[:]); err != nil || ack[0] != 1 {
		conn.Close()
		return fail(fmt.Errorf("hello refused (%v)", err))
	}
	_ = conn.SetDeadline(time.Time{})
	return &hostLane{id: id, conn: conn, mem: mem}, nil
}

func (l *hostLane) close() {
	l.conn.Close()
	unmapSharedMemory(l.mem)
}

// next reads the next frame, waiting until deadline at most. A fetch's
// cancellation sets a past deadline (an AfterFunc on ctx); ctx is checked
// after this read's deadline is set, so neither order of the two is lost.
func (l *hostLane) next(ctx context.Context, deadline time.Time) (frame, error) {
	_ = l.conn.SetReadDeadline(deadline)
	if err := ctx.Err(); err != nil {
		return frame{}, err
	}
	if _, err := io.ReadFull(l.conn, l.in[:]); err != nil {
		return frame{}, err
	}
	f := getFrame(&l.in)
	if f.transfer != l.transfer {
		return f, fmt.Errorf("%w: content lane frame of transfer %d in transfer %d", providers.ErrInvalidResponse, f.transfer, l.transfer)
	}
	return f, nil
}

// slot returns the bytes a data frame names, or nil if it is out of bounds.
func (l *hostLane) slot(f frame) []byte {
	if f.slot >= laneSlots || f.n == 0 || f.n > laneSlotSize {
		return nil
	}
	off := int(f.slot) * laneSlotSize
	return l.mem[off : off+int(f.n)]
}

func (l *hostLane) free(slot uint32, deadline time.Time) error {
	putFrame(&l.out, frame{kind: frameFree, slot: slot, transfer: l.transfer})
	_ = l.conn.SetWriteDeadline(deadline)
	_, err := l.conn.Write(l.out[:])
	return err
}

// receive reads a transfer of exactly n bytes (a List page) into dst, which
// it grows as needed, giving each slot back as it goes. Errors that are the
// plugin's fault wrap ErrInvalidResponse; others are I/O errors of the lane.
func (l *hostLane) receive(ctx context.Context, deadline time.Time, n uint64, dst []byte) ([]byte, error) {
	if n > laneCapacity {
		return dst, fmt.Errorf("%w: %d bytes announced on a lane of %d", providers.ErrInvalidResponse, n, laneCapacity)
	}
	dst = dst[:0]
	for {
		f, err := l.next(ctx, deadline)
		if err != nil {
			return dst, err
		}
		switch f.kind {
		case frameData:
			p := l.slot(f)
			if p == nil || uint64(len(dst))+uint64(len(p)) > n {
				return dst, fmt.Errorf("%w: content lane frame names slot %d, %d bytes, of %d announced", providers.ErrInvalidResponse, f.slot, f.n, n)
			}
			dst = append(dst, p...)
			if err := l.free(f.slot, deadline); err != nil {
				return dst, err
			}
		case frameEnd:
			if uint64(len(dst)) != n {
				return dst, fmt.Errorf("%w: %d bytes on the lane, %d announced", providers.ErrInvalidResponse, len(dst), n)
			}
			return dst, nil
		default:
			return dst, fmt.Errorf("%w: content lane frame of kind %d", providers.ErrInvalidResponse, f.kind)
		}
	}
}

// ---- plugin side ----
