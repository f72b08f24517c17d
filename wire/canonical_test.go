package wire_test

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/gowebpki/jcs"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"
	"pgregory.net/rapid"

	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/wire"
)

// RFC 8785 section 3.2.2's example, through the library the tests use as the independent
// implementation.
func TestJCSLibraryAgainstRFC8785(t *testing.T) {
	in := `{"numbers": [333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001],
	  "string": "\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/", "literals": [null, true, false]}`
	want := `{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],"string":"€$\u000f\nA'B\"\\\\\"/"}`
	got, err := jcs.Transform([]byte(in))
	if err != nil || string(got) != want {
		t.Fatalf("got %s, %v\nwant %s", got, err, want)
	}
}

// RFC 8785 section 3.2.3: member names sort by UTF-16 code units.
func TestCanonicalSortsByUTF16(t *testing.T) {
	s, _ := structpb.NewStruct(map[string]any{
		"\u20ac": "Euro Sign", "\r": "Carriage Return", "\ufb33": "Hebrew Letter Dalet With Dagesh",
		"1": "One", "\U0001F600": "Emoji: Grinning Face", "\u0080": "Control", "\u00f6": "Latin Small Letter O With Diaeresis",
	})
	got, err := wire.CanonicalBytes(s)
	if err != nil {
		t.Fatal(err)
	}
	order := []string{"Carriage Return", "One", "Control", "Latin Small", "Euro Sign", "Emoji", "Hebrew"}
	last := -1
	for _, o := range order {
		i := strings.Index(string(got), o)
		if i < last {
			t.Fatalf("%q out of order in %s", o, got)
		}
		last = i
	}
}

// fill sets every field of m to random values, to a bounded depth.
func fill(t *rapid.T, m protoreflect.Message, depth int) {
	fds := m.Descriptor().Fields()
	for i := range fds.Len() {
		fd := fds.Get(i)
		if od := fd.ContainingOneof(); od != nil && !od.IsSynthetic() {
			continue
		}
		if fd.HasPresence() && !rapid.Bool().Draw(t, "set") {
			continue
		}
		switch {
		case fd.IsList():
			l := m.Mutable(fd).List()
			for range rapid.IntRange(0, 3).Draw(t, "len") {
				if v, ok := randomValue(t, fd, l.NewElement, depth); ok {
					l.Append(v)
				}
			}
		case fd.IsMap():
			mp := m.Mutable(fd).Map()
			for range rapid.IntRange(0, 3).Draw(t, "len") {
				if v, ok := randomValue(t, fd.MapValue(), mp.NewValue, depth); ok {
					mp.Set(protoreflect.ValueOfString(rapid.String().Draw(t, "key")).MapKey(), v)
				}
			}
		default:
			if v, ok := randomValue(t, fd, func() protoreflect.Value { return m.NewField(fd) }, depth); ok {
				m.Set(fd, v)
			}
		}
	}
}

func randomValue(t *rapid.T, fd protoreflect.FieldDescriptor, newMsg func() protoreflect.Value, depth int) (protoreflect.Value, bool) {
	switch fd.Kind() {
	case protoreflect.BoolKind:
		return protoreflect.ValueOfBool(rapid.Bool().Draw(t, "b")), true
	case protoreflect.StringKind:
		return protoreflect.ValueOfString(rapid.String().Draw(t, "s")), true
	case protoreflect.Int32Kind:
		return protoreflect.ValueOfInt32(rapid.Int32().Draw(t, "i32")), true
	case protoreflect.Int64Kind:
		return protoreflect.ValueOfInt64(rapid.Int64Range(-(1<<53-1), 1<<53-1).Draw(t, "i64")), true
	case protoreflect.DoubleKind:
		return protoreflect.ValueOfFloat64(rapid.Float64().Filter(func(f float64) bool { return f == f && f < 1e300 && f > -1e300 }).Draw(t, "f")), true
	case protoreflect.EnumKind:
		vals := wire.EnumValues(fd.Enum())
		n, _ := wire.ParseEnum(fd.Enum(), rapid.SampledFrom(vals).Draw(t, "enum"))
		return protoreflect.ValueOfEnum(n), true
	case protoreflect.MessageKind:
		v := newMsg()
		switch fd.Message().FullName() {
		case "google.protobuf.Timestamp":
			proto.Merge(v.Message().Interface(), timestamppb.New(time.Unix(rapid.Int64Range(0, 1<<34).Draw(t, "sec"), rapid.Int64Range(0, 999999999).Draw(t, "ns"))))
		case "google.protobuf.Struct":
			s, _ := structpb.NewStruct(map[string]any{rapid.String().Draw(t, "k"): rapid.Float64Range(-1e9, 1e9).Draw(t, "v"), "s": rapid.String().Draw(t, "sv"), "l": []any{true, nil, "x"}})
			proto.Merge(v.Message().Interface(), s)
		default:
			if depth <= 0 {
				return protoreflect.Value{}, false
			}
			fill(t, v.Message(), depth-1)
		}
		return v, true
	}
	return protoreflect.Value{}, false
}

func TestCanonicalEqualsJCSOfWireJSON(t *testing.T) {
	types := []proto.Message{&svcv1.Plan{}, &svcv1.Receipt{}, &svcv1.ManifestBundle{}, &svcv1.Source{}, &svcv1.Event{}, &svcv1.Meter{}, &svcv1.Execution{}}
	rapid.Check(t, func(t *rapid.T) {
		m := proto.Clone(rapid.SampledFrom(types).Draw(t, "type"))
		proto.Reset(m)
		fill(t, m.ProtoReflect(), 3)
		js, err := wire.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		want, err := jcs.Transform(js)
		if err != nil {
			t.Fatalf("jcs: %v\n%s", err, js)
		}
		got, err := wire.CanonicalBytes(m)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("canonical differs from JCS(wire JSON):\n got %s\nwant %s", got, want)
		}
		var streamed bytes.Buffer
		if err := wire.Canonical(&streamed, m); err != nil || !bytes.Equal(streamed.Bytes(), want) {
			t.Fatalf("streamed canonical differs: %v", err)
		}
	})
}

func TestCanonicalFieldsSubset(t *testing.T) {
	p := &svcv1.Plan{PlanId: "pln_x", PlanVersion: "1", Hash: "h", Simulated: true}
	got, err := wire.CanonicalBytes(p, "simulated", "planVersion")
	if err != nil || string(got) != `{"planVersion":"1","simulated":true}` {
		t.Fatalf("%s %v", got, err)
	}
	if _, err := wire.CanonicalBytes(&svcv1.Projection{BytesToRemove: 1 << 60}); err == nil {
		t.Fatal("an integer beyond 2^53 must not hash silently")
	}
}
