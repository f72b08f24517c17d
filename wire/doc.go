// Package wire is the API's JSON: the one codec that turns the proto messages of svc.v1 into
// the spec's wire format and back, for REST, for Connect's JSON, and for the canonical bytes
// that plans, receipts and manifests are hashed over.
//
// The format differs from protojson on purpose, and is read from the descriptors:
//
//   - a field's name is its json_name when one is set explicitly, else its proto name, so the
//     spec's snake_case and camelCase resources are both spelled exactly as the spec spells them;
//   - integers are JSON numbers (protojson writes 64-bit integers as strings);
//   - an enum value is the string in its (svc.v1.wire) option ("draft", "CONFIRMED");
//   - every field is always written: arrays as [] when empty, unset fields with presence as
//     null (or left out, when the field has (svc.v1.omit_unset));
//   - google.protobuf.Timestamp is an RFC 3339 UTC string, Struct/Value/ListValue are plain JSON.
//
// Output is deterministic: fields in declaration order, map keys sorted, no insignificant
// whitespace. Decoding is strict: unknown fields, wrong types, unknown enum strings and
// out-of-range integers are errors that name the offending JSON path.
//
// # Stability
//
// The exported API is stable: it changes only additively, each change is listed in
// docs/CHANGELOG.md, and scripts/apicheck fails CI when it changes without an entry
// (docs/stability.md). Its output bytes are part of the hashes of plans, receipts and
// manifests, so they change only with those formats' versions.
package wire
