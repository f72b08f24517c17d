// Package vendorfake holds what the local fakes of vendor APIs share (Gmail
// in vendorfake/gmail, Drive in vendorfake/drive, Microsoft Graph in
// vendorfake/graph, Dropbox in vendorfake/dropbox):
//
//   - Grants, the authorization server's state every fake keeps: the
//     access tokens it accepts, refresh tokens that mint more, revocation
//     and early expiry, and the authorization endpoint (Authorize, which
//     consents at once) and the exchange of its codes (Exchange, with
//     PKCE), which each fake mounts at its vendor's paths;
//   - Traffic, the Graph and Dropbox fakes' request count, arrival times
//     (for pacing tests) and path faults (PathFault);
//   - Base, the Google fakes' server: an OAuth 2.0 token endpoint, bearer
//     checks, Google's JSON error body, queued faults (429 with
//     Retry-After, 5xx, slow answers, dropped connections), a log of
//     requests with their quota cost, and a recorder of every JSON body
//     served;
//   - for the shape tests that hold the fakes to the vendors' published
//     descriptions: Discovery (Google's discovery documents), CheckServed,
//     Coverage (which schemas or routes a test checked, and which it did
//     not), DecodeJSON and Consent (a run of the authorization code flow).
//
// The fakes are test servers: loopback httptest servers with state in
// memory. They speak the vendors' documented wire format so that the real
// providers, pointed at them with their endpoint override, cannot tell.
package vendorfake
