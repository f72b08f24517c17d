// Package intel will hold svc's intelligence: billing-trap meters built from evidence
// (metered overage, teaser expirations, renewal jumps, ...) and keep/stop/remind decisions on
// trials.
//
// Nothing is implemented yet: no issue has asked for these capabilities, and their endpoints
// (GET /v1/intel/meters, POST /v1/intel/meters/{id}/action, POST /v1/intel/trials/{id}/decision)
// authenticate, validate and answer 501 not_implemented.
//
// # Stability
//
// Not yet stable: nothing is implemented yet. Its exported API may change between commits;
// docs/stability.md says what is stable and what will move.
package intel
