package local

import (
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// oDirect bypasses the page cache (see direct.go).
const oDirect = syscall.O_DIRECT

// datasync flushes a file's data and the metadata needed to read it (its
// size), not its times: fdatasync.
func datasync(f *os.File) error {
	for {
		err := syscall.Fdatasync(int(f.Fd()))
		if err != syscall.EINTR {
			return err
		}
	}
}

// canEvict reports that evict drops cached pages here.
const canEvict = true

// evict drops the clean cached pages of a range of f (posix_fadvise
// DONTNEED), so that the next read of it comes from the device.
func evict(f *os.File, offset, length int64) error {
	return unix.Fadvise(int(f.Fd()), offset, length, unix.FADV_DONTNEED)
}
