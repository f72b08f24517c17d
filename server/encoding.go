package server

import (
	"google.golang.org/protobuf/reflect/protoreflect"

	"svc.dev/svc/wire"
)

// nonNil is s, or an empty slice for nil: lists are [] on the wire, never null.
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// enumNumber returns the number of the enum value whose wire string is s (0 if none).
func enumNumber(ed protoreflect.EnumDescriptor, s string) protoreflect.EnumNumber {
	n, _ := wire.ParseEnum(ed, s)
	return n
}

// enumWire is an enum value's wire string.
func enumWire(e protoreflect.Enum) string { return wire.EnumString(e.Descriptor(), e.Number()) }
