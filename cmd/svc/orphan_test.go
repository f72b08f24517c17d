package main

import (
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// children lists the child processes of pid (Linux: /proc/PID/task/*/children).
func children(pid int) []int {
	var out []int
	tasks, _ := filepath.Glob(filepath.Join("/proc", strconv.Itoa(pid), "task", "*", "children"))
	for _, t := range tasks {
		b, _ := os.ReadFile(t)
		for _, f := range strings.Fields(string(b)) {
			if n, err := strconv.Atoi(f); err == nil {
				out = append(out, n)
			}
		}
	}
	return out
}

// alive reports whether pid is a running (not zombie) process.
func alive(pid int) bool {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return false
	}
	// pid (comm) state ...: the state follows the last ')'.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i > 0 && i+2 < len(s) && s[i+2] != 'Z'
}

// A host killed with SIGKILL cannot stop its provider plugins: they notice they lost their
// parent and exit on their own.
func TestPluginsExitWhenTheHostIsKilled(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc")
	}
	bin := svcBinary(t)
	cmd, _, log := start(t, bin, t.TempDir())
	// The dev seed ran an execution over simulated sources: their plugin is running.
	var kids []int
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline) && len(kids) == 0; time.Sleep(100 * time.Millisecond) {
		kids = children(cmd.Process.Pid)
	}
	if len(kids) == 0 {
		cmd.Process.Kill()
		t.Fatalf("no plugin processes under the host:\n%s", log)
	}
	if err := syscall.Kill(cmd.Process.Pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	deadline := time.Now().Add(10 * time.Second)
	for _, k := range kids {
		for alive(k) {
			if time.Now().After(deadline) {
				for _, k := range kids {
					syscall.Kill(k, syscall.SIGKILL)
				}
				t.Fatalf("plugin process %d outlived its killed host by 10 s", k)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
}
