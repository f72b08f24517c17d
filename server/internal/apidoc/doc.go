// Package apidoc gives the comments of the API's protos (proto/svc/v1) to the OpenAPI
// generator: the Go descriptors generated from the protos do not carry comments, so
// scripts/generate also writes the descriptors with their source info to svc.binpb (buf build),
// which this package embeds and reads.
package apidoc
