// Package id makes and checks the spec's identifiers: a prefix such as "pln_" followed by a
// 26-character ULID in Crockford's base32 (0-9A-HJKMNP-TV-Z). ULIDs sort by creation time, so
// storage keyed by id lists in creation order.
//
// # Stability
//
// The exported API is stable: it changes only additively, each change is listed in
// docs/CHANGELOG.md, and scripts/apicheck fails CI when it changes without an entry
// (docs/stability.md).
package id
