package server

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/server/internal/rpc"
	"svc.dev/svc/wire"
)

// checkText refuses, in every string of a request (names, labels, paths, URLs, keywords), bytes
// that are not UTF-8 and control characters (U+0000 to U+001F, U+007F to U+009F): no field of
// the API carries them legitimately, and stored they break logs, file names, headers and the
// screens that show them. The problem names the first offending field by its wire path.
func checkText(req proto.Message) *rpc.Problem {
	path, bad := badText("", req.ProtoReflect())
	if !bad {
		return nil
	}
	return &rpc.Problem{Status: 400, Code: rpc.CodeValidation, Detail: "The request is not valid.",
		Errors: []*svcv1.FieldViolation{{Path: path, Message: "must be UTF-8 text without control characters"}}}
}

func badText(path string, m protoreflect.Message) (string, bool) {
	var at string
	var bad bool
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		p := wire.JSONName(fd)
		if path != "" {
			p = path + "." + p
		}
		switch {
		case fd.IsList():
			l := v.List()
			for i := range l.Len() {
				if at, bad = badValue(fmt.Sprintf("%s[%d]", p, i), fd, l.Get(i)); bad {
					return false
				}
			}
		case fd.IsMap():
			v.Map().Range(func(k protoreflect.MapKey, mv protoreflect.Value) bool {
				ep := fmt.Sprintf("%s[%q]", p, k.String())
				if !cleanText(k.String()) {
					at, bad = ep, true
					return false
				}
				at, bad = badValue(ep, fd.MapValue(), mv)
				return !bad
			})
		default:
			at, bad = badValue(p, fd, v)
		}
		return !bad
	})
	return at, bad
}

// multiline are the fields whose value is a document of lines (a CSV statement): they may
// hold line feeds, carriage returns and tabs, and no other control character.
var multiline = map[protoreflect.FullName]bool{"svc.v1.UploadStatementRequest.csv": true}

func badValue(path string, fd protoreflect.FieldDescriptor, v protoreflect.Value) (string, bool) {
	switch fd.Kind() {
	case protoreflect.StringKind:
		if multiline[fd.FullName()] {
			return path, !cleanText(strings.NewReplacer("\n", "", "\r", "", "\t", "").Replace(v.String()))
		}
		return path, !cleanText(v.String())
	case protoreflect.MessageKind, protoreflect.GroupKind:
		return badText(path, v.Message())
	}
	return "", false
}

func cleanText(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if r < 0x20 || (r >= 0x7f && r <= 0x9f) {
			return false
		}
	}
	return true
}
