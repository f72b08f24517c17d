//go:build linux

package local

import (
	"io"
	"io/fs"
	"path/filepath"
	"syscall"
	"time"
)

// openFetch opens a file to fetch it and returns its information from the open descriptor.
// On Linux it uses the system calls directly: os.Open also asks the poller to watch the
// descriptor (which it refuses for a regular file: one more system call) and sets up an
// os.File with its cleanup, per message of a mailbox.
func openFetch(path string) (fetchFile, fs.FileInfo, error) {
	var fd int
	var err error
	for {
		fd, err = syscall.Open(path, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
		if err != syscall.EINTR {
			break
		}
	}
	if err != nil {
		return nil, nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	f := &fdFile{fd: fd}
	f.info.name = filepath.Base(path)
	if err := syscall.Fstat(fd, &f.info.st); err != nil {
		syscall.Close(fd)
		return nil, nil, &fs.PathError{Op: "stat", Path: path, Err: err}
	}
	return f, &f.info, nil
}

// fdFile is an open descriptor read with pread.
type fdFile struct {
	fd   int
	info statInfo
}

func (f *fdFile) ReadAt(p []byte, off int64) (int, error) {
	n := 0
	for n < len(p) {
		m, err := syscall.Pread(f.fd, p[n:], off+int64(n))
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return n, &fs.PathError{Op: "read", Path: f.info.name, Err: err}
		}
		if m == 0 {
			return n, io.EOF
		}
		n += m
	}
	return n, nil
}

func (f *fdFile) Close() error { return syscall.Close(f.fd) }

// statInfo is an fs.FileInfo from a stat, as os makes one.
type statInfo struct {
	name string
	st   syscall.Stat_t
}

func (s *statInfo) Name() string       { return s.name }
func (s *statInfo) Size() int64        { return s.st.Size }
func (s *statInfo) ModTime() time.Time { return time.Unix(s.st.Mtim.Unix()) }
func (s *statInfo) IsDir() bool        { return s.Mode().IsDir() }
func (s *statInfo) Sys() any           { return &s.st }
func (s *statInfo) Mode() fs.FileMode {
	m := fs.FileMode(s.st.Mode & 0o777)
	switch s.st.Mode & syscall.S_IFMT {
	case syscall.S_IFDIR:
		m |= fs.ModeDir
	case syscall.S_IFLNK:
		m |= fs.ModeSymlink
	case syscall.S_IFREG:
	default:
		m |= fs.ModeIrregular
	}
	return m
}
