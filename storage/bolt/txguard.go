package bolt

import (
	"bytes"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// A transaction opened while the same goroutine already holds one can wedge the whole store:
// when a write must grow the file, bbolt's remap waits for every open read transaction to end,
// and the inner transaction waits behind the pending remap, so the outer one never ends and
// every later transaction queues behind them. Every store method therefore reads what it needs
// in one transaction and hands the caller plain values; code that runs inside a transaction
// (List and Scan keep filters, Update functions, extras, vault meta callbacks) must never call
// the store.
//
// In test binaries (and with SVC_TX_GUARD=1) the store checks this on every transaction: a
// goroutine that opens a second one kills the process with both stacks, so the mistake fails
// the test that made it instead of waiting for load to find it. Elsewhere the check costs
// nothing.

// guardTx is whether transactions are checked for nesting.
var guardTx = testing.Testing() && os.Getenv("SVC_TX_GUARD") != "0" || os.Getenv("SVC_TX_GUARD") == "1"

// txGuard remembers, per goroutine, where its open transaction began.
type txGuard struct {
	mu   sync.Mutex
	open map[uint64][]uintptr // goroutine id -> call stack at the transaction's start
}

// enter marks the calling goroutine as inside a transaction and returns the function that
// unmarks it. A goroutine already inside one ends the process.
func (g *txGuard) enter() func() {
	_, leave := g.enterID()
	return leave
}

// enterID is enter that also returns the goroutine's id (0 when unchecked).
func (g *txGuard) enterID() (uint64, func()) {
	if !guardTx || g == nil {
		return 0, func() {}
	}
	id := goroutineID()
	stack := make([]uintptr, 32)
	stack = stack[:runtime.Callers(2, stack)]
	g.mu.Lock()
	if g.open == nil {
		g.open = map[uint64][]uintptr{}
	}
	first, nested := g.open[id]
	if !nested {
		g.open[id] = stack
	}
	g.mu.Unlock()
	if nested {
		nestedFatal(first, stack)
	}
	return id, func() {
		g.mu.Lock()
		delete(g.open, id)
		g.mu.Unlock()
	}
}

// nestedFatal reports a nested transaction and ends the process from a fresh goroutine, where
// no recover (an HTTP handler's, say) can swallow it.
func nestedFatal(outer, inner []uintptr) {
	msg := fmt.Sprintf("store: nested transaction: a goroutine opened a transaction while it held one "+
		"(this wedges the store under load)\n\n== the open transaction began at:\n%s\n== the nested one at:\n%s",
		frames(outer), frames(inner))
	os.Stderr.WriteString(msg)
	go panic(msg)
	select {}
}

// goroutineID returns the calling goroutine's id, parsed from the "goroutine N [...]" header
// that runtime.Stack writes; only the guard uses it.
func goroutineID() uint64 {
	var buf [64]byte
	f := bytes.Fields(buf[:runtime.Stack(buf[:], false)])
	if len(f) < 2 {
		return 0
	}
	id, _ := strconv.ParseUint(string(f[1]), 10, 64)
	return id
}

// frames formats a call stack one "function file:line" per line.
func frames(pcs []uintptr) string {
	var b strings.Builder
	it := runtime.CallersFrames(pcs)
	for {
		f, more := it.Next()
		fmt.Fprintf(&b, "%s\n\t%s:%d\n", f.Function, f.File, f.Line)
		if !more {
			return b.String()
		}
	}
}
