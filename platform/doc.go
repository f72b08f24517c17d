// Package platform is svc's developer platform and the rules every request obeys: end-user
// accounts and sessions, developer organizations, applications, API keys, delegated connections
// and their grants, tenancy (test and live are separate tenants), idempotency, rate limits and
// pagination cursors.
//
// Storage reaches the package through the small interfaces it declares (AccountStore,
// DeveloperStore, IdempotencyStore); the hosted binary backs them with bbolt (package store).
// Secrets are never stored in the clear: passwords as argon2id hashes, session tokens and API
// keys as SHA-256 hashes of high-entropy random values.
//
// # Stability
//
// Internal to svc: Go refuses to import it from outside the module, and its API changes
// whenever svc needs it to; docs/stability.md says what is stable.
package platform
