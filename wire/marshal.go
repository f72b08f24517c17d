package wire

import (
	"encoding/base64"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// Well-known message names handled as JSON values rather than objects of their fields.
const (
	timestampName protoreflect.FullName = "google.protobuf.Timestamp"
	structName    protoreflect.FullName = "google.protobuf.Struct"
	valueName     protoreflect.FullName = "google.protobuf.Value"
	listValueName protoreflect.FullName = "google.protobuf.ListValue"
)

// buffers recycles encoding buffers so that large responses do not regrow one each time.
var buffers = sync.Pool{New: func() any { b := make([]byte, 0, 4096); return &b }}

// Marshal returns the wire JSON of m.
func Marshal(m proto.Message) ([]byte, error) {
	bp := buffers.Get().(*[]byte)
	b, err := Append((*bp)[:0], m)
	if err != nil {
		buffers.Put(bp)
		return nil, err
	}
	out := append([]byte(nil), b...)
	if cap(b) <= 4<<20 { // do not pin huge buffers
		*bp = b
		buffers.Put(bp)
	}
	return out, nil
}

// Append appends the wire JSON of m to b.
func Append(b []byte, m proto.Message) ([]byte, error) {
	return appendMessage(b, m.ProtoReflect())
}

// writeAt is how much of a message Write holds before it writes it out.
const writeAt = 64 << 10

// Write writes the wire JSON of m to w, the same bytes Marshal returns, holding at most about
// 64 KiB besides the largest element of a repeated field of m: the elements of m's own lists
// (a plan's objects) are written out as they are encoded. A message that encodes in fewer
// bytes reaches w in one Write, after it is whole, so an error comes before anything is
// written; written reports whether anything was.
func Write(w io.Writer, m proto.Message) (written bool, err error) {
	bp := buffers.Get().(*[]byte)
	defer func() {
		if cap(*bp) <= 4<<20 {
			buffers.Put(bp)
		}
	}()
	flush := func(b []byte) ([]byte, error) {
		written = true
		_, err := w.Write(b)
		return b[:0], err
	}
	b, err := appendFields((*bp)[:0], m.ProtoReflect(), flush)
	if err == nil && len(b) > 0 {
		b, err = flush(b)
	}
	*bp = b[:0]
	return written, err
}

func appendMessage(b []byte, m protoreflect.Message) ([]byte, error) {
	return appendFields(b, m, nil)
}

// appendFields appends the JSON object of m; with flush, each element of m's lists is followed
// by a call of flush (which writes out the buffer and returns it emptied) once the buffer
// holds writeAt bytes.
func appendFields(b []byte, m protoreflect.Message, flush func([]byte) ([]byte, error)) ([]byte, error) {
	md := m.Descriptor()
	switch md.FullName() {
	case timestampName:
		return appendTimestamp(b, m)
	case structName, valueName, listValueName:
		return appendStructValue(b, m.Interface())
	}
	desc := describe(md)
	b = append(b, '{')
	first := true
	var err error
	for i := range desc.fields {
		f := &desc.fields[i]
		if f.realOneof && !m.Has(f.fd) {
			continue // a real oneof writes only its set member
		}
		unset := f.nullable && !m.Has(f.fd)
		if f.omitUnset && (unset || ((f.fd.IsList() || f.fd.IsMap()) && !m.Has(f.fd))) {
			continue
		}
		if !first {
			b = append(b, ',')
		}
		first = false
		b = append(b, f.quoted...)
		switch {
		case unset:
			b = append(b, "null"...)
		case f.fd.IsList():
			b, err = appendList(b, f, m.Get(f.fd).List(), flush)
		case f.fd.IsMap():
			b, err = appendMap(b, f, m.Get(f.fd).Map())
		default:
			b, err = appendSingular(b, f.fd, f.enum, m.Get(f.fd))
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f.name, err)
		}
	}
	return append(b, '}'), nil
}

func appendList(b []byte, f *field, l protoreflect.List, flush func([]byte) ([]byte, error)) ([]byte, error) {
	b = append(b, '[')
	var err error
	for i := range l.Len() {
		if i > 0 {
			b = append(b, ',')
		}
		if b, err = appendSingular(b, f.fd, f.enum, l.Get(i)); err != nil {
			return nil, fmt.Errorf("[%d]: %w", i, err)
		}
		if flush != nil && len(b) >= writeAt {
			if b, err = flush(b); err != nil {
				return nil, err
			}
		}
	}
	return append(b, ']'), nil
}

func appendMap(b []byte, f *field, mp protoreflect.Map) ([]byte, error) {
	keys := make([]protoreflect.MapKey, 0, mp.Len())
	mp.Range(func(k protoreflect.MapKey, _ protoreflect.Value) bool {
		keys = append(keys, k)
		return true
	})
	slices.SortFunc(keys, func(x, y protoreflect.MapKey) int {
		xs, ys := x.String(), y.String()
		switch {
		case xs < ys:
			return -1
		case xs > ys:
			return 1
		}
		return 0
	})
	b = append(b, '{')
	var err error
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, k.String())
		b = append(b, ':')
		if b, err = appendSingular(b, f.fd.MapValue(), f.enum, mp.Get(k)); err != nil {
			return nil, fmt.Errorf("[%q]: %w", k.String(), err)
		}
	}
	return append(b, '}'), nil
}

func appendSingular(b []byte, fd protoreflect.FieldDescriptor, enum *enumNames, v protoreflect.Value) ([]byte, error) {
	switch fd.Kind() {
	case protoreflect.BoolKind:
		return strconv.AppendBool(b, v.Bool()), nil
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind,
		protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		return strconv.AppendInt(b, v.Int(), 10), nil
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind, protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return strconv.AppendUint(b, v.Uint(), 10), nil
	case protoreflect.FloatKind:
		return appendFloat(b, v.Float(), 32)
	case protoreflect.DoubleKind:
		return appendFloat(b, v.Float(), 64)
	case protoreflect.StringKind:
		return appendString(b, v.String()), nil
	case protoreflect.BytesKind:
		b = append(b, '"')
		b = base64.StdEncoding.AppendEncode(b, v.Bytes())
		return append(b, '"'), nil
	case protoreflect.EnumKind:
		s := enum.toWire[v.Enum()]
		if s == "" {
			if v.Enum() == 0 {
				return append(b, "null"...), nil
			}
			return nil, fmt.Errorf("enum %s has no wire name for %d", fd.Enum().FullName(), v.Enum())
		}
		return appendString(b, s), nil
	case protoreflect.MessageKind, protoreflect.GroupKind:
		return appendMessage(b, v.Message())
	}
	return nil, fmt.Errorf("unsupported field kind %v", fd.Kind())
}

// appendFloat writes a number the way encoding/json and ECMAScript do (no exponent for
// 1e-6 <= |f| < 1e21); NaN and infinities have no JSON form.
func appendFloat(b []byte, f float64, bits int) ([]byte, error) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return nil, fmt.Errorf("number %v has no JSON form", f)
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (bits == 64 && (abs < 1e-6 || abs >= 1e21) ||
		bits == 32 && (float32(abs) < 1e-6 || float32(abs) >= 1e21)) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, bits)
	if format == 'e' {
		// 1e-07 -> 1e-7
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b, nil
}

func appendTimestamp(b []byte, m protoreflect.Message) ([]byte, error) {
	ts, ok := m.Interface().(*timestamppb.Timestamp)
	if !ok {
		ts = &timestamppb.Timestamp{}
		proto.Merge(ts, m.Interface())
	}
	if err := ts.CheckValid(); err != nil {
		return nil, err
	}
	b = append(b, '"')
	b = ts.AsTime().UTC().AppendFormat(b, time.RFC3339Nano)
	return append(b, '"'), nil
}

func appendStructValue(b []byte, m proto.Message) ([]byte, error) {
	switch v := m.(type) {
	case *structpb.Struct:
		return appendStruct(b, v)
	case *structpb.ListValue:
		return appendListValue(b, v)
	case *structpb.Value:
		return appendValue(b, v)
	}
	return nil, fmt.Errorf("unsupported well-known type %T", m)
}

func appendStruct(b []byte, s *structpb.Struct) ([]byte, error) {
	keys := make([]string, 0, len(s.GetFields()))
	for k := range s.GetFields() {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	b = append(b, '{')
	var err error
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, k)
		b = append(b, ':')
		if b, err = appendValue(b, s.GetFields()[k]); err != nil {
			return nil, err
		}
	}
	return append(b, '}'), nil
}

func appendListValue(b []byte, l *structpb.ListValue) ([]byte, error) {
	b = append(b, '[')
	var err error
	for i, v := range l.GetValues() {
		if i > 0 {
			b = append(b, ',')
		}
		if b, err = appendValue(b, v); err != nil {
			return nil, err
		}
	}
	return append(b, ']'), nil
}

func appendValue(b []byte, v *structpb.Value) ([]byte, error) {
	switch k := v.GetKind().(type) {
	case nil, *structpb.Value_NullValue:
		return append(b, "null"...), nil
	case *structpb.Value_BoolValue:
		return strconv.AppendBool(b, k.BoolValue), nil
	case *structpb.Value_NumberValue:
		return appendFloat(b, k.NumberValue, 64)
	case *structpb.Value_StringValue:
		return appendString(b, k.StringValue), nil
	case *structpb.Value_StructValue:
		return appendStruct(b, k.StructValue)
	case *structpb.Value_ListValue:
		return appendListValue(b, k.ListValue)
	}
	return nil, fmt.Errorf("unsupported value kind %T", v.GetKind())
}

const hex = "0123456789abcdef"

// appendString writes s as a JSON string. Only what JSON requires is escaped (no HTML
// escaping), and invalid UTF-8 becomes U+FFFD.
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, "\ufffd"...)
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// AppendString appends s as a JSON string, escaped as the wire format and RFC 8785 escape it.
func AppendString(b []byte, s string) []byte { return appendString(b, s) }
