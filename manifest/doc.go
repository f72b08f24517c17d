// Package manifest builds Portable Asset Manifests (v1.0): one document per asset that says
// where it came from (source), what it is (content, permissions), where its verified copy is
// (vault), what was made from it (transformations, derived), where it was written
// (destinations), its lineage, the executions that touched it, and how it can be restored.
//
// New creates an asset's manifest when it is discovered or first preserved; Apply folds in
// what one execution did to it (idempotently: applying the same update twice changes nothing,
// so an execution resumed after a crash may apply it again). Both seal the manifest: its hash is
// the SHA-256 (lowercase hex) of the RFC 8785 canonical JSON of the manifest as served, without
// hash.
//
// Bundle and WriteBundle export a tenant's manifests as a bundle (bundleVersion 1.0) whose
// bundleHash is the SHA-256 of the canonical JSON of the bundle without bundleHash;
// WriteBundle streams, for exports of any size. VerifyBundle checks an exported bundle from its
// bytes. docs/manifests.md shows how a third party recomputes both hashes.
//
// # Stability
//
// The exported API is stable: it changes only additively, each change is listed in
// docs/CHANGELOG.md, and scripts/apicheck fails CI when it changes without an entry
// (docs/stability.md). Manifest and bundle hashes are fixed by manifestVersion and
// bundleVersion 1.0.
package manifest
