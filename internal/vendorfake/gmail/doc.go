// Package gmail is a local fake of the Gmail API v1 (the part svc's
// vendor_a_mail provider uses), written to Google's documented wire format:
// users.getProfile, users.labels.list, users.messages.list (newest first,
// page tokens, includeSpamTrash), users.messages.get (formats raw, metadata,
// minimal, full), users.messages.trash and untrash, users.history.list
// (404 for a start id older than the history kept), the batch endpoint
// (multipart/mixed of application/http parts, at most 100 calls), Google's
// JSON error bodies, and an OAuth 2.0 token endpoint at /token.
//
// A mailbox of n messages costs memory for the messages changed since it
// was made, not for n: message i is generated on demand from a pool of
// corpus messages (svc.dev/svc/internal/corpus), made unique by its id.
// So a fake of 100,000 messages is cheap enough for benchmarks.
//
// Faults (429 bursts with Retry-After, 5xx, slow answers, dropped
// connections, revoked grants, per-message failures) are injected through
// the embedded vendorfake.Base and FailMessage.
package gmail
