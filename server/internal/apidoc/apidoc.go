package apidoc

import (
	_ "embed"
	"strings"
	"sync"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"
)

//go:embed svc.binpb
var raw []byte

// Field numbers of descriptor.proto that source-info paths go through.
const (
	fileMessage   = 4 // FileDescriptorProto.message_type
	fileEnum      = 5 // FileDescriptorProto.enum_type
	fileService   = 6 // FileDescriptorProto.service
	messageField  = 2 // DescriptorProto.field
	messageNested = 3 // DescriptorProto.nested_type
	messageEnum   = 4 // DescriptorProto.enum_type
	serviceMethod = 2 // ServiceDescriptorProto.method
	enumValue     = 2 // EnumDescriptorProto.value
)

var comments = sync.OnceValues(func() (map[protoreflect.FullName]string, error) {
	var set descriptorpb.FileDescriptorSet
	if err := proto.Unmarshal(raw, &set); err != nil {
		return nil, err
	}
	out := map[protoreflect.FullName]string{}
	for _, f := range set.GetFile() {
		names := map[string]protoreflect.FullName{}
		pkg := protoreflect.FullName(f.GetPackage())
		key := func(path ...int32) string {
			var b strings.Builder
			for _, p := range path {
				b.WriteString(string(rune(p + 1)))
			}
			return b.String()
		}
		var message func(prefix protoreflect.FullName, m *descriptorpb.DescriptorProto, path []int32)
		enum := func(prefix protoreflect.FullName, e *descriptorpb.EnumDescriptorProto, path []int32) {
			name := prefix.Append(protoreflect.Name(e.GetName()))
			names[key(path...)] = name
			for i, v := range e.GetValue() {
				// Enum values are scoped beside their enum, as in protobuf.
				names[key(append(path, enumValue, int32(i))...)] = prefix.Append(protoreflect.Name(v.GetName()))
			}
		}
		message = func(prefix protoreflect.FullName, m *descriptorpb.DescriptorProto, path []int32) {
			name := prefix.Append(protoreflect.Name(m.GetName()))
			names[key(path...)] = name
			for i, fd := range m.GetField() {
				names[key(append(path, messageField, int32(i))...)] = name.Append(protoreflect.Name(fd.GetName()))
			}
			for i, n := range m.GetNestedType() {
				message(name, n, append(append([]int32{}, path...), messageNested, int32(i)))
			}
			for i, e := range m.GetEnumType() {
				enum(name, e, append(append([]int32{}, path...), messageEnum, int32(i)))
			}
		}
		for i, m := range f.GetMessageType() {
			message(pkg, m, []int32{fileMessage, int32(i)})
		}
		for i, e := range f.GetEnumType() {
			enum(pkg, e, []int32{fileEnum, int32(i)})
		}
		for i, s := range f.GetService() {
			name := pkg.Append(protoreflect.Name(s.GetName()))
			names[key(fileService, int32(i))] = name
			for j, m := range s.GetMethod() {
				names[key(fileService, int32(i), serviceMethod, int32(j))] = name.Append(protoreflect.Name(m.GetName()))
			}
		}
		for _, loc := range f.GetSourceCodeInfo().GetLocation() {
			if name, ok := names[key(loc.GetPath()...)]; ok && loc.GetLeadingComments() != "" {
				out[name] = cleanComment(loc.GetLeadingComments())
			}
		}
	}
	return out, nil
})

// cleanComment joins a comment's lines, keeping paragraph breaks.
func cleanComment(c string) string {
	var paras []string
	for p := range strings.SplitSeq(c, "\n\n") {
		if p = strings.Join(strings.Fields(p), " "); p != "" {
			paras = append(paras, p)
		}
	}
	return strings.Join(paras, "\n\n")
}

// Comment returns the leading comment of the proto element with this full name (a service, a
// method, a message, a field, an enum or an enum value), or "" when it has none.
func Comment(name protoreflect.FullName) string {
	m, err := comments()
	if err != nil {
		return ""
	}
	return m[name]
}
