package local

import (
	"os"
	"syscall"
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
