package rpc

import (
	"context"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"svc.dev/svc/wire"
)

// Handler is a method's implementation as the edge's method table holds it.
type Handler func(ctx context.Context, req proto.Message) (proto.Message, error)

// Handle adapts a typed implementation to a Handler.
func Handle[Req, Res proto.Message](fn func(context.Context, Req) (Res, error)) Handler {
	return func(ctx context.Context, req proto.Message) (proto.Message, error) {
		return fn(ctx, req.(Req))
	}
}

// NonNil is s, or an empty slice for nil: lists are [] on the wire, never null.
func NonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// EnumNumber returns the number of the enum value whose wire string is s (0 if none).
func EnumNumber(ed protoreflect.EnumDescriptor, s string) protoreflect.EnumNumber {
	n, _ := wire.ParseEnum(ed, s)
	return n
}

// EnumWire is an enum value's wire string.
func EnumWire(e protoreflect.Enum) string { return wire.EnumString(e.Descriptor(), e.Number()) }
