//go:build !unix

package local

import (
	"errors"
	"os"
)

// lockFile cannot lock here: writers go unlocked and sweeps remove nothing.
func lockFile(_ *os.File, wait bool) error {
	if wait {
		return nil
	}
	return errors.New("local: no file locks on this system")
}
