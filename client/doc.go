// Package client is a typed Go client for the hosted svc API.
//
// A [Client] is made from a base URL and a credential ([APIKey] or [Session]) with [New]. Its
// fields are the generated Connect clients of every service (Plans, Executions, Vault, ...), so
// each call takes and returns the API's own message types; what the package adds sits in one
// interceptor under all of them:
//
//   - Mutating calls of an idempotent endpoint (every method whose svc.v1.endpoint option is
//     idempotent) carry an Idempotency-Key header: the caller's, from [WithIdempotencyKey], or
//     one generated per call and kept across its retries, so a retried call is never applied
//     twice.
//   - Calls are retried on 429 and on 5xx, honouring Retry-After, with exponential backoff and
//     full jitter ([RetryPolicy]). A call is retried only when that is safe: it has no side
//     effects (idempotency_level NO_SIDE_EFFECTS), it carries an Idempotency-Key, or the server
//     refused it before doing anything (429).
//   - Errors are [*Error], typed from the problem document (RFC 9457) the server attaches to
//     every error: errors.As gives the HTTP status, the code, the field paths and what a
//     step-up needs.
//   - With an API key, a default connection ([Options].ConnectionID) is filled into every
//     request that has a connection_id field and does not set one.
//
// List methods have iterators that follow next_cursor to the end: [Client.Plans] lists through
// [All], as do the typed helpers such as [Client.ListPlans].
//
// # Why Connect, and where REST
//
// The client speaks Connect (over the code generated in gen/svc/v1/svcv1connect) because that
// gives every one of the API's methods typed requests and responses with no hand-written
// mapping that could drift from the protos, and the server attaches the full problem document
// to each Connect error. Two calls use REST instead, because their value is the exact bytes
// the server serves: a receipt ([Client.ReceiptJSON], [Client.VerifyReceipt]; its signature
// covers the canonical JSON, which a decoded message re-encoded need not reproduce) and the
// receipt key set at /.well-known/svc-receipts.json.
//
// # Verifying what the server sends
//
// [Client.VerifyReceipt] fetches a receipt and the published keys and checks it with
// [receipt.Verify], the same code the server signs against. [VerifyWebhook] checks a webhook
// delivery's Svc-Signature header against one or more secrets (both secrets during a rotation).
//
// # Stability
//
// The package's exported API is stable: New, Options, the credentials, Error, FieldError,
// RetryPolicy, All, the List helpers and the verification helpers change only additively, and
// any change is listed in docs/CHANGELOG.md (scripts/apicheck enforces it). The service
// clients' methods follow the protos, which change only additively within /v1.
package client
