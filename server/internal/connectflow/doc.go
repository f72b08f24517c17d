// Package connectflow is the connect flow of the hosted API (docs/connect.md): an application
// starts a connect session with its key, the end user decides on the consent page, possibly
// connecting a new source at a provider through OAuth 2 with PKCE on the way, and an approval
// becomes a connection whose grant the edge enforces. A signed-in user can also connect a
// provider account for themselves (a user connect session, no application) and connect a
// local folder or an S3-compatible bucket.
//
// The package holds the flow's rules and pages; the server package wires it: it decodes a
// request, makes one call to a Flow and encodes the answer. What the flow needs of the edge
// (audit, events, rate limits, CSRF, the request's caller) it asks through the Edge interface.
package connectflow
