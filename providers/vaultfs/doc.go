// Package vaultfs is the svc_vault provider: the vault as a source (list
// and fetch what it holds) and as a destination (write content into it).
//
// It works over Store, a small content-addressed blob interface declared
// here, so that the vault package can plug its own store in (NewWithStore)
// without this package importing it. DirStore is a complete Store on a
// local directory, used when the provider is opened from configuration:
//
//	dir   required; the content-addressed directory (created if absent)
//
// Objects are blobs: id, version and SHA-256 are the blob's lowercase hex
// SHA-256; a write stores the content under its digest (writing the same
// content twice is idempotent) and Write's Path only names the blob. The
// one source is "vault" (or ""). Every read is verified against the digest,
// and a mismatch is an error wrapping providers.ErrInvalidData.
//
// Removing blobs is the vault's business (its retention and verification
// states), so this provider does not offer Trash or Remove.
//
// # Stability
//
// Internal to svc: Go refuses to import it from outside the module, and its API changes
// whenever svc needs it to; docs/stability.md says what is stable.
package vaultfs
