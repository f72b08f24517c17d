package plugin

import (
	"time"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/reflect/protoreflect"

	"svc.dev/svc/providers"
	"svc.dev/svc/providers/internal/pluginpb"
)

// Listing pages are the one hot path of the protocol (a page holds up to
// 1000 objects), so they skip the generated messages on both sides:
//
//   - the plugin writes providers.Objects straight into ListResponse's wire
//     format (appendListResponse) instead of building a pluginpb.Object per
//     object and marshalling it;
//   - the host reads that wire format straight into providers.Objects
//     (decodeListResponse), copying each object's bytes once into a string
//     its fields slice, and checks every rule provider.proto declares for
//     ListResponse, Marker, Object, MessageHeaders and Permission, plus the
//     rules it leaves to Go (see provider.proto), with plain comparisons.
//
// The bytes on the wire are an ordinary ListResponse, so a plugin built
// with an older SDK still works, and the decoder takes any encoding: what it
// does not expect (a singular message field sent twice, which protobuf
// merges; a known field with another wire type; malformed bytes) it hands to
// decodeListResponseGeneric, the reference path of proto.Unmarshal,
// protovalidate and checkItems. listwire_test.go checks that the two paths
// agree, with protovalidate as the oracle, on generated pages near every
// limit and on fuzzed bytes.

// Field numbers of the messages in provider.proto.
const (
	fListObjects, fListNextPageToken, fListMarker = 1, 2, 3
	fListLaneBytes                                = 4
	fMarkerKind, fMarkerValue                     = 1, 2

	fObjID, fObjParentID, fObjVersion, fObjKind, fObjName, fObjPath = 1, 2, 3, 4, 5, 6
	fObjSize, fObjSHA256, fObjMIME, fObjContainers                  = 7, 8, 9, 10
	fObjCreated, fObjModified, fObjStarred, fObjShared              = 11, 12, 13, 14
	fObjMessage, fObjPermissions, fObjMetadata                      = 15, 16, 17

	fHdrFrom, fHdrTo, fHdrCc, fHdrSubject, fHdrDate, fHdrThread = 1, 2, 3, 4, 5, 6
	fHdrListID, fHdrListUnsub, fHdrListUnsubPost, fHdrSnippet   = 7, 8, 9, 10

	fPermPrincipal, fPermRole, fPermType = 1, 2, 3
	fTimeSeconds, fTimeNanos             = 1, 2
	fMapKey, fMapValue                   = 1, 2
)

// The limits of provider.proto's rules, in bytes (max_bytes) and items
// (max_items, max_pairs). min_len 1 on a string means non-empty.
const (
	maxPageObjects = 10000 // ListResponse.objects
	maxTokenBytes  = 8192  // ListResponse.next_page_token
	maxMarkerBytes = 4096  // Marker.value

	maxIDBytes        = 1024 // Object.id, parent_id, version
	maxNameBytes      = 4096
	maxPathBytes      = 8192
	maxSHA256Bytes    = 64 // and the pattern ^([0-9a-f]{64})?$
	maxMIMEBytes      = 255
	maxItems          = 1000 // containers, permissions, message.to, message.cc
	maxContainerBytes = 4096 // per item, checked in Go
	maxMetadataPairs  = 256
	maxMetaKeyBytes   = 256  // and non-empty, checked in Go
	maxMetaValueBytes = 4096 // checked in Go

	maxFromBytes      = 2048
	maxRecipientBytes = 2048 // per item of to and cc, checked in Go
	maxSubjectBytes   = 4096
	maxThreadBytes    = 1024 // thread_id, list_id
	maxListUnsubBytes = 4096
	maxSnippetBytes   = 1024

	maxPrincipalBytes = 1024 // and non-empty
)

// defined holds the numbers an enum defines; defined_only rules accept
// those, and every enum rule here also rejects 0 (UNSPECIFIED). It is read
// from the descriptors, so it follows provider.proto.
type defined []bool

func definedIn(e protoreflect.EnumDescriptor) defined {
	var d defined
	vals := e.Values()
	for i := range vals.Len() {
		n := int(vals.Get(i).Number())
		if n >= 0 && n < 1024 {
			for len(d) <= n {
				d = append(d, false)
			}
			d[n] = true
		}
	}
	return d
}

// ok reports whether n is a defined value other than 0.
func (d defined) ok(n int32) bool { return n > 0 && int(n) < len(d) && d[n] }

var (
	kindsDefined  = definedIn(pluginpb.ObjectKind(0).Descriptor())
	markerDefined = definedIn(pluginpb.MarkerKind(0).Descriptor())
	roleDefined   = definedIn(pluginpb.PermissionRole(0).Descriptor())
	typeDefined   = definedIn(pluginpb.PermissionType(0).Descriptor())
)

// ---- plugin side: providers.Page -> ListResponse wire format ----

// appendListResponse appends page in ListResponse's wire format.
func appendListResponse(b []byte, page *providers.Page) []byte {
	for i := range page.Objects {
		b = appendNested(b, fListObjects, 2, func(b []byte) []byte { return appendObject(b, &page.Objects[i]) })
	}
	b = appendString(b, fListNextPageToken, page.NextPageToken)
	if !page.Marker.IsZero() {
		m := markerToProto(page.Marker)
		b = appendNested(b, fListMarker, 1, func(b []byte) []byte {
			b = appendEnum(b, fMarkerKind, int32(m.GetKind()))
			return appendString(b, fMarkerValue, m.GetValue())
		})
	}
	return b
}

// appendObject appends o's fields in Object's wire format: what
// proto.Marshal(objectToProto(o)) writes, field for field.
func appendObject(b []byte, o *providers.Object) []byte {
	b = appendString(b, fObjID, o.ID)
	b = appendString(b, fObjParentID, o.ParentID)
	b = appendString(b, fObjVersion, o.Version)
	b = appendEnum(b, fObjKind, int32(toEnum[pluginpb.ObjectKind](providers.Kinds, o.Kind)))
	b = appendString(b, fObjName, o.Name)
	b = appendString(b, fObjPath, o.Path)
	if o.SizeBytes != 0 {
		b = appendTag(b, fObjSize, protowire.VarintType)
		b = appendVarint(b, uint64(o.SizeBytes))
	}
	b = appendString(b, fObjSHA256, o.SHA256)
	b = appendString(b, fObjMIME, o.MIMEType)
	for _, c := range o.Containers {
		b = appendTag(b, fObjContainers, protowire.BytesType)
		b = appendStr(b, c)
	}
	b = appendTime(b, fObjCreated, o.CreatedAt)
	b = appendTime(b, fObjModified, o.ModifiedAt)
	b = appendBool(b, fObjStarred, o.Starred)
	b = appendBool(b, fObjShared, o.Shared)
	if h := o.Message; h != nil {
		b = appendNested(b, fObjMessage, 2, func(b []byte) []byte { return appendHeaders(b, h) })
	}
	for _, p := range o.Permissions {
		b = appendNested(b, fObjPermissions, 1, func(b []byte) []byte {
			b = appendString(b, fPermPrincipal, p.Principal)
			b = appendEnum(b, fPermRole, int32(toEnum[pluginpb.PermissionRole](roles, p.Role)))
			return appendEnum(b, fPermType, int32(toEnum[pluginpb.PermissionType](ptype, p.Type)))
		})
	}
	for k, v := range o.Metadata {
		b = appendNested(b, fObjMetadata, 1, func(b []byte) []byte {
			b = appendTag(b, fMapKey, protowire.BytesType)
			b = appendStr(b, k)
			b = appendTag(b, fMapValue, protowire.BytesType)
			return appendStr(b, v)
		})
	}
	return b
}

func appendHeaders(b []byte, h *providers.MessageHeaders) []byte {
	b = appendString(b, fHdrFrom, h.From)
	for _, s := range h.To {
		b = appendTag(b, fHdrTo, protowire.BytesType)
		b = appendStr(b, s)
	}
	for _, s := range h.Cc {
		b = appendTag(b, fHdrCc, protowire.BytesType)
		b = appendStr(b, s)
	}
	b = appendString(b, fHdrSubject, h.Subject)
	b = appendTime(b, fHdrDate, h.Date)
	b = appendString(b, fHdrThread, h.ThreadID)
	b = appendString(b, fHdrListID, h.ListID)
	b = appendString(b, fHdrListUnsub, h.ListUnsubscribe)
	b = appendBool(b, fHdrListUnsubPost, h.ListUnsubscribePost)
	return appendString(b, fHdrSnippet, h.Snippet)
}

// appendNested appends a length-delimited field whose content fn appends.
// The content is written in place after room for a length of guess bytes
// (1 for lengths below 128, 2 below 16 KiB) and moved only when the length
// needs another size: no scratch buffer, no size pass.
func appendNested(b []byte, num protowire.Number, guess int, fn func([]byte) []byte) []byte {
	b = appendTag(b, num, protowire.BytesType)
	at := len(b)
	b = append(b, make([]byte, guess)...)
	b = fn(b)
	n := len(b) - at - guess
	switch w := protowire.SizeVarint(uint64(n)); {
	case w > guess:
		b = append(b, make([]byte, w-guess)...)
		copy(b[at+w:], b[at+guess:at+guess+n])
	case w < guess:
		copy(b[at+w:], b[at+guess:at+guess+n])
		b = b[:at+w+n]
	}
	appendVarint(b[:at], uint64(n))
	return b
}

// appendVarint, appendTag and appendStr are protowire's, with the common
// one-byte case inlined.
func appendVarint(b []byte, v uint64) []byte {
	for v >= 0x80 {
		b = append(b, byte(v)|0x80)
		v >>= 7
	}
	return append(b, byte(v))
}

func appendTag(b []byte, num protowire.Number, typ protowire.Type) []byte {
	if num < 16 {
		return append(b, byte(num)<<3|byte(typ))
	}
	return appendVarint(b, uint64(num)<<3|uint64(typ))
}

func appendStr(b []byte, s string) []byte {
	return append(appendVarint(b, uint64(len(s))), s...)
}

func appendString(b []byte, num protowire.Number, s string) []byte {
	if s == "" {
		return b
	}
	b = appendTag(b, num, protowire.BytesType)
	return appendStr(b, s)
}

func appendEnum(b []byte, num protowire.Number, e int32) []byte {
	if e == 0 {
		return b
	}
	b = appendTag(b, num, protowire.VarintType)
	return appendVarint(b, uint64(int64(e)))
}

func appendBool(b []byte, num protowire.Number, v bool) []byte {
	if !v {
		return b
	}
	b = appendTag(b, num, protowire.VarintType)
	return append(b, 1)
}

// appendTime appends t as a google.protobuf.Timestamp, or nothing for the
// zero time (as toTime does).
func appendTime(b []byte, num protowire.Number, t time.Time) []byte {
	if t.IsZero() {
		return b
	}
	sec, nanos := t.Unix(), int32(t.Nanosecond())
	return appendNested(b, num, 1, func(b []byte) []byte {
		if sec != 0 {
			b = appendTag(b, fTimeSeconds, protowire.VarintType)
			b = appendVarint(b, uint64(sec))
		}
		if nanos != 0 {
			b = appendTag(b, fTimeNanos, protowire.VarintType)
			b = appendVarint(b, uint64(int64(nanos)))
		}
		return b
	})
}

// ---- host side: ListResponse wire format -> checked providers.Page ----
