// Package execute runs authorized plans without ever losing data.
//
// Every asset of a plan walks the spec's step states (DISCOVERED, SELECTED, FETCHING, VAULTING,
// VERIFYING, VAULT_COMMITTED, SOURCE_ACTION_QUEUED, SOURCE_TRASHED_OR_REMOVED, RECLAIM_PENDING,
// RESTORE_QUEUED, RESTORED, and the terminal SKIPPED, FAILED, EXCLUDED). Each transition is
// written to a durable journal before the side effect it guards, so after a crash at any
// instant the engine resumes every unfinished execution from its journal and redoes at most the
// step that was in flight. Every step is idempotent: content is vaulted by its SHA-256 (storing
// it again is harmless), and a source action repeated after a crash finds the object already
// gone. An object is never trashed, removed or moved before its vault copy is committed and
// verified when preservation is elected, and never acted on when its version moved since the
// plan: that asset is skipped with the reason.
//
// The engine reaches storage, providers, the vault and receipts through the small interfaces
// it declares (Store, Sources, Vault, Finisher).
//
// # Stability
//
// Not yet stable: the execution engine is being opened to embedders (issue 14 part 1: the
// embedding package), which will change how it is constructed. Its exported API may change
// between commits; docs/stability.md says what is stable and what will move.
package execute
