package intelcorpus

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/emersion/go-message"
	_ "github.com/emersion/go-message/charset" // the parse-only pass decodes charsets too

	"svc.dev/svc/intel"
	"svc.dev/svc/mail"
)

// WriteMbox writes n messages to an mboxrd file: the corpus's messages over and over, each copy
// with its own Message-ID (so that a scan does not take them for duplicates). It returns the
// file's size.
func WriteMbox(path string, c *Corpus, n int) (int64, error) {
	f, err := os.Create(path)
	if err != nil {
		return 0, err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	for i := 0; i < n; i++ {
		m := c.Messages[i%len(c.Messages)]
		raw := m.Raw
		if round := i / len(c.Messages); round > 0 {
			raw = bytes.Replace(raw, []byte("Message-ID: <"), fmt.Appendf(nil, "Message-ID: <r%d.", round), 1)
		}
		fmt.Fprintf(w, "From sender@example.com %s\n", m.Date.UTC().Format("Mon Jan _2 15:04:05 2006"))
		for line := range bytes.SplitAfterSeq(raw, []byte("\n")) {
			if t := bytes.TrimLeft(line, ">"); bytes.HasPrefix(t, []byte("From ")) {
				w.WriteByte('>')
			}
			w.Write(line)
		}
		if !bytes.HasSuffix(raw, []byte("\n")) {
			w.WriteByte('\n')
		}
		w.WriteByte('\n')
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return 0, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return 0, err
	}
	return st.Size(), f.Close()
}

// Pass is one timed pass over an mbox.
type Pass struct {
	Messages int
	Elapsed  time.Duration
	PeakHeap uint64 // the most heap allocated at once during the pass (HeapAlloc, sampled every 10 ms), bytes
	// CPU is the process's CPU time (user and system) during the pass: on a machine shared with
	// other work, wall time swings with the load and CPU time much less.
	CPU time.Duration
}

// CPURate is messages per second of CPU time.
func (p Pass) CPURate() float64 { return float64(p.Messages) / p.CPU.Seconds() }

// cpuTime is the CPU time the process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// Rate is messages per second.
func (p Pass) Rate() float64 { return float64(p.Messages) / p.Elapsed.Seconds() }

// measure runs f while sampling the heap.
func measure(f func() (int, error)) (Pass, error) {
	runtime.GC()
	var peak atomic.Uint64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(10 * time.Millisecond)
		defer t.Stop()
		var ms runtime.MemStats
		for {
			runtime.ReadMemStats(&ms)
			if ms.HeapAlloc > peak.Load() {
				peak.Store(ms.HeapAlloc)
			}
			select {
			case <-stop:
				return
			case <-t.C:
			}
		}
	}()
	start, cpu := time.Now(), cpuTime()
	n, err := f()
	el, cpu := time.Since(start), cpuTime()-cpu
	close(stop)
	wg.Wait()
	return Pass{Messages: n, Elapsed: el, CPU: cpu, PeakHeap: peak.Load()}, err
}

// ParseOnly is the reference pass: the MIME library walks every part of every message of the
// mbox and reads each part's decoded body, with no extraction.
func ParseOnly(path string) (Pass, error) {
	return measure(func() (int, error) {
		f, err := os.Open(path)
		if err != nil {
			return 0, err
		}
		defer f.Close()
		mr := mail.NewMboxReader(f)
		n := 0
		for {
			r, err := mr.Next()
			if errors.Is(err, io.EOF) {
				return n, nil
			}
			if err != nil {
				return n, err
			}
			n++
			e, err := message.Read(r)
			if e == nil {
				continue
			}
			e.Walk(func(_ []int, p *message.Entity, _ error) error {
				io.Copy(io.Discard, p.Body)
				return nil
			})
		}
	})
}

// Scan is the measured pass: the intel scanner over every message of the mbox, then its result.
func Scan(path string, asOf time.Time) (Pass, intel.Result, error) {
	var res intel.Result
	p, err := measure(func() (int, error) {
		f, err := os.Open(path)
		if err != nil {
			return 0, err
		}
		defer f.Close()
		s := intel.NewScanner(nil)
		mr := mail.NewMboxReader(f)
		for {
			r, err := mr.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return s.Stats().Messages, err
			}
			s.Scan(path, r)
		}
		res = s.Result(asOf)
		return s.Stats().Messages, nil
	})
	return p, res, err
}
