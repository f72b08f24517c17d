package vault

import (
	"slices"

	svcv1 "svc.dev/svc/gen/svc/v1"
)

// State is a vault object's state, spelled as in the spec.
type State string

// The states of a vault object.
const (
	// StateUploading: content is being written.
	StateUploading State = "uploading"
	// StateVerifying: content is durable and being read back and hashed.
	StateVerifying State = "verifying"
	// StateCommitted: content is stored, was read back, and its SHA-256
	// matched. Only now may the source be touched.
	StateCommitted State = "committed"
	// StateCorrupt: the stored content no longer matches its digest (or is
	// lost); a verification that succeeds again (after a repair) returns
	// the object to committed or cold.
	StateCorrupt State = "corrupt"
	// StateDeleting: deletion has started; it finishes on retry or scrub.
	StateDeleting State = "deleting"
	// StateDeleted: gone; the record stays as evidence. Final.
	StateDeleted State = "deleted"
	// StateCold: committed content kept on the cold tier.
	StateCold State = "cold"
)

// States lists every state.
var States = []State{StateUploading, StateVerifying, StateCommitted, StateCorrupt, StateDeleting, StateDeleted, StateCold}

// transitions is the vault object state machine, in one place.
//
// A Put writes (uploading), reads back (verifying) and commits; a failed
// or interrupted Put is redone with the same id, from uploading,
// verifying or corrupt. Scrub and Verify move committed and cold objects
// to corrupt when their content no longer verifies, and back when it does
// again. Cold moves committed content to the cold tier and Warm back.
// Deletion goes through deleting, so that a crash in the middle finishes
// later; deleted is final.
var transitions = map[State][]State{
	StateUploading: {StateVerifying, StateDeleting},
	StateVerifying: {StateCommitted, StateCorrupt, StateUploading, StateDeleting},
	StateCommitted: {StateCold, StateCorrupt, StateDeleting},
	StateCold:      {StateCommitted, StateCorrupt, StateDeleting},
	StateCorrupt:   {StateCommitted, StateCold, StateUploading, StateDeleting},
	StateDeleting:  {StateDeleted},
}

// CanTransition reports whether an object may go from one state to
// another.
func CanTransition(from, to State) bool { return slices.Contains(transitions[from], to) }

// transition moves o to state to, or returns a *TransitionError.
func transition(o *Object, to State) error {
	if !CanTransition(o.State, to) {
		return &TransitionError{ID: o.ID, From: o.State, To: to}
	}
	o.State = to
	return nil
}

// Valid reports whether s is one of the states.
func (s State) Valid() bool { return slices.Contains(States, s) }

// Final reports whether a state has no way out.
func (s State) Final() bool { return len(transitions[s]) == 0 }

// Proto returns the state as the API's enum.
func (s State) Proto() svcv1.VaultObjectState {
	switch s {
	case StateUploading:
		return svcv1.VaultObjectState_VAULT_OBJECT_STATE_UPLOADING
	case StateVerifying:
		return svcv1.VaultObjectState_VAULT_OBJECT_STATE_VERIFYING
	case StateCommitted:
		return svcv1.VaultObjectState_VAULT_OBJECT_STATE_COMMITTED
	case StateCorrupt:
		return svcv1.VaultObjectState_VAULT_OBJECT_STATE_CORRUPT
	case StateDeleting:
		return svcv1.VaultObjectState_VAULT_OBJECT_STATE_DELETING
	case StateDeleted:
		return svcv1.VaultObjectState_VAULT_OBJECT_STATE_DELETED
	case StateCold:
		return svcv1.VaultObjectState_VAULT_OBJECT_STATE_COLD
	}
	return svcv1.VaultObjectState_VAULT_OBJECT_STATE_UNSPECIFIED
}
