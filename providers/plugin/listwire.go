package plugin

import (
	"errors"
	"fmt"
	"time"
	"unicode/utf8"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
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

// errGeneric tells decodeListResponse's caller to take the generic path:
// the bytes are not in the encoding the fast path reads (or not valid
// protobuf at all, which the generic path reports).
var errGeneric = errors.New("plugin: list page needs the generic decoder")

// laneResponse reports whether b is a ListResponse that only announces a
// page sent on a lane, and how many bytes it has.
func laneResponse(b []byte) (uint64, bool) {
	d := wire{s: b}
	if d.done() {
		return 0, false
	}
	num, typ, ok := d.tag()
	if !ok || num != fListLaneBytes || typ != protowire.VarintType {
		return 0, false
	}
	n, ok := d.varint()
	return n, ok && n > 0 && d.done()
}

// decodeList decodes and checks a ListResponse, on the fast path when it
// can. Every failure wraps providers.ErrInvalidResponse. early, if not nil,
// receives the next page token (checked) before the objects are decoded.
func decodeList(b []byte, early func(string)) (providers.Page, error) {
	page, err := decodeListResponse(b, early)
	if errors.Is(err, errGeneric) {
		return decodeListResponseGeneric(b, early)
	}
	return page, err
}

// decodeListResponseGeneric is the reference path: proto.Unmarshal, then
// protovalidate and checkItems (validateList), then objectFromProto.
func decodeListResponseGeneric(b []byte, early func(string)) (providers.Page, error) {
	var resp pluginpb.ListResponse
	if err := proto.Unmarshal(b, &resp); err != nil {
		return providers.Page{}, fmt.Errorf("%w: %v", providers.ErrInvalidResponse, err)
	}
	if resp.GetLaneBytes() != 0 {
		return providers.Page{}, fmt.Errorf("%w: a page both in the response and on a lane", providers.ErrInvalidResponse)
	}
	if t := resp.GetNextPageToken(); early != nil && t != "" && len(t) <= maxTokenBytes {
		early(t)
	}
	objects := resp.GetObjects()
	if len(objects) > maxPageObjects { // the page rule, checked before the objects are
		return providers.Page{}, fmt.Errorf("%w: page of %d objects", providers.ErrInvalidResponse, len(objects))
	}
	resp.Objects = nil
	err := validateList(&resp, objects)
	if err != nil {
		return providers.Page{}, err
	}
	page := providers.Page{
		Objects:       make([]providers.Object, len(objects)),
		NextPageToken: resp.GetNextPageToken(),
		Marker:        markerFromProto(resp.GetMarker()),
	}
	for i, o := range objects {
		page.Objects[i] = objectFromProto(o)
	}
	return page, nil
}

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{providers.ErrInvalidResponse}, args...)...)
}

// decodeListResponse is the fast path. It returns errGeneric for what only
// the generic path can decide.
func decodeListResponse(b []byte, early func(string)) (providers.Page, error) {
	var page providers.Page
	// First pass: count the objects (the page rule comes first), read the
	// token and the marker.
	count, markerAt := 0, -1
	var laneBytes uint64
	for d := (wire{s: b}); !d.done(); {
		num, typ, ok := d.tag()
		if !ok {
			return page, errGeneric
		}
		switch {
		case num == fListObjects && typ == protowire.BytesType:
			if _, ok := d.bytes(); !ok {
				return page, errGeneric
			}
			count++
		case num == fListNextPageToken && typ == protowire.BytesType:
			v, ok := d.bytes()
			if !ok {
				return page, errGeneric
			}
			if !utf8.Valid(v) {
				return page, invalid("next_page_token: invalid UTF-8")
			}
			page.NextPageToken = string(v)
		case num == fListMarker && typ == protowire.BytesType:
			if markerAt >= 0 {
				return page, errGeneric // merged by protobuf
			}
			markerAt = d.i
			if _, ok := d.bytes(); !ok {
				return page, errGeneric
			}
		case num == fListLaneBytes && typ == protowire.VarintType:
			v, ok := d.varint()
			if !ok {
				return page, errGeneric
			}
			laneBytes = v // the last one counts
		case num <= fListLaneBytes:
			return page, errGeneric // a known field with another wire type
		default:
			if !d.skip(num, typ) {
				return page, errGeneric
			}
		}
	}
	if laneBytes != 0 {
		return page, invalid("a page both in the response and on a lane")
	}
	if count > maxPageObjects {
		return page, invalid("page of %d objects", count)
	}
	if len(page.NextPageToken) > maxTokenBytes {
		return page, invalid("next_page_token: %d bytes, more than %d", len(page.NextPageToken), maxTokenBytes)
	}
	if markerAt >= 0 {
		d := wire{s: b, i: markerAt}
		v, _ := d.bytes()
		m, err := decodeMarker(v)
		if err != nil {
			return page, err
		}
		page.Marker = m
	}
	if early != nil && page.NextPageToken != "" {
		early(page.NextPageToken)
	}
	// Second pass: the objects.
	page.Objects = make([]providers.Object, count)
	k := 0
	for d := (wire{s: b}); !d.done(); {
		num, typ, _ := d.tag()
		if num != fListObjects {
			d.skip(num, typ)
			continue
		}
		v, _ := d.bytes()
		if err := decodeObject(v, &page.Objects[k]); err != nil {
			if errors.Is(err, errGeneric) {
				return providers.Page{}, err
			}
			return providers.Page{}, fmt.Errorf("objects[%d]: %w", k, err)
		}
		k++
	}
	return page, nil
}

func decodeMarker(b []byte) (providers.Marker, error) {
	var kind int32
	var value []byte
	for d := (wire{s: b}); !d.done(); {
		num, typ, ok := d.tag()
		if !ok {
			return providers.Marker{}, errGeneric
		}
		switch {
		case num == fMarkerKind && typ == protowire.VarintType:
			v, ok := d.varint()
			if !ok {
				return providers.Marker{}, errGeneric
			}
			kind = int32(v)
		case num == fMarkerValue && typ == protowire.BytesType:
			v, ok := d.bytes()
			if !ok {
				return providers.Marker{}, errGeneric
			}
			if !utf8.Valid(v) {
				return providers.Marker{}, invalid("marker.value: invalid UTF-8")
			}
			value = v
		case num <= fMarkerValue:
			return providers.Marker{}, errGeneric
		default:
			if !d.skip(num, typ) {
				return providers.Marker{}, errGeneric
			}
		}
	}
	if !markerDefined.ok(kind) {
		return providers.Marker{}, invalid("marker.kind: %d is not a defined marker kind", kind)
	}
	if len(value) > maxMarkerBytes {
		return providers.Marker{}, invalid("marker.value: %d bytes, more than %d", len(value), maxMarkerBytes)
	}
	return providers.Marker{Kind: fromEnum(providers.MarkerKinds, kind), Value: string(value)}, nil
}

// decodeObject decodes and checks one Object, in one pass. Its strings are
// substrings of one copy of the object's bytes: one allocation instead of
// one per field, and an object kept by the caller keeps only its own bytes
// alive.
func decodeObject(raw []byte, o *providers.Object) error {
	d := wire{s: raw, str: string(raw)}
	var kind int32
	var haveCreated, haveModified, longValue bool
	for !d.done() {
		num, typ, ok := d.tag()
		if !ok {
			return errGeneric
		}
		switch num {
		case fObjKind, fObjSize, fObjStarred, fObjShared:
			if typ != protowire.VarintType {
				return errGeneric // protobuf keeps it as an unknown field
			}
			v, ok := d.varint()
			if !ok {
				return errGeneric
			}
			switch num {
			case fObjKind:
				kind = int32(v)
			case fObjSize:
				o.SizeBytes = int64(v)
			case fObjStarred:
				o.Starred = v != 0
			default:
				o.Shared = v != 0
			}
			continue
		case fObjID, fObjParentID, fObjVersion, fObjName, fObjPath, fObjSHA256, fObjMIME, fObjContainers:
			if typ != protowire.BytesType {
				return errGeneric
			}
			s, ok := d.str1()
			if !ok {
				return errGeneric
			}
			if !utf8.ValidString(s) {
				return invalid("object %q: field %d: invalid UTF-8", o.ID, num)
			}
			switch num {
			case fObjID:
				o.ID = s
			case fObjParentID:
				o.ParentID = s
			case fObjVersion:
				o.Version = s
			case fObjName:
				o.Name = s
			case fObjPath:
				o.Path = s
			case fObjSHA256:
				o.SHA256 = s
			case fObjMIME:
				o.MIMEType = s
			default:
				o.Containers = append(o.Containers, s)
			}
			continue
		case fObjCreated, fObjModified, fObjMessage, fObjPermissions, fObjMetadata:
			if typ != protowire.BytesType {
				return errGeneric
			}
		default:
			if !d.skip(num, typ) {
				return errGeneric
			}
			continue
		}
		sub, ok := d.sub()
		if !ok {
			return errGeneric
		}
		var err error
		switch num {
		case fObjCreated, fObjModified:
			seen := &haveCreated
			if num == fObjModified {
				seen = &haveModified
			}
			if *seen {
				return errGeneric // a singular message sent twice: protobuf merges them
			}
			*seen = true
			var t time.Time
			if t, err = sub.timestamp(); err == nil {
				if num == fObjCreated {
					o.CreatedAt = t
				} else {
					o.ModifiedAt = t
				}
			}
		case fObjMessage:
			if o.Message != nil {
				return errGeneric
			}
			o.Message, err = sub.headers()
		case fObjPermissions:
			var p providers.Permission
			if p, err = sub.permission(); err == nil {
				o.Permissions = append(o.Permissions, p)
			}
		default:
			var k, v string
			if k, v, err = sub.mapEntry(); err == nil {
				// A bad key stays bad, whatever follows; a long value may
				// yet be replaced by a later entry for the same key, so
				// values are checked at the end, and only if one was long.
				if k == "" || len(k) > maxMetaKeyBytes {
					return invalid("object %q: metadata: a key is empty or longer than %d bytes", o.ID, maxMetaKeyBytes)
				}
				longValue = longValue || len(v) > maxMetaValueBytes
				if o.Metadata == nil {
					o.Metadata = make(map[string]string, 2)
				}
				o.Metadata[k] = v
			}
		}
		if err != nil {
			return err
		}
	}
	o.Kind = fromEnum(providers.Kinds, kind)
	return checkObject(o, kind, longValue)
}

// checkObject applies Object's rules (and those of its headers and
// permissions) to a decoded object. kind is the enum number as sent; the
// metadata's keys are checked as they are decoded, its values here when
// one of them was long.
func checkObject(o *providers.Object, kind int32, longValue bool) error {
	bad := func(field, format string, args ...any) error {
		return invalid("object %q: %s: "+format, append([]any{o.ID, field}, args...)...)
	}
	switch {
	case o.ID == "":
		return bad("id", "empty")
	case len(o.ID) > maxIDBytes:
		return bad("id", "%d bytes, more than %d", len(o.ID), maxIDBytes)
	case len(o.ParentID) > maxIDBytes:
		return bad("parent_id", "%d bytes, more than %d", len(o.ParentID), maxIDBytes)
	case len(o.Version) > maxIDBytes:
		return bad("version", "%d bytes, more than %d", len(o.Version), maxIDBytes)
	case hasControl(o.ID) || hasControl(o.ParentID) || hasControl(o.Version):
		return bad("id", "control character in id, parent_id or version")
	case !kindsDefined.ok(kind):
		return bad("kind", "%d is not a defined object kind", kind)
	case len(o.Name) > maxNameBytes:
		return bad("name", "%d bytes, more than %d", len(o.Name), maxNameBytes)
	case len(o.Path) > maxPathBytes:
		return bad("path", "%d bytes, more than %d", len(o.Path), maxPathBytes)
	case o.SizeBytes < 0:
		return bad("size_bytes", "%d is negative", o.SizeBytes)
	case !sha256OK(o.SHA256):
		return bad("sha256", "%q is not 64 lowercase hex digits", o.SHA256)
	case len(o.MIMEType) > maxMIMEBytes:
		return bad("mime_type", "%d bytes, more than %d", len(o.MIMEType), maxMIMEBytes)
	case len(o.Containers) > maxItems:
		return bad("containers", "%d items, more than %d", len(o.Containers), maxItems)
	case tooLong(o.Containers, maxContainerBytes):
		return bad("containers", "an item is longer than %d bytes", maxContainerBytes)
	case len(o.Permissions) > maxItems:
		return bad("permissions", "%d items, more than %d", len(o.Permissions), maxItems)
	case len(o.Metadata) > maxMetadataPairs:
		return bad("metadata", "%d pairs, more than %d", len(o.Metadata), maxMetadataPairs)
	}
	if longValue {
		for _, v := range o.Metadata {
			if len(v) > maxMetaValueBytes {
				return bad("metadata", "a value is longer than %d bytes", maxMetaValueBytes)
			}
		}
	}
	if h := o.Message; h != nil {
		switch {
		case len(h.From) > maxFromBytes:
			return bad("message.from", "%d bytes, more than %d", len(h.From), maxFromBytes)
		case len(h.To) > maxItems || tooLong(h.To, maxRecipientBytes):
			return bad("message.to", "more than %d items or an item longer than %d bytes", maxItems, maxRecipientBytes)
		case len(h.Cc) > maxItems || tooLong(h.Cc, maxRecipientBytes):
			return bad("message.cc", "more than %d items or an item longer than %d bytes", maxItems, maxRecipientBytes)
		case len(h.Subject) > maxSubjectBytes:
			return bad("message.subject", "%d bytes, more than %d", len(h.Subject), maxSubjectBytes)
		case len(h.ThreadID) > maxThreadBytes:
			return bad("message.thread_id", "%d bytes, more than %d", len(h.ThreadID), maxThreadBytes)
		case len(h.ListID) > maxThreadBytes:
			return bad("message.list_id", "%d bytes, more than %d", len(h.ListID), maxThreadBytes)
		case len(h.ListUnsubscribe) > maxListUnsubBytes:
			return bad("message.list_unsubscribe", "%d bytes, more than %d", len(h.ListUnsubscribe), maxListUnsubBytes)
		case len(h.Snippet) > maxSnippetBytes:
			return bad("message.snippet", "%d bytes, more than %d", len(h.Snippet), maxSnippetBytes)
		}
	}
	return nil
}

func tooLong(items []string, limit int) bool {
	for _, s := range items {
		if len(s) > limit {
			return true
		}
	}
	return false
}

func sha256OK(s string) bool {
	if s == "" {
		return true
	}
	if len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// wire reads protobuf wire format. str, when set, is s as a string, and
// strings are sliced from it rather than copied.
type wire struct {
	s   []byte
	str string
	i   int
}

func (d *wire) done() bool { return d.i >= len(d.s) }

func (d *wire) varint() (uint64, bool) {
	if d.i < len(d.s) && d.s[d.i] < 0x80 { // most are one byte
		v := uint64(d.s[d.i])
		d.i++
		return v, true
	}
	v, n := protowire.ConsumeVarint(d.s[d.i:])
	if n < 0 {
		return 0, false
	}
	d.i += n
	return v, true
}

func (d *wire) tag() (protowire.Number, protowire.Type, bool) {
	if c := d.s[d.i]; c < 0x80 && c >= 8 { // fields 1..15
		d.i++
		return protowire.Number(c >> 3), protowire.Type(c & 7), true
	}
	num, typ, n := protowire.ConsumeTag(d.s[d.i:])
	if n < 0 || num > protowire.MaxValidNumber { // protobuf rejects both
		return 0, 0, false
	}
	d.i += n
	return num, typ, true
}

// bytes reads a length-delimited value.
func (d *wire) bytes() ([]byte, bool) {
	v, n := protowire.ConsumeBytes(d.s[d.i:])
	if n < 0 {
		return nil, false
	}
	d.i += n
	return v, true
}

// span reads a length-delimited value's bounds.
func (d *wire) span() (start, end int, ok bool) {
	n, ok := d.varint()
	if !ok || n > uint64(len(d.s)-d.i) {
		return 0, 0, false
	}
	start = d.i
	d.i += int(n)
	return start, d.i, true
}

// str1 reads a length-delimited value as a substring of str.
func (d *wire) str1() (string, bool) {
	start, end, ok := d.span()
	if !ok {
		return "", false
	}
	return d.str[start:end], true
}

// sub returns a reader over a length-delimited value, sharing str.
func (d *wire) sub() (wire, bool) {
	start, end, ok := d.span()
	if !ok {
		return wire{}, false
	}
	return wire{s: d.s[:end], str: d.str[:end], i: start}, true
}

func (d *wire) skip(num protowire.Number, typ protowire.Type) bool {
	n := protowire.ConsumeFieldValue(num, typ, d.s[d.i:])
	if n < 0 {
		return false
	}
	d.i += n
	return true
}

// The readers below decode the message d spans; they return errGeneric for
// what the fast path leaves to the generic one.

func (d *wire) timestamp() (time.Time, error) {
	var sec int64
	var nanos int32
	for !d.done() {
		num, typ, ok := d.tag()
		if !ok {
			return time.Time{}, errGeneric
		}
		if num == fTimeSeconds || num == fTimeNanos {
			if typ != protowire.VarintType {
				return time.Time{}, errGeneric
			}
			v, ok := d.varint()
			if !ok {
				return time.Time{}, errGeneric
			}
			if num == fTimeSeconds {
				sec = int64(v)
			} else {
				nanos = int32(v)
			}
			continue
		}
		if !d.skip(num, typ) {
			return time.Time{}, errGeneric
		}
	}
	return time.Unix(sec, int64(nanos)).UTC(), nil // as Timestamp.AsTime
}

func (d *wire) permission() (providers.Permission, error) {
	var p providers.Permission
	var role, typ int32
	for !d.done() {
		num, wt, ok := d.tag()
		if !ok {
			return p, errGeneric
		}
		switch {
		case num == fPermPrincipal && wt == protowire.BytesType:
			s, ok := d.str1()
			if !ok {
				return p, errGeneric
			}
			if !utf8.ValidString(s) {
				return p, invalid("permission.principal: invalid UTF-8")
			}
			p.Principal = s
		case (num == fPermRole || num == fPermType) && wt == protowire.VarintType:
			v, ok := d.varint()
			if !ok {
				return p, errGeneric
			}
			if num == fPermRole {
				role = int32(v)
			} else {
				typ = int32(v)
			}
		case num <= fPermType:
			return p, errGeneric
		default:
			if !d.skip(num, wt) {
				return p, errGeneric
			}
		}
	}
	switch {
	case p.Principal == "" || len(p.Principal) > maxPrincipalBytes:
		return p, invalid("permission.principal: empty or longer than %d bytes", maxPrincipalBytes)
	case !roleDefined.ok(role):
		return p, invalid("permission.role: %d is not a defined role", role)
	case !typeDefined.ok(typ):
		return p, invalid("permission.type: %d is not a defined principal type", typ)
	}
	p.Role, p.Type = fromEnum(roles, role), fromEnum(ptype, typ)
	return p, nil
}

func (d *wire) mapEntry() (string, string, error) {
	var k, v string
	for !d.done() {
		num, typ, ok := d.tag()
		if !ok {
			return "", "", errGeneric
		}
		switch {
		case (num == fMapKey || num == fMapValue) && typ == protowire.BytesType:
			s, ok := d.str1()
			if !ok {
				return "", "", errGeneric
			}
			if !utf8.ValidString(s) {
				return "", "", invalid("metadata: invalid UTF-8")
			}
			if num == fMapKey {
				k = s
			} else {
				v = s
			}
		case num <= fMapValue:
			return "", "", errGeneric
		default:
			if !d.skip(num, typ) {
				return "", "", errGeneric
			}
		}
	}
	return k, v, nil
}

func (d *wire) headers() (*providers.MessageHeaders, error) {
	h := &providers.MessageHeaders{}
	haveDate := false
	for !d.done() {
		num, typ, ok := d.tag()
		if !ok {
			return nil, errGeneric
		}
		switch {
		case num > fHdrSnippet:
			if !d.skip(num, typ) {
				return nil, errGeneric
			}
			continue
		case num == fHdrListUnsubPost:
			if typ != protowire.VarintType {
				return nil, errGeneric
			}
			v, ok := d.varint()
			if !ok {
				return nil, errGeneric
			}
			h.ListUnsubscribePost = v != 0
			continue
		case typ != protowire.BytesType:
			return nil, errGeneric
		case num == fHdrDate:
			if haveDate {
				return nil, errGeneric
			}
			haveDate = true
			sub, ok := d.sub()
			if !ok {
				return nil, errGeneric
			}
			t, err := sub.timestamp()
			if err != nil {
				return nil, err
			}
			h.Date = t
			continue
		}
		s, ok := d.str1()
		if !ok {
			return nil, errGeneric
		}
		if !utf8.ValidString(s) {
			return nil, invalid("message: field %d: invalid UTF-8", num)
		}
		switch num {
		case fHdrFrom:
			h.From = s
		case fHdrTo:
			h.To = append(h.To, s)
		case fHdrCc:
			h.Cc = append(h.Cc, s)
		case fHdrSubject:
			h.Subject = s
		case fHdrThread:
			h.ThreadID = s
		case fHdrListID:
			h.ListID = s
		case fHdrListUnsub:
			h.ListUnsubscribe = s
		case fHdrSnippet:
			h.Snippet = s
		}
	}
	return h, nil
}
