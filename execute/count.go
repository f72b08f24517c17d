package execute

import (
	"google.golang.org/protobuf/types/known/timestamppb"

	svcv1 "svc.dev/svc/gen/svc/v1"
)

// MaxSteps bounds the steps an Execution shows: the most recent transitions. The journal
// itself keeps them all (and the receipt is built from it).
const MaxSteps = 10_000

// MaxErrors bounds the errors an Execution lists.
const MaxErrors = 100

// counts are an execution's counters, derived from its journal.
type counts struct {
	attempted, completed, failed, skipped, preserved int64
	bytesPreserved, bytesRemoved, bytesTransferred   int64
	errors                                           []string
}

// tally is what the counters need of a journal, kept as transitions are recorded (and read
// once when an execution resumes), so that they are known without reading the journal back:
// each asset's latest state, small, and the byte totals. It never holds the plan.
type tally struct {
	latest                                         map[string]last
	preserved                                      int64
	bytesPreserved, bytesRemoved, bytesTransferred int64
}

// last is an asset's latest state, whether the asset has nothing left to do in it (done,
// known once the asset's plan object was seen), and why it failed.
type last struct {
	to    svcv1.StepState
	done  bool
	error string
}

func newTally() *tally { return &tally{latest: map[string]last{}} }

// add counts t; o is its plan object, or nil when it is not at hand (a journal read back on
// resume: the asset's done flag is then set when its object is seen, see see).
func (tl *tally) add(t Transition, o *svcv1.PlanObject) {
	l := last{to: t.To}
	if o != nil {
		l.done = done(o, t.To)
	}
	if t.To == failed {
		l.error = t.Error
	}
	tl.latest[t.AssetID] = l
	switch t.To {
	case vaultCommitted:
		tl.bytesPreserved += t.Bytes
		tl.preserved++
	case trashed:
		tl.bytesRemoved += t.Bytes
	case restored:
		tl.bytesTransferred += t.Bytes
	}
}

// see notes an asset's plan object and returns its latest state.
func (tl *tally) see(o *svcv1.PlanObject) (last, bool) {
	l, ok := tl.latest[o.GetAssetId()]
	if ok && !l.done && done(o, l.to) {
		l.done = true
		tl.latest[o.GetAssetId()] = l
	}
	return l, ok
}

// counts returns the counters of what was recorded so far, for an execution in progress
// (without errors: those are listed at the end, in plan order).
func (tl *tally) counts() counts {
	c := tl.totals()
	for _, l := range tl.latest {
		c.add(l, "")
	}
	return c
}

func (tl *tally) totals() counts {
	return counts{preserved: tl.preserved, bytesPreserved: tl.bytesPreserved, bytesRemoved: tl.bytesRemoved, bytesTransferred: tl.bytesTransferred}
}

// add counts one asset in its latest state l: excluded assets are not counted, skipped ones
// are skipped (not attempted, as receipts count: a copy vaulted before the skip stays, and
// the receipt says so), the others attempted, and completed when done or failed. The first
// MaxErrors failures are listed, with the asset.
func (c *counts) add(l last, assetID string) {
	switch l.to {
	case excluded:
		return
	case skipped:
		c.skipped++
		return
	}
	c.attempted++
	switch {
	case l.to == failed:
		c.failed++
		if assetID != "" && len(c.errors) < MaxErrors {
			c.errors = append(c.errors, assetID+": "+l.error)
		}
	case l.done:
		c.completed++
	}
}

func (c counts) apply(x *svcv1.Execution) {
	x.Attempted, x.Completed, x.Failed = c.attempted, c.completed, c.failed
	x.BytesPreserved, x.BytesRemoved, x.BytesTransferred = c.bytesPreserved, c.bytesRemoved, c.bytesTransferred
}

// steps renders transitions as the Execution's steps.
func steps(journal []Transition) []*svcv1.ExecutionStep {
	out := make([]*svcv1.ExecutionStep, len(journal))
	for i, t := range journal {
		s := &svcv1.ExecutionStep{AssetId: t.AssetID, Step: t.Step, Status: t.Status, At: timestamppb.New(t.At)}
		from, to := t.From, t.To
		s.FromState, s.ToState = &from, &to
		out[i] = s
	}
	return out
}

// recent keeps the last MaxSteps transitions of a journal, in order.
type recent struct {
	buf  []Transition
	next int // where the next one goes once buf is full
}

func (rc *recent) add(t Transition) {
	if len(rc.buf) < MaxSteps {
		rc.buf = append(rc.buf, t)
		return
	}
	rc.buf[rc.next] = t
	rc.next = (rc.next + 1) % MaxSteps
}

// list returns the transitions kept, oldest first.
func (rc *recent) list() []Transition {
	return append(append([]Transition(nil), rc.buf[rc.next:]...), rc.buf[:rc.next]...)
}

// status is the terminal status these counts give an execution.
func (c counts) status(cancelled bool) svcv1.ExecutionStatus {
	switch {
	case cancelled:
		return svcv1.ExecutionStatus_EXECUTION_STATUS_CANCELLED
	case c.attempted > 0 && c.failed == c.attempted:
		return svcv1.ExecutionStatus_EXECUTION_STATUS_FAILED
	case c.failed > 0 || c.skipped > 0:
		return svcv1.ExecutionStatus_EXECUTION_STATUS_PARTIALLY_COMPLETED
	}
	return svcv1.ExecutionStatus_EXECUTION_STATUS_COMPLETED
}
