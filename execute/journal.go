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

	mu        sync.Mutex
	cond      *sync.Cond
	pending   []Transition
	recorded  int64 // transitions appended so far
	durable   int64 // of which durable
	err       error
	closed    bool
	writerEnd chan struct{}
	recent    recent // the last MaxSteps transitions appended, for the Execution's steps
}

func newJournal(store Store, tenant, exeID string) *journal {
	j := &journal{store: store, tenant: tenant, exeID: exeID, writerEnd: make(chan struct{})}
	j.cond = sync.NewCond(&j.mu)
	go j.write()
	return j
}

// append records t; with durable, it returns once t is durable.
func (j *journal) append(t Transition, durable bool) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	for len(j.pending) >= maxPending && j.err == nil && !j.closed {
		j.cond.Wait()
	}
	if j.err != nil {
		return j.err
	}
	if j.closed {
		return errJournalClosed
	}
	j.pending = append(j.pending, t)
	j.recent.add(t)
	j.recorded++
	seq := j.recorded
	j.cond.Broadcast()
	if !durable {
		return nil
	}
	for j.durable < seq && j.err == nil {
		j.cond.Wait()
	}
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
	defer j.mu.Unlock()
	for j.durable < j.recorded && j.err == nil {
		j.cond.Wait()
	}
	return j.err
}

// close flushes and stops the writer.
func (j *journal) close() error {
	err := j.flush()
	j.mu.Lock()
	j.closed = true
	j.cond.Broadcast()
	j.mu.Unlock()
	<-j.writerEnd
	return err
}

// write commits what is pending, group after group, until the journal is closed.
func (j *journal) write() {
	defer close(j.writerEnd)
	ctx := context.Background() // a group in flight is finished even when the execution is cancelled
	j.mu.Lock()
	for {
		for len(j.pending) == 0 && !j.closed && j.err == nil {
			j.cond.Wait()
		}
		if j.closed || j.err != nil {
			j.mu.Unlock()
			return
		}
		group := j.pending
		j.pending = nil
		j.cond.Broadcast() // room for steps waiting on maxPending
		j.mu.Unlock()
		err := j.store.Record(ctx, j.tenant, j.exeID, group...)
		j.mu.Lock()
		if err != nil {
			j.err = err
		} else {
			j.durable += int64(len(group))
		}
		j.cond.Broadcast()
	}
}
