package svc

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"svc.dev/svc/execute"
	svcv1 "svc.dev/svc/gen/svc/v1"
)

// A journal entry is stored in a compact binary form: the version byte journalV2, then the
// transition's fields in a fixed order, each string as its length (uvarint) and bytes, each
// number as a varint, the time as Unix nanoseconds. An execution journals several entries
// per asset, and the receipt reads them all back: JSON took a few microseconds per entry
// each way. Entries written before (JSON objects, which start with '{') are still read.
const journalV2 = 0x02

// journalV3 is journalV2 followed by the transition's Rendered, for the entries that have one:
// every other entry is still written, byte for byte, as journalV2.
const journalV3 = 0x03

// encodeTransition appends t's stored form to b.
func encodeTransition(b []byte, t execute.Transition) []byte {
	start := len(b)
	b = append(b, journalV2)
	b = appendString(b, t.AssetID)
	b = binary.AppendVarint(b, int64(t.From))
	b = binary.AppendVarint(b, int64(t.To))
	b = appendString(b, t.Step)
	b = appendString(b, t.Status)
	at := int64(0)
	if !t.At.IsZero() {
		at = t.At.UnixNano()
	}
	b = binary.AppendVarint(b, at)
	b = appendString(b, t.VaultID)
	b = appendString(b, t.VaultSHA256)
	b = binary.AppendVarint(b, t.Bytes)
	b = appendString(b, t.ResultID)
	restorable := byte(0)
	if t.Restorable {
		restorable = 1
	}
	b = append(b, restorable)
	b = appendString(b, t.Error)
	b = appendString(b, t.Path)
	if t.Rendered != "" {
		b[start] = journalV3
		b = appendString(b, t.Rendered)
	}
	return b
}

func appendString(b []byte, s string) []byte {
	return append(binary.AppendUvarint(b, uint64(len(s))), s...)
}

var errBadEntry = errors.New("malformed journal entry")

// decodeTransition reads a stored journal entry, binary or JSON.
func decodeTransition(b []byte) (execute.Transition, error) {
	var t execute.Transition
	if len(b) > 0 && b[0] == '{' {
		err := json.Unmarshal(b, &t)
		return t, err
	}
	if len(b) == 0 || (b[0] != journalV2 && b[0] != journalV3) {
		return t, fmt.Errorf("%w: unknown version", errBadEntry)
	}
	d := decoder{b: b[1:]}
	t.AssetID = d.string()
	t.From = svcv1.StepState(d.varint())
	t.To = svcv1.StepState(d.varint())
	t.Step = d.string()
	t.Status = d.string()
	if at := d.varint(); at != 0 {
		t.At = time.Unix(0, at).UTC()
	}
	t.VaultID = d.string()
	t.VaultSHA256 = d.string()
	t.Bytes = d.varint()
	t.ResultID = d.string()
	t.Restorable = d.byte() == 1
	t.Error = d.string()
	t.Path = d.string()
	if b[0] == journalV3 {
		if t.Rendered = d.string(); t.Rendered == "" {
			d.fail() // one form per entry: without it, the entry is a journalV2 one
		}
	}
	if d.err != nil || len(d.b) != 0 {
		return execute.Transition{}, fmt.Errorf("%w: %d bytes", errBadEntry, len(b))
	}
	return t, nil
}

// decoder reads the fields of a binary journal entry; the first error sticks.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) varint() int64 {
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.fail()
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) byte() byte {
	if len(d.b) == 0 {
		d.fail()
		return 0
	}
	c := d.b[0]
	d.b = d.b[1:]
	return c
}

func (d *decoder) string() string {
	n, k := binary.Uvarint(d.b)
	if k <= 0 || n > uint64(len(d.b)-k) {
		d.fail()
		return ""
	}
	s := string(d.b[k : k+int(n)])
	d.b = d.b[k+int(n):]
	return s
}

func (d *decoder) fail() {
	if d.err == nil {
		d.err = errBadEntry
	}
	d.b = nil
}
