package platform

import (
	"crypto/rand"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"svc.dev/svc/internal/atomicfile"
)

// LoadMasterKey reads the master key at path (every other key derives from it), or makes one
// of 32 random bytes, mode 0600. A key file that others may read is refused: whoever reads it
// can decrypt the vault and forge cursors, so svc will not start on it silently.
func LoadMasterKey(path string) ([]byte, error) {
	key, err := os.ReadFile(path)
	if err == nil {
		fi, err := os.Stat(path)
		if err != nil {
			return nil, fmt.Errorf("stat %s: %w", path, err)
		}
		if perm := fi.Mode().Perm(); perm&0o077 != 0 {
			return nil, fmt.Errorf("%s has mode %#o, readable by others than its owner: run chmod 600 on it (and consider the key exposed)", path, perm)
		}
		return key, nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	key = make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return nil, fmt.Errorf("generate master key: %w", err)
	}
	if err := atomicfile.Create(path, key, 0o600); err != nil {
		return nil, err
	}
	return key, nil
}
