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

// count derives the counters from the journal: the latest state of every asset decides
// whether it completed, failed or was skipped; bytes come from the commit and trash steps.
func count(p *svcv1.Plan, journal []Transition) counts {
	t := newTally()
	for _, tr := range journal {
		t.add(tr)
	}
	return t.counts(p)
}

// tally is what count needs of a journal, kept as transitions are recorded, so that a running
// execution's counters are known without reading its journal back.
type tally struct {
	latest                                         map[string]last
	preserved                                      int64
	bytesPreserved, bytesRemoved, bytesTransferred int64
}

// last is an asset's latest state (and why, when it failed).
type last struct {
	to    svcv1.StepState
	error string
}

func newTally() *tally { return &tally{latest: map[string]last{}} }

func (tl *tally) add(t Transition) {
	l := last{to: t.To}
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

func (tl *tally) counts(p *svcv1.Plan) counts {
	c := counts{preserved: tl.preserved, bytesPreserved: tl.bytesPreserved, bytesRemoved: tl.bytesRemoved, bytesTransferred: tl.bytesTransferred}
	latest := tl.latest
	for _, o := range p.GetObjects() {
		t, ok := latest[o.GetAssetId()]
		if !ok || t.to == excluded {
			continue
		}
		if t.to == skipped {
			// Not attempted, as receipts count: skipped objects were not acted on (a copy
			// vaulted before the skip stays, and the receipt says so).
			c.skipped++
			continue
		}
		c.attempted++
		switch {
		case t.to == failed:
			c.failed++
			if len(c.errors) < MaxErrors {
				c.errors = append(c.errors, o.GetAssetId()+": "+t.error)
			}
		case done(o, t.to):
			c.completed++
		}
	}
	return c
}

func (c counts) apply(x *svcv1.Execution) {
	x.Attempted, x.Completed, x.Failed = c.attempted, c.completed, c.failed
	x.BytesPreserved, x.BytesRemoved, x.BytesTransferred = c.bytesPreserved, c.bytesRemoved, c.bytesTransferred
}

// steps renders the journal as the Execution's steps, the most recent MaxSteps.
func steps(journal []Transition) []*svcv1.ExecutionStep {
	if len(journal) > MaxSteps {
		journal = journal[len(journal)-MaxSteps:]
	}
	out := make([]*svcv1.ExecutionStep, len(journal))
	for i, t := range journal {
		s := &svcv1.ExecutionStep{AssetId: t.AssetID, Step: t.Step, Status: t.Status, At: timestamppb.New(t.At)}
		from, to := t.From, t.To
		s.FromState, s.ToState = &from, &to
		out[i] = s
	}
	return out
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
