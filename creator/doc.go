// Package creator will hold creator revenue reconciliation: connected revenue sources,
// revenue items moving through their states from earning signal to settlement, and
// longitudinal anomalies.
//
// Nothing is implemented yet: no issue has asked for these capabilities, and their endpoints
// (GET /v1/creator/items, GET /v1/creator/anomalies, POST /v1/creator/sources) authenticate,
// validate and answer 501 not_implemented.
//
// # Stability
//
// Not yet stable: nothing is implemented yet. Its exported API may change between commits;
// docs/stability.md says what is stable and what will move.
package creator
