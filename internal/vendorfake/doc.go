// Package vendorfake holds what the local fakes of vendor APIs share (the
// Gmail fake in vendorfake/gmail, the Drive fake in vendorfake/drive): an
// OAuth 2.0 token endpoint with revocable grants, bearer-token checks,
// Google's JSON error body, fault injection (bursts of 429 with
// Retry-After, 5xx, slow answers, dropped connections), a log of requests
// with their quota cost, and a recorder of every JSON body served, for the
// tests that hold the fakes to the vendors' published schemas.
//
// The fakes are test servers: loopback httptest servers with state in
// memory. They speak the vendors' documented wire format so that the real
// providers, pointed at them with their endpoint override, cannot tell.
package vendorfake
