package main

import (
	"fmt"
	"os"
	"runtime/debug"

	"github.com/dustin/go-humanize"
)

// Garbage collection of the long-running processes (svc serve and its plugin processes).
// An execution allocates and drops a few buffers per message (database pages, sealed chunks,
// wire messages) while keeping little alive, so with Go's default (a collection whenever the
// heap doubles) the collector took about a quarter of the server's CPU in a clean-up. These
// processes collect when the heap grows by gcPercent instead, and a soft memory limit bounds
// them: near the limit the collector runs as often as it must, so memory stays bounded and
// only the CPU spent on collection changes. GOGC and GOMEMLIMIT, when set, win over both.
const (
	gcPercent = 400

	// DefaultServeMemoryLimit is svc serve's soft memory limit (--memory-limit).
	defaultServeMemoryLimit = 512 << 20
	// pluginMemoryLimit is a plugin process's soft memory limit.
	pluginMemoryLimit = 256 << 20
)

// tuneGC applies gcPercent and the soft memory limit (bytes; 0 none) unless the environment
// sets them.
func tuneGC(limit int64) {
	if _, ok := os.LookupEnv("GOGC"); !ok {
		debug.SetGCPercent(gcPercent)
	}
	if _, ok := os.LookupEnv("GOMEMLIMIT"); !ok && limit > 0 {
		debug.SetMemoryLimit(limit)
	}
}

// byteSize is a flag holding a size in bytes, written as "1GiB", "512MiB", "800MB" or a plain
// number of bytes.
type byteSize int64

func (b *byteSize) String() string { return humanize.IBytes(uint64(*b)) }

func (b *byteSize) Set(s string) error {
	n, err := humanize.ParseBytes(s)
	if err != nil {
		return fmt.Errorf("not a size: %q (e.g. 1GiB, 512MiB)", s)
	}
	if n > 1<<62 {
		return fmt.Errorf("size %q is too large", s)
	}
	*b = byteSize(n)
	return nil
}

func (b *byteSize) Type() string { return "size" }
