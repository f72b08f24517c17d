// Package vault keeps preserved content: content-addressed by SHA-256
// (Digest) within a tenant, encrypted at rest with the tenant's data key,
// stored on a backend (local disk by default, or an S3-compatible store),
// and verified on every read.
//
// A vault object (Object) is the spec's Vault object. Put stores content
// and returns the object committed only after the stored bytes were read
// back, decrypted and their SHA-256 compared: the execution engine may act
// on the source only then. The states (uploading, verifying, committed,
// corrupt, deleting, deleted, cold) and their transitions are enforced in
// one place (CanTransition). Identical content in a tenant is stored once
// (Blob) and counted by the objects that use it.
//
// Small content (up to Options.PackThreshold) is committed in groups:
// concurrent Puts of a tenant share one pack file, one fsync and one
// metadata transaction (Stats counts them). Larger content streams through
// a temporary file in constant memory: sealed and hashed as it arrives,
// fsynced, renamed into place, read back and verified.
//
// Content is sealed with a chunked AES-256-GCM stream under a key derived
// per file (per group commit for the small content of a pack, each entry
// numbered apart) from the tenant's data key; data keys are generated per tenant,
// wrapped under the caller's key-encryption key (KEK) and kept through
// KeyStore, outside the blob store. Backend file names are keyed hashes of
// the digests, so the storage shows neither content nor digests.
//
// Scrub re-reads every stored copy, marks mismatches corrupt, repairs a
// bad copy from the other tier, finishes interrupted deletions and removes
// orphaned files. Cold moves an object to the cold tier (a second backend)
// and Warm back. Delete drops an object and, with its last object, its
// content. At commit, text is extracted from messages and text documents
// (has_text; OpenText) for search; a plain-text message's text is the range of
// its content that is its body, not a second copy.
//
// Records live behind Meta and keys behind KeyStore, interfaces declared
// here and implemented by the server (on bbolt) and by vaulttest (in
// memory). ProviderStore adapts a tenant's vault to the svc_vault
// provider's vaultfs.Store. docs/vault.md describes the design and its
// decisions.
//
// # Stability
//
// Not yet stable: the vault's Go API is being shaped for the embedding package (issue 14 part
// 1); the stored format is stable, docs/vault.md. Its exported API may change between commits;
// docs/stability.md says what is stable and what will move.
package vault
