//go:build linux

package plugin

import (
	"fmt"
	"net"
	"syscall"

	"golang.org/x/sys/unix"
)

// lanesSupported says whether content lanes work on this platform: they
// need memfd_create and file seals.
const lanesSupported = true

// newSharedMemory creates the shared memory of a content lane: a memfd of
// size bytes, sealed so that neither side can resize it (a plugin that
// shrank it would make the host fault on its mapping), and mapped
// read-only on the host, which never writes to it.
func newSharedMemory(size int) (fd int, mem []byte, err error) {
	fd, err = unix.MemfdCreate("svc-content-lane", unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	if err != nil {
		return -1, nil, fmt.Errorf("memfd_create: %w", err)
	}
	fail := func(op string, err error) (int, []byte, error) {
		unix.Close(fd)
		return -1, nil, fmt.Errorf("%s: %w", op, err)
	}
	if err := unix.Ftruncate(fd, int64(size)); err != nil {
		return fail("ftruncate", err)
	}
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_ADD_SEALS, unix.F_SEAL_SHRINK|unix.F_SEAL_GROW|unix.F_SEAL_SEAL); err != nil {
		return fail("seal", err)
	}
	mem, err = unix.Mmap(fd, 0, size, unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return fail("mmap", err)
	}
	return fd, mem, nil
}

// mapSharedMemory maps a lane's memory received from the host, read-write.
func mapSharedMemory(fd, size int) ([]byte, error) {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, fmt.Errorf("fstat: %w", err)
	}
	if st.Size < int64(size) {
		return nil, fmt.Errorf("shared memory of %d bytes, want %d", st.Size, size)
	}
	mem, err := unix.Mmap(fd, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("mmap: %w", err)
	}
	return mem, nil
}

func unmapSharedMemory(mem []byte) { _ = unix.Munmap(mem) }

func closeFD(fd int) { _ = unix.Close(fd) }

// writeHello sends a lane's hello with the descriptor of its memory.
func writeHello(c *net.UnixConn, hello []byte, fd int) error {
	_, _, err := c.WriteMsgUnix(hello, syscall.UnixRights(fd), nil)
	return err
}

// readHello reads (the start of) a lane's hello and the descriptors sent
// with it, which the caller must close. Room is left for a few, so that
// extra ones are received, and closed, rather than left to the kernel.
func readHello(c *net.UnixConn, hello []byte) (int, []int, error) {
	oob := make([]byte, syscall.CmsgSpace(4*4))
	n, oobn, _, _, err := c.ReadMsgUnix(hello, oob)
	if err != nil {
		return n, nil, err
	}
	msgs, err := syscall.ParseSocketControlMessage(oob[:oobn])
	if err != nil {
		return n, nil, err
	}
	var fds []int
	for i := range msgs {
		if got, err := syscall.ParseUnixRights(&msgs[i]); err == nil {
			fds = append(fds, got...)
		}
	}
	return n, fds, nil
}
