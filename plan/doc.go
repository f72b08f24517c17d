// Package plan builds plans: side-effect-free preflights that say exactly what an execution
// would do to a person's content, with a hash anyone can recompute.
//
// Build streams each source's objects (through the Objects interface it declares, page by
// page), applies the source policy (exclusions, then one storage class per object), chooses
// actions for the intent, captures the sources' revision markers, projects bytes and quota,
// estimates cost on the rate card, takes a policy decision, and hashes the material fields
// (Hash). Transition enforces the plan state machine. Nothing here can change provider state:
// the package sees providers only as listings.
//
// docs/plans.md states every rule, and how to recompute a plan's hash.
//
// # Stability
//
// The exported API is stable: it changes only additively, each change is listed in
// docs/CHANGELOG.md, and scripts/apicheck fails CI when it changes without an entry
// (docs/stability.md). The plan hash (Hash) and its canonical form are fixed by planVersion 1.
package plan
