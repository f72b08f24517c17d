// Package vendorhttp is the HTTP plumbing the vendor connectors (vendor_a,
// vendor_b, vendor_c) share: a client that retries throttled and failed
// requests, paces them to the vendor's published quota, and authorizes them
// with an OAuth 2.0 token it refreshes.
//
// [NewClient] returns an *http.Client whose transport, per request:
//
//   - waits for the vendor's pacing ([Options.Limiter], [Options.Cost]: a
//     golang.org/x/time/rate limiter in the vendor's quota unit);
//   - authorizes it with [Credentials], refreshing the token before it
//     expires, and once more when the vendor answers 401; a refresh the
//     authorization server refuses (invalid_grant) or a second 401 fails the
//     request with an error matching providers.ErrReauthRequired;
//   - retries 429 always, and 5xx and dropped connections when the request
//     is idempotent, at most [Options.Attempts] times, waiting what
//     Retry-After says (delta-seconds or an HTTP-date) or else an exponential
//     backoff with full jitter, never past the context's deadline. When it
//     gives up it returns the vendor's last answer (or error) unchanged.
//
// Nothing here logs, and no error carries a token: [Credentials] never puts
// one in an error message.
package vendorhttp
