package plugin

import (
	"errors"
	"fmt"
	"time"
	"unicode/utf8"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"svc.dev/svc/providers"
	"svc.dev/svc/providers/internal/pluginpb"
)

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
