package execute

import (
	"context"
	"errors"
	"sync"
)

// errJournalClosed is returned when a step is recorded after its execution's journal closed.
var errJournalClosed = errors.New("the execution's journal is closed")

// maxPending bounds the transitions waiting for the journal's next group: a step recording
// more waits for the group in flight, so memory stays bounded when the store is slow.
const maxPending = 8192

// journal writes an execution's transitions to the store in groups, in the order they were
// recorded: while one group is being committed, the next accumulates, and each group is one
// Store.Record call (one transaction, one fsync). A transition that guards a side effect is
// recorded durably: append returns once it, and so every transition recorded before it, is
// durable. Any other transition is recorded and append returns at once; a crash may lose it,
// and the asset then redoes its last steps, which are idempotent (docs/executions.md).
//
// A failed write is sticky: every later append fails, and the execution stops where it is
// and resumes from what is durable on the next start.
type journal struct {
	store         Store
	tenant, exeID string

	mu      sync.Mutex
	more    *sync.Cond // the writer waits on it for transitions
	room    *sync.Cond // appends wait on it for room under maxPending
	pending []Transition
	// done is closed once the group accumulating in pending is durable (or failed: then err is
	// set); inflight is the done of the group being committed. A durable append waits on its
	// group's channel alone: with a thousand assets in flight, waking every waiter at every
	// append (one condition for all) cost more than the journal's writes.
	done, inflight chan struct{}
	err            error
	closed         bool
	writerEnd      chan struct{}
	recent         recent // the last MaxSteps transitions appended, for the Execution's steps
}

func newJournal(store Store, tenant, exeID string) *journal {
	j := &journal{store: store, tenant: tenant, exeID: exeID, writerEnd: make(chan struct{}), done: make(chan struct{})}
	j.more = sync.NewCond(&j.mu)
	j.room = sync.NewCond(&j.mu)
	go j.write()
	return j
}

// append records t; with durable, it returns once t is durable.
func (j *journal) append(t Transition, durable bool) error {
	j.mu.Lock()
	for len(j.pending) >= maxPending && j.err == nil && !j.closed {
		j.room.Wait()
	}
	if j.err != nil || j.closed {
		err := j.err
		j.mu.Unlock()
		if err == nil {
			err = errJournalClosed
		}
		return err
	}
	j.pending = append(j.pending, t)
	j.recent.add(t)
	if len(j.pending) == 1 {
		j.more.Signal()
	}
	done := j.done
	j.mu.Unlock()
	if !durable {
		return nil
	}
	<-done
	return j.failure()
}

// failure is the journal's sticky error.
func (j *journal) failure() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.err
}

// steps returns the last MaxSteps transitions appended (with those read back on resume).
func (j *journal) steps() []Transition {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.recent.list()
}

// flush returns once every transition recorded so far is durable.
func (j *journal) flush() error {
	j.mu.Lock()
	wait := j.inflight
	if len(j.pending) > 0 {
		wait = j.done // groups are committed in order: the last one's end is everyone's
	}
	j.mu.Unlock()
	if wait != nil {
		<-wait
	}
	return j.failure()
}

// close flushes and stops the writer.
func (j *journal) close() error {
	err := j.flush()
	j.mu.Lock()
	j.closed = true
	j.more.Signal()
	j.room.Broadcast()
	j.mu.Unlock()
	<-j.writerEnd
	return err
}

// write commits what is pending, group after group, until the journal is closed (and has
// nothing left to write) or a write failed.
func (j *journal) write() {
	defer close(j.writerEnd)
	ctx := context.Background() // a group in flight is finished even when the execution is cancelled
	j.mu.Lock()
	for {
		for len(j.pending) == 0 && !j.closed && j.err == nil {
			j.more.Wait()
		}
		if j.err != nil || (j.closed && len(j.pending) == 0) {
			close(j.done) // nothing more is written: no one may wait for it
			j.mu.Unlock()
			return
		}
		group, done := j.pending, j.done
		j.pending, j.done, j.inflight = nil, make(chan struct{}), done
		j.room.Broadcast() // room for steps waiting on maxPending
		j.mu.Unlock()
		err := j.store.Record(ctx, j.tenant, j.exeID, group...)
		j.mu.Lock()
		if err != nil {
			j.err = err
			j.room.Broadcast()
		}
		close(done)
	}
}
