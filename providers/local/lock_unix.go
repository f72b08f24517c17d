//go:build unix

package local

import (
	"os"
	"syscall"
)

// lockFile takes an exclusive flock on f: waiting for it when wait, else failing at once if
// another open file holds it. The lock goes with the process.
func lockFile(f *os.File, wait bool) error {
	how := syscall.LOCK_EX
	if !wait {
		how |= syscall.LOCK_NB
	}
	for {
		err := syscall.Flock(int(f.Fd()), how)
		if err != syscall.EINTR {
			return err
		}
	}
}
