// Package plugin carries providers across a process boundary: version 1 of
// the svc provider plugin protocol over go-plugin's gRPC transport (magic
// cookie handshake, AutoMTLS, a versioned plugin set).
//
// A plugin author's main is one call:
//
//	func main() {
//		plugin.Serve(myprovider.Description, myprovider.New)
//	}
//
// On the host, a [Plugin] runs one plugin executable and turns it back into
// providers.Provider values. The host checks every response against the
// protocol's rules (protovalidate, or for listing pages an equivalent
// decoder in listwire.go; an invalid response becomes
// providers.ErrInvalidResponse), bounds every call and every chunk with a
// deadline (providers.ErrPluginTimeout), turns a crash into
// providers.ErrPluginCrashed for the calls in flight, and starts the plugin
// again on the next call, re-opening the provider instances it had. Page
// tokens are stateless, so a listing resumes where it stopped.
//
// Fetched content travels on content lanes (lane.go): a unix socket and
// shared memory next to the gRPC connection, because gRPC's framing held
// streaming to a fraction of in-process speed.
//
// # Stability
//
// The exported API is stable: it changes only additively, each change is listed in
// docs/CHANGELOG.md, and scripts/apicheck fails CI when it changes without an entry
// (docs/stability.md). Serve and the plugin protocol version are what out-of-process provider
// plugins build on.
package plugin
