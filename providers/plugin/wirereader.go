package plugin

import (
	"time"
	"unicode/utf8"

	"google.golang.org/protobuf/encoding/protowire"

	"svc.dev/svc/providers"
)

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
