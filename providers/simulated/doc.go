// Package simulated is the simulated provider: deterministic, seedable
// synthetic accounts of mail and files, generated lazily (object i of a
// source is a pure function of the seed, the source and i, so a source of a
// million objects costs no memory), with revision markers that move when
// content changes and fault injection. Test mode uses it.
//
// Sources are named by their kind and an optional account: "mail",
// "files", "mail/alice", "files/team". Config keys (all optional):
//
//	seed                  uint64, default 1
//	objects               objects per source, 0..10000000, default 1000
//	epoch                 RFC 3339 "now" of the synthetic account, default 2026-11-01T00:00:00Z
//	latency               duration added to every call (e.g. 5ms)
//	transient_every       every Nth call fails with providers.ErrTransient
//	version_change_after  after N fetches, the object of the next fetch, trash
//	                      or remove changes version first (a change mid-run)
//	hang_after            calls after the Nth block until their context ends
//	crash_after           calls after the Nth crash the provider
//	crash_mid_fetch       a fetch crashes the provider after streaming N bytes
//
// A crash calls Options.Crash: the plugin server passes os.Exit, so the
// process dies as a real plugin would; in process the default returns an
// error wrapping providers.ErrTransient instead.
//
// The distribution: mail is about 30% newsletters and 20% promotions (both
// with List-Unsubscribe, promotions one-click), billing and trial emails,
// creator payout emails and personal threads; files are documents, photos,
// videos, statements and archives in dated folders. About 5% of objects
// duplicate an earlier one (same name, size and content), 8% carry large
// attachments or are large files, 3% are starred, 10% of files are shared,
// and ages run from days to ten years, skewed recent.
//
// # Stability
//
// Not yet stable: built-in providers are used through providers.Registry (providers/builtin),
// not imported directly. Its exported API may change between commits; docs/stability.md says
// what is stable and what will move.
package simulated
