package wire

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// Error is a decoding error. Path is the JSON path of the offending value ("" for the
// document as a whole), written with the wire names: "policy.minAgeDays", "objects[2]".
type Error struct {
	Path string
	Msg  string
}

func (e *Error) Error() string {
	if e.Path == "" {
		return e.Msg
	}
	return e.Path + ": " + e.Msg
}

// Unmarshal decodes wire JSON into m, which it resets first. It rejects malformed JSON,
// documents that are not objects, unknown fields, values of the wrong type, unknown enum
// strings, out-of-range integers, bytes that are not UTF-8 and duplicate keys with an *Error.
// null leaves a field unset.
func Unmarshal(data []byte, m proto.Message) error {
	proto.Reset(m)
	data = bytes.TrimSpace(data)
	if !json.Valid(data) {
		return &Error{Msg: "malformed JSON"}
	}
	if len(data) == 0 || data[0] != '{' {
		return &Error{Msg: "the body must be a JSON object"}
	}
	if err := checkStrict(data); err != nil {
		return err
	}
	return decodeMessage("", data, m.ProtoReflect())
}

func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

func decodeMessage(path string, raw []byte, m protoreflect.Message) error {
	md := m.Descriptor()
	switch md.FullName() {
	case timestampName:
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return &Error{Path: path, Msg: "must be an RFC 3339 date-time string"}
		}
		return setTimestamp(path, s, m)
	case structName, valueName, listValueName:
		return decodeStructValue(path, raw, m)
	}
	if len(raw) == 0 || raw[0] != '{' {
		return &Error{Path: path, Msg: "must be an object"}
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil {
		return &Error{Path: path, Msg: "must be an object"}
	}
	desc := describe(md)
	for key, val := range obj {
		f, ok := desc.byName[key]
		p := join(path, key)
		if !ok {
			return &Error{Path: p, Msg: "unknown field"}
		}
		if isNull(val) {
			continue
		}
		fd := f.fd
		switch {
		case fd.IsList():
			var elems []json.RawMessage
			if err := json.Unmarshal(val, &elems); err != nil {
				return &Error{Path: p, Msg: "must be an array"}
			}
			l := m.Mutable(fd).List()
			for i, e := range elems {
				ep := fmt.Sprintf("%s[%d]", p, i)
				if isNull(e) {
					return &Error{Path: ep, Msg: "must not be null"}
				}
				v, err := decodeSingular(ep, fd, e, l.NewElement)
				if err != nil {
					return err
				}
				l.Append(v)
			}
		case fd.IsMap():
			var entries map[string]json.RawMessage
			if err := json.Unmarshal(val, &entries); err != nil {
				return &Error{Path: p, Msg: "must be an object"}
			}
			mp := m.Mutable(fd).Map()
			for k, e := range entries {
				ep := fmt.Sprintf("%s[%q]", p, k)
				key, err := parseMapKey(fd.MapKey(), k)
				if err != nil {
					return &Error{Path: ep, Msg: err.Error()}
				}
				v, err := decodeSingular(ep, fd.MapValue(), e, mp.NewValue)
				if err != nil {
					return err
				}
				mp.Set(key, v)
			}
		default:
			v, err := decodeSingular(p, fd, val, func() protoreflect.Value { return m.NewField(fd) })
			if err != nil {
				return err
			}
			m.Set(fd, v)
		}
	}
	return nil
}

func isNull(raw []byte) bool { return string(raw) == "null" }

func decodeSingular(path string, fd protoreflect.FieldDescriptor, raw []byte, newMsg func() protoreflect.Value) (protoreflect.Value, error) {
	switch fd.Kind() {
	case protoreflect.MessageKind, protoreflect.GroupKind:
		v := newMsg()
		if err := decodeMessage(path, raw, v.Message()); err != nil {
			return protoreflect.Value{}, err
		}
		return v, nil
	case protoreflect.StringKind, protoreflect.BytesKind, protoreflect.EnumKind:
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return protoreflect.Value{}, &Error{Path: path, Msg: "must be a string"}
		}
		return parseText(path, fd, s)
	case protoreflect.BoolKind:
		switch string(raw) {
		case "true":
			return protoreflect.ValueOfBool(true), nil
		case "false":
			return protoreflect.ValueOfBool(false), nil
		}
		return protoreflect.Value{}, &Error{Path: path, Msg: "must be a boolean"}
	}
	// Numbers: a JSON number, never a quoted one.
	if len(raw) == 0 || raw[0] == '"' {
		return protoreflect.Value{}, &Error{Path: path, Msg: "must be a number"}
	}
	return parseNumber(path, fd, string(raw))
}

func parseNumber(path string, fd protoreflect.FieldDescriptor, s string) (protoreflect.Value, error) {
	switch fd.Kind() {
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
		n, err := strconv.ParseInt(s, 10, 32)
		if err != nil {
			return protoreflect.Value{}, &Error{Path: path, Msg: "must be an integer between -2147483648 and 2147483647"}
		}
		return protoreflect.ValueOfInt32(int32(n)), nil
	case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return protoreflect.Value{}, &Error{Path: path, Msg: "must be a 64-bit integer"}
		}
		return protoreflect.ValueOfInt64(n), nil
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		n, err := strconv.ParseUint(s, 10, 32)
		if err != nil {
			return protoreflect.Value{}, &Error{Path: path, Msg: "must be a non-negative 32-bit integer"}
		}
		return protoreflect.ValueOfUint32(uint32(n)), nil
	case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			return protoreflect.Value{}, &Error{Path: path, Msg: "must be a non-negative 64-bit integer"}
		}
		return protoreflect.ValueOfUint64(n), nil
	case protoreflect.FloatKind:
		f, err := strconv.ParseFloat(s, 32)
		if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
			return protoreflect.Value{}, &Error{Path: path, Msg: "must be a number"}
		}
		return protoreflect.ValueOfFloat32(float32(f)), nil
	case protoreflect.DoubleKind:
		f, err := strconv.ParseFloat(s, 64)
		if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
			return protoreflect.Value{}, &Error{Path: path, Msg: "must be a number"}
		}
		return protoreflect.ValueOfFloat64(f), nil
	}
	return protoreflect.Value{}, &Error{Path: path, Msg: fmt.Sprintf("unsupported field kind %v", fd.Kind())}
}

// parseText parses the text form of a singular non-message value: the content of a JSON
// string, or a query or path parameter.
func parseText(path string, fd protoreflect.FieldDescriptor, s string) (protoreflect.Value, error) {
	switch fd.Kind() {
	case protoreflect.StringKind:
		return protoreflect.ValueOfString(s), nil
	case protoreflect.BytesKind:
		b, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			if b, err = base64.RawURLEncoding.DecodeString(strings.TrimRight(s, "=")); err != nil {
				return protoreflect.Value{}, &Error{Path: path, Msg: "must be base64"}
			}
		}
		return protoreflect.ValueOfBytes(b), nil
	case protoreflect.EnumKind:
		n, ok := ParseEnum(fd.Enum(), s)
		if !ok {
			return protoreflect.Value{}, &Error{Path: path, Msg: "must be one of " + strings.Join(EnumValues(fd.Enum()), ", ")}
		}
		return protoreflect.ValueOfEnum(n), nil
	case protoreflect.BoolKind:
		switch s {
		case "true":
			return protoreflect.ValueOfBool(true), nil
		case "false":
			return protoreflect.ValueOfBool(false), nil
		}
		return protoreflect.Value{}, &Error{Path: path, Msg: "must be true or false"}
	case protoreflect.MessageKind:
		if fd.Message().FullName() == timestampName {
			ts := &timestamppb.Timestamp{}
			if err := setTimestamp(path, s, ts.ProtoReflect()); err != nil {
				return protoreflect.Value{}, err
			}
			return protoreflect.ValueOfMessage(ts.ProtoReflect()), nil
		}
		return protoreflect.Value{}, &Error{Path: path, Msg: "cannot be given as text"}
	}
	return parseNumber(path, fd, s)
}

func setTimestamp(path, s string, m protoreflect.Message) error {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return &Error{Path: path, Msg: "must be an RFC 3339 date-time"}
	}
	ts := timestamppb.New(t)
	if ts.CheckValid() != nil {
		return &Error{Path: path, Msg: "is out of range"}
	}
	proto.Merge(m.Interface(), ts)
	return nil
}

func parseMapKey(fd protoreflect.FieldDescriptor, s string) (protoreflect.MapKey, error) {
	if fd.Kind() == protoreflect.StringKind {
		return protoreflect.ValueOfString(s).MapKey(), nil
	}
	v, err := parseText("", fd, s)
	if err != nil {
		return protoreflect.MapKey{}, fmt.Errorf("invalid map key %q", s)
	}
	return v.MapKey(), nil
}

func decodeStructValue(path string, raw []byte, m protoreflect.Message) error {
	d := json.NewDecoder(bytes.NewReader(raw))
	var v any
	if err := d.Decode(&v); err != nil {
		return &Error{Path: path, Msg: "malformed JSON"}
	}
	var pm proto.Message
	var err error
	switch m.Descriptor().FullName() {
	case structName:
		obj, ok := v.(map[string]any)
		if !ok {
			return &Error{Path: path, Msg: "must be an object"}
		}
		pm, err = structpb.NewStruct(obj)
	case listValueName:
		arr, ok := v.([]any)
		if !ok {
			return &Error{Path: path, Msg: "must be an array"}
		}
		pm, err = structpb.NewList(arr)
	default:
		pm, err = structpb.NewValue(v)
	}
	if err != nil {
		return &Error{Path: path, Msg: err.Error()}
	}
	proto.Merge(m.Interface(), pm)
	return nil
}

// FieldByName returns the field of md whose wire name is name, or nil.
func FieldByName(md protoreflect.MessageDescriptor, name string) protoreflect.FieldDescriptor {
	if f, ok := describe(md).byName[name]; ok {
		return f.fd
	}
	return nil
}

// SetText sets field fd of m from the text of a query or path parameter. A repeated field
// takes a comma-separated list and appends to what is there.
func SetText(m protoreflect.Message, fd protoreflect.FieldDescriptor, text string) error {
	path := JSONName(fd)
	if fd.IsMap() {
		return &Error{Path: path, Msg: "cannot be given as a parameter"}
	}
	if fd.IsList() {
		l := m.Mutable(fd).List()
		for _, part := range strings.Split(text, ",") {
			if part == "" {
				continue
			}
			v, err := parseText(path, fd, part)
			if err != nil {
				return err
			}
			l.Append(v)
		}
		return nil
	}
	if fd.Kind() == protoreflect.MessageKind && fd.Message().FullName() != timestampName {
		return &Error{Path: path, Msg: "cannot be given as a parameter"}
	}
	v, err := parseText(path, fd, text)
	if err != nil {
		return err
	}
	m.Set(fd, v)
	return nil
}
