package wire

import (
	"sync"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	svcv1 "svc.dev/svc/gen/svc/v1"
)

// field is what the codec needs to know about one field, computed once per message type.
type field struct {
	fd        protoreflect.FieldDescriptor
	name      string // JSON name on the wire
	quoted    []byte // `"name":`
	omitUnset bool
	nullable  bool // has presence: unset is written as null
	realOneof bool // member of a non-synthetic oneof: written only when set
	enum      *enumNames
}

// message is the codec's view of one message type.
type message struct {
	fields []field
	byName map[string]*field

	sortOnce sync.Once
	byKey    []*field // fields in canonical (UTF-16 name) order
}

var messages sync.Map // protoreflect.FullName -> *message

// JSONName returns the wire name of a field: its proto name (snake_case), or its
// lowerCamelCase JSON name when the message is marked (svc.v1.json_camel_case), or a json_name
// that differs from the default one protoc derives.
func JSONName(fd protoreflect.FieldDescriptor) string {
	if fd.JSONName() != defaultJSONName(string(fd.Name())) {
		return fd.JSONName()
	}
	if md := fd.ContainingMessage(); md != nil {
		if camel, _ := proto.GetExtension(md.Options(), svcv1.E_JsonCamelCase).(bool); camel {
			return fd.JSONName()
		}
	}
	return string(fd.Name())
}

// defaultJSONName is protoc's json_name for a field without one: underscores dropped and the
// letter after each capitalized.
func defaultJSONName(name string) string {
	b := make([]byte, 0, len(name))
	upper := false
	for i := range len(name) {
		c := name[i]
		switch {
		case c == '_':
			upper = true
		case upper && 'a' <= c && c <= 'z':
			b = append(b, c-'a'+'A')
			upper = false
		default:
			b = append(b, c)
			upper = false
		}
	}
	return string(b)
}

func describe(md protoreflect.MessageDescriptor) *message {
	if m, ok := messages.Load(md.FullName()); ok {
		return m.(*message)
	}
	fds := md.Fields()
	m := &message{fields: make([]field, fds.Len()), byName: make(map[string]*field, fds.Len())}
	for i := range fds.Len() {
		fd := fds.Get(i)
		name := JSONName(fd)
		f := &m.fields[i]
		*f = field{
			fd:       fd,
			name:     name,
			quoted:   append(appendString(nil, name), ':'),
			nullable: fd.HasPresence() && !fd.IsList() && !fd.IsMap(),
		}
		if od := fd.ContainingOneof(); od != nil && !od.IsSynthetic() {
			f.realOneof = true
		}
		if fd.Kind() == protoreflect.EnumKind {
			f.enum = describeEnum(fd.Enum())
		} else if fd.IsMap() && fd.MapValue().Kind() == protoreflect.EnumKind {
			f.enum = describeEnum(fd.MapValue().Enum())
		}
		if opts := fd.Options(); opts != nil {
			f.omitUnset, _ = proto.GetExtension(opts, svcv1.E_OmitUnset).(bool)
		}
		m.byName[name] = f
	}
	actual, _ := messages.LoadOrStore(md.FullName(), m)
	return actual.(*message)
}

// enumNames caches the wire strings of an enum type in both directions.
type enumNames struct {
	toWire   map[protoreflect.EnumNumber]string
	fromWire map[string]protoreflect.EnumNumber
	all      []string
}

var enums sync.Map // protoreflect.FullName -> *enumNames

// EnumValues returns the wire strings of an enum type in declaration order.
func EnumValues(ed protoreflect.EnumDescriptor) []string {
	return describeEnum(ed).all
}

// EnumString returns the wire string of an enum value, or "" when it has none.
func EnumString(ed protoreflect.EnumDescriptor, n protoreflect.EnumNumber) string {
	return describeEnum(ed).toWire[n]
}

// ParseEnum returns the enum number whose wire string is s.
func ParseEnum(ed protoreflect.EnumDescriptor, s string) (protoreflect.EnumNumber, bool) {
	n, ok := describeEnum(ed).fromWire[s]
	return n, ok
}

func describeEnum(ed protoreflect.EnumDescriptor) *enumNames {
	if e, ok := enums.Load(ed.FullName()); ok {
		return e.(*enumNames)
	}
	e := &enumNames{toWire: map[protoreflect.EnumNumber]string{}, fromWire: map[string]protoreflect.EnumNumber{}}
	vals := ed.Values()
	for i := range vals.Len() {
		v := vals.Get(i)
		s, _ := proto.GetExtension(v.Options(), svcv1.E_Wire).(string)
		if s == "" {
			continue
		}
		e.toWire[v.Number()] = s
		e.fromWire[s] = v.Number()
		e.all = append(e.all, s)
	}
	actual, _ := enums.LoadOrStore(ed.FullName(), e)
	return actual.(*enumNames)
}
