// Package providers is the provider interface svc uses for everything it does
// to a person's content at an external provider (mail, files, object stores),
// and the SDK third parties use to write one.
//
// A provider implements the small required interface [Provider]: describe
// itself, list a source page by page with the source's revision marker, list
// changes since a marker, and fetch content as a stream against an expected
// version. What it can do beyond that it says by implementing optional
// one-method interfaces: [Trasher], [Remover], [Untrasher], [Writer] and
// [Quotaer]. Callers find them with [AsTrasher] and friends, which also honour
// a provider's [CapabilityMasker] (the plugin host wraps every plugin in one
// type and masks what the plugin did not declare).
//
// Every type in this package is plain Go: no generated protocol types appear
// in the API. The plugin protocol, its host and its server live in
// svc.dev/svc/providers/plugin; the conformance suite every provider must pass
// lives in svc.dev/svc/providers/providertest.
//
// Providers are registered explicitly in a [Registry] built in one place (see
// svc.dev/svc/providers/builtin) and injected where needed; nothing registers
// itself in init.
//
// # Stability
//
// The exported API is stable: it changes only additively, each change is listed in
// docs/CHANGELOG.md, and scripts/apicheck fails CI when it changes without an entry
// (docs/stability.md). It is the provider SDK: the Provider interface, its optional
// capabilities, Registry and the sentinel errors.
package providers
