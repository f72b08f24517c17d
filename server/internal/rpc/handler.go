package rpc

import (
	"context"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	svcv1 "svc.dev/svc/gen/svc/v1"
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

// OpClasses returns operation classes by their wire strings.
func OpClasses(ops []svcv1.OperationClass) []string {
	out := make([]string, 0, len(ops))
	for _, op := range ops {
		out = append(out, EnumWire(op))
	}
	return out
}

// OpEnums returns operation classes named by their wire strings as enum values.
func OpEnums(ops []string) []svcv1.OperationClass {
	out := make([]svcv1.OperationClass, 0, len(ops))
	for _, op := range ops {
		out = append(out, svcv1.OperationClass(EnumNumber(svcv1.OperationClass(0).Descriptor(), op)))
	}
	return out
}
