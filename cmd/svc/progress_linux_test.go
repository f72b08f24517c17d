package main

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	svcv1 "svc.dev/svc/gen/svc/v1"
)

// openPTY opens a pseudo-terminal and returns its terminal side.
func openPTY(t *testing.T) *os.File {
	t.Helper()
	ptmx, err := os.OpenFile("/dev/ptmx", os.O_RDWR, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals here: %v", err)
	}
	t.Cleanup(func() { ptmx.Close() })
	n, err := unix.IoctlGetInt(int(ptmx.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Skipf("no pseudo-terminals here: %v", err)
	}
	if err := unix.IoctlSetPointerInt(int(ptmx.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Skipf("cannot unlock the pseudo-terminal: %v", err)
	}
	tty, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("cannot open the pseudo-terminal: %v", err)
	}
	t.Cleanup(func() { tty.Close() })
	go func() { // drain what the bar draws
		buf := make([]byte, 4096)
		for {
			if _, err := ptmx.Read(buf); err != nil {
				return
			}
		}
	}()
	return tty
}

// A bar on a terminal; plain lines into a file.
func TestProgressFitsItsOutput(t *testing.T) {
	p := &svcv1.Plan{Projection: &svcv1.Projection{BytesToPreserve: 100}}
	if pr, ok := newProgress(openPTY(t), p).(*barProgress); !ok {
		t.Fatalf("a terminal got %T", pr)
	} else {
		pr.update(50, 1)
		pr.finish()
	}
	f, err := os.Create(filepath.Join(t.TempDir(), "out"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if pr, ok := newProgress(f, p).(*lineProgress); !ok {
		t.Fatalf("a file got %T", pr)
	}
}
