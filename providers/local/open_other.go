//go:build !linux

package local

import (
	"io/fs"
	"os"
)

// openFetch opens a file to fetch it and returns its information from the open file.
func openFetch(path string) (fetchFile, fs.FileInfo, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	return f, fi, nil
}
