package wire

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"unicode/utf16"

	"github.com/gowebpki/jcs"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/structpb"
)

// Canonical JSON (RFC 8785, JCS) of the wire format, for hashing plans, receipts and
// manifests. It is the wire JSON with object members sorted by their names' UTF-16 code units,
// numbers in ECMAScript form, and JCS string escaping (which appendString already follows).
// It is produced straight from the message, without building a JSON tree, and written out in
// chunks, so a plan of a million objects is hashed in bounded memory. gowebpki/jcs, applied to
// the wire JSON, gives the same bytes (tested); it needs the whole document in memory.

// maxSafeInteger is the largest integer an IEEE double (and so JCS) holds exactly.
const maxSafeInteger = 1<<53 - 1

// flushAt is the buffer size at which canonical output is handed to the writer.
const flushAt = 32 << 10

// Canonical writes the canonical JSON of m to w. With fields, only those top-level members
// (wire names) are written: the material fields of a plan, say.
func Canonical(w io.Writer, m proto.Message, fields ...string) error {
	c := &Canon{w: w, buf: make([]byte, 0, flushAt+4096)}
	c.Message(m.ProtoReflect(), fields)
	return c.Close()
}

// CanonicalBytes returns the canonical JSON of m (see Canonical).
func CanonicalBytes(m proto.Message, fields ...string) ([]byte, error) {
	c := &Canon{}
	c.Message(m.ProtoReflect(), fields)
	return c.buf, c.err
}

// Canon is a canonical JSON writer, for callers that assemble a document from parts (the plan
// hash writes its object array with a faster encoder). Errors are sticky; Close reports them.
type Canon struct {
	w   io.Writer
	buf []byte
	err error
}

// NewCanon returns a canonical writer to w.
func NewCanon(w io.Writer) *Canon { return &Canon{w: w, buf: make([]byte, 0, flushAt+4096)} }

// Raw appends bytes that the caller guarantees are canonical JSON.
func (c *Canon) Raw(b ...byte) { c.buf = append(c.buf, b...) }

// Buffer gives direct access to the pending output, for fast encoders; give it back with
// SetBuffer.
func (c *Canon) Buffer() []byte { return c.buf }

// SetBuffer replaces the pending output and flushes it when it is large.
func (c *Canon) SetBuffer(b []byte) {
	c.buf = b
	c.maybeFlush()
}

// String appends a canonical JSON string.
func (c *Canon) String(s string) { c.buf = appendString(c.buf, s) }

// Fail records an error.
func (c *Canon) Fail(err error) {
	if c.err == nil {
		c.err = err
	}
}

func (c *Canon) maybeFlush() {
	if c.w != nil && len(c.buf) >= flushAt && c.err == nil {
		_, c.err = c.w.Write(c.buf)
		c.buf = c.buf[:0]
	}
}

// Close flushes what is pending and returns the first error.
func (c *Canon) Close() error {
	if c.w != nil && c.err == nil && len(c.buf) > 0 {
		_, c.err = c.w.Write(c.buf)
		c.buf = c.buf[:0]
	}
	return c.err
}

// Field appends the canonical value of one field of m (by wire name), without its name.
func (c *Canon) Field(m protoreflect.Message, name string) {
	f := describe(m.Descriptor()).byName[name]
	if f == nil {
		c.Fail(fmt.Errorf("no field %q in %s", name, m.Descriptor().FullName()))
		return
	}
	c.field(m, f)
}

// Message appends the canonical JSON of m, restricted to fields when there are any.
func (c *Canon) Message(m protoreflect.Message, fields []string) {
	md := m.Descriptor()
	switch md.FullName() {
	case timestampName:
		b, err := appendTimestamp(c.buf, m)
		c.set(b, err)
		return
	case structName, valueName, listValueName:
		c.structValue(m.Interface())
		return
	}
	desc := describe(md)
	c.buf = append(c.buf, '{')
	first := true
	for _, f := range desc.sorted() {
		if fields != nil && !slices.Contains(fields, f.name) {
			continue
		}
		if f.realOneof && !m.Has(f.fd) {
			continue
		}
		if f.omitUnset && !m.Has(f.fd) && (f.nullable || f.fd.IsList() || f.fd.IsMap()) {
			continue
		}
		if !first {
			c.buf = append(c.buf, ',')
		}
		first = false
		c.buf = append(c.buf, f.quoted...)
		c.field(m, f)
	}
	c.buf = append(c.buf, '}')
}

func (c *Canon) set(b []byte, err error) {
	if err != nil {
		c.Fail(err)
		return
	}
	c.buf = b
}

func (c *Canon) field(m protoreflect.Message, f *field) {
	switch {
	case f.nullable && !m.Has(f.fd):
		c.buf = append(c.buf, "null"...)
	case f.fd.IsList():
		l := m.Get(f.fd).List()
		c.buf = append(c.buf, '[')
		for i := range l.Len() {
			if i > 0 {
				c.buf = append(c.buf, ',')
			}
			c.singular(f.fd, f.enum, l.Get(i))
			c.maybeFlush()
		}
		c.buf = append(c.buf, ']')
	case f.fd.IsMap():
		mp := m.Get(f.fd).Map()
		keys := make([]string, 0, mp.Len())
		vals := map[string]protoreflect.Value{}
		mp.Range(func(k protoreflect.MapKey, v protoreflect.Value) bool {
			keys = append(keys, k.String())
			vals[k.String()] = v
			return true
		})
		slices.SortFunc(keys, compareUTF16)
		c.buf = append(c.buf, '{')
		for i, k := range keys {
			if i > 0 {
				c.buf = append(c.buf, ',')
			}
			c.buf = append(appendString(c.buf, k), ':')
			c.singular(f.fd.MapValue(), f.enum, vals[k])
		}
		c.buf = append(c.buf, '}')
	default:
		c.singular(f.fd, f.enum, m.Get(f.fd))
	}
}

func (c *Canon) singular(fd protoreflect.FieldDescriptor, enum *enumNames, v protoreflect.Value) {
	switch fd.Kind() {
	case protoreflect.MessageKind, protoreflect.GroupKind:
		c.Message(v.Message(), nil)
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind,
		protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		c.Int(v.Int())
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind, protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		if v.Uint() > maxSafeInteger {
			c.Fail(fmt.Errorf("integer %d is beyond the exact range of JSON numbers", v.Uint()))
			return
		}
		c.buf = strconv.AppendUint(c.buf, v.Uint(), 10)
	case protoreflect.FloatKind, protoreflect.DoubleKind:
		c.Number(v.Float())
	default:
		b, err := appendSingular(c.buf, fd, enum, v)
		c.set(b, err)
	}
}

// Int appends an integer, which must be exactly representable as a JSON (double) number.
func (c *Canon) Int(n int64) {
	if n > maxSafeInteger || n < -maxSafeInteger {
		c.Fail(fmt.Errorf("integer %d is beyond the exact range of JSON numbers", n))
		return
	}
	c.buf = strconv.AppendInt(c.buf, n, 10)
}

// Number appends a double in ECMAScript form.
func (c *Canon) Number(f float64) {
	s, err := jcs.NumberToJSON(f)
	if err != nil {
		c.Fail(err)
		return
	}
	c.buf = append(c.buf, s...)
}

func (c *Canon) structValue(m proto.Message) {
	switch v := m.(type) {
	case *structpb.Struct:
		c.structFields(v)
	case *structpb.ListValue:
		c.listValue(v)
	case *structpb.Value:
		c.value(v)
	}
}

func (c *Canon) structFields(s *structpb.Struct) {
	keys := make([]string, 0, len(s.GetFields()))
	for k := range s.GetFields() {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, compareUTF16)
	c.buf = append(c.buf, '{')
	for i, k := range keys {
		if i > 0 {
			c.buf = append(c.buf, ',')
		}
		c.buf = append(appendString(c.buf, k), ':')
		c.value(s.GetFields()[k])
	}
	c.buf = append(c.buf, '}')
}

func (c *Canon) listValue(l *structpb.ListValue) {
	c.buf = append(c.buf, '[')
	for i, v := range l.GetValues() {
		if i > 0 {
			c.buf = append(c.buf, ',')
		}
		c.value(v)
	}
	c.buf = append(c.buf, ']')
}

func (c *Canon) value(v *structpb.Value) {
	switch k := v.GetKind().(type) {
	case *structpb.Value_NumberValue:
		c.Number(k.NumberValue)
	case *structpb.Value_StructValue:
		c.structFields(k.StructValue)
	case *structpb.Value_ListValue:
		c.listValue(k.ListValue)
	default:
		b, err := appendValue(c.buf, v)
		c.set(b, err)
	}
}

// compareUTF16 orders strings by their UTF-16 code units, as RFC 8785 sorts member names.
func compareUTF16(a, b string) int {
	ua, ub := utf16.Encode([]rune(a)), utf16.Encode([]rune(b))
	return slices.Compare(ua, ub)
}

// sorted returns the message's fields ordered by wire name in UTF-16 order, computed once.
func (m *message) sorted() []*field {
	m.sortOnce.Do(func() {
		m.byKey = make([]*field, len(m.fields))
		for i := range m.fields {
			m.byKey[i] = &m.fields[i]
		}
		slices.SortFunc(m.byKey, func(a, b *field) int { return compareUTF16(a.name, b.name) })
	})
	return m.byKey
}
