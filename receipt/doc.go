// Package receipt builds, hashes, signs and verifies receipts: the signed, tamper-evident
// record that every execution ends with.
//
// The execution engine fills an Input with what happened (FromPlan fills the plan's part) and
// calls Issue with a Signer (a Keyring). Issue builds the receipt (Build: objects and other
// arrays in canonical order, counters and byte totals derived from the objects), hashes it
// (Hash) and signs the hash, and returns the exact bytes the server stores and serves.
//
// The hash and signature are DESIGN.md guarantee 4: the served receipt JSON minus hash and
// signature, canonicalized with RFC 8785 (JCS), hashes (SHA-256, lowercase hex) to hash;
// signature.sig is the base64url (unpadded) Ed25519 signature over the UTF-8 bytes of hash,
// made with the key signature.kid of the JWK set served at /.well-known/svc-receipts.json.
//
// A Keyring keeps the signing keys in a directory (generated on first open, rotated with
// Rotate, old keys stay published in KeySet). Verify checks a served receipt offline against a
// key set, from the bytes alone, and says what failed with errors that match the Err*
// sentinels. docs/receipts.md shows how a third party recomputes everything.
//
// # Stability
//
// The exported API is stable: it changes only additively, each change is listed in
// docs/CHANGELOG.md, and scripts/apicheck fails CI when it changes without an entry
// (docs/stability.md). The canonical form, the hash and Verify are fixed by receiptVersion 1.
package receipt
