package plugin

import (
	"bytes"
	"errors"
	"unicode/utf8"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"svc.dev/svc/providers"
	"svc.dev/svc/providers/internal/pluginpb"
)

// A batch fetch's results are written in FetchBatchResponse's wire format by hand, as listing
// pages are (listwire.go): a pluginpb.Object built and marshalled per object cost the plugin
// more than reading the message. The bytes are an ordinary FetchBatchResponse.

// Field numbers of FetchBatchResponse and FetchBatchResult in provider.proto.
const (
	fBatchResults = 1

	fResIndex, fResObject, fResContent, fResDeferred, fResError, fResErrorMessage = 1, 2, 3, 4, 5, 6
)

// appendFetchBatchResult appends one result, as a FetchBatchResponse's results field: what
// proto.Marshal writes for the FetchBatchResult the generated code would build, field for
// field.
func appendFetchBatchResult(b []byte, i int, out *providers.FetchOutcome) []byte {
	guess := 2
	if len(out.Content) >= 16<<10-1024 {
		guess = 3
	}
	return appendNested(b, fBatchResults, guess, func(b []byte) []byte {
		if i != 0 {
			b = appendTag(b, fResIndex, protowire.VarintType)
			b = appendVarint(b, uint64(i))
		}
		switch {
		case out.Err != nil:
			info, msg := itemError(out.Err)
			b = appendNested(b, fResError, 1, func(b []byte) []byte {
				b, _ = proto.MarshalOptions{Deterministic: true}.MarshalAppend(b, info)
				return b
			})
			return appendString(b, fResErrorMessage, msg)
		case out.Deferred:
			return appendBool(b, fResDeferred, true)
		}
		b = appendNested(b, fResObject, 2, func(b []byte) []byte { return appendObject(b, &out.Object) })
		if len(out.Content) > 0 {
			b = appendTag(b, fResContent, protowire.BytesType)
			b = appendVarint(b, uint64(len(out.Content)))
			b = append(b, out.Content...)
		}
		return b
	})
}

// ---- host side: FetchBatchResponse wire format -> checked results ----

// batchMessage is what listCodec decodes a FetchBatchResponse into: its results, each object
// decoded and checked as a listing's objects are, or the message's failure (err, which wraps
// providers.ErrInvalidResponse).
type batchMessage struct {
	results []batchResult
	err     error
}

// batchResult is one FetchBatchResult, decoded.
type batchResult struct {
	index    uint64
	object   *providers.Object // nil when the result has none
	content  []byte            // a copy
	deferred bool
	errInfo  *pluginpb.ErrorInfo
	errMsg   string
}

// maxResultErrorBytes is FetchBatchResult.error_message's max_bytes.
const maxResultErrorBytes = 8192

// decodeFetchBatch decodes and checks a FetchBatchResponse, on the fast path when it can (the
// encoding appendFetchBatchResult writes), else through proto.Unmarshal and protovalidate.
func decodeFetchBatch(b []byte) ([]batchResult, error) {
	res, err := decodeFetchBatchFast(b)
	if errors.Is(err, errGeneric) {
		return decodeFetchBatchGeneric(b)
	}
	return res, err
}

// decodeFetchBatchGeneric is the reference path.
func decodeFetchBatchGeneric(b []byte) ([]batchResult, error) {
	var resp pluginpb.FetchBatchResponse
	if err := proto.Unmarshal(b, &resp); err != nil {
		return nil, invalid("%v", err)
	}
	if err := validate(&resp); err != nil {
		return nil, err
	}
	out := make([]batchResult, len(resp.GetResults()))
	for i, r := range resp.GetResults() {
		out[i] = batchResult{index: uint64(r.GetIndex()), content: r.GetContent(), deferred: r.GetDeferred(), errInfo: r.GetError(), errMsg: r.GetErrorMessage()}
		if om := r.GetObject(); om != nil {
			if err := checkItems(om); err != nil {
				return nil, err
			}
			o := objectFromProto(om)
			out[i].object = &o
		}
	}
	return out, nil
}

// decodeFetchBatchFast is the fast path; it returns errGeneric for what only the generic path
// can decide (a field sent twice that protobuf would merge, an unexpected wire type).
func decodeFetchBatchFast(b []byte) ([]batchResult, error) {
	count := 0
	for d := (wire{s: b}); !d.done(); {
		num, typ, ok := d.tag()
		switch {
		case !ok:
			return nil, errGeneric
		case num == fBatchResults && typ == protowire.BytesType:
			if _, ok := d.bytes(); !ok {
				return nil, errGeneric
			}
			count++
		case num == fBatchResults:
			return nil, errGeneric
		default:
			if !d.skip(num, typ) {
				return nil, errGeneric
			}
		}
	}
	if count > providers.MaxBatchSize {
		return nil, invalid("fetch batch message of %d results", count)
	}
	out := make([]batchResult, 0, count)
	for d := (wire{s: b}); !d.done(); {
		num, typ, _ := d.tag()
		if num != fBatchResults {
			d.skip(num, typ)
			continue
		}
		v, _ := d.bytes()
		r, err := decodeBatchResult(v)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

func decodeBatchResult(b []byte) (batchResult, error) {
	var r batchResult
	var object, info []byte
	seenObject, seenInfo := false, false
	for d := (wire{s: b}); !d.done(); {
		num, typ, ok := d.tag()
		if !ok {
			return r, errGeneric
		}
		want := protowire.BytesType
		if num == fResIndex || num == fResDeferred {
			want = protowire.VarintType
		}
		if num > fResErrorMessage || num < fResIndex {
			if !d.skip(num, typ) {
				return r, errGeneric
			}
			continue
		}
		if typ != want {
			return r, errGeneric
		}
		if want == protowire.VarintType {
			v, ok := d.varint()
			if !ok {
				return r, errGeneric
			}
			if num == fResIndex {
				r.index = uint64(uint32(v))
			} else {
				r.deferred = v != 0
			}
			continue
		}
		v, ok := d.bytes()
		if !ok {
			return r, errGeneric
		}
		switch num {
		case fResObject:
			if seenObject {
				return r, errGeneric // merged by protobuf
			}
			seenObject, object = true, v
		case fResError:
			if seenInfo {
				return r, errGeneric
			}
			seenInfo, info = true, v
		case fResContent:
			r.content = v
		case fResErrorMessage:
			if !utf8.Valid(v) {
				return r, invalid("error_message: invalid UTF-8")
			}
			if len(v) > maxResultErrorBytes {
				return r, invalid("error_message: %d bytes, more than %d", len(v), maxResultErrorBytes)
			}
			r.errMsg = string(v)
		}
	}
	if r.content != nil {
		r.content = bytes.Clone(r.content) // the message's buffer goes back to gRPC
	}
	if seenObject {
		r.object = new(providers.Object)
		if err := decodeObject(object, r.object); err != nil {
			return r, err
		}
	}
	if seenInfo {
		r.errInfo = new(pluginpb.ErrorInfo)
		if err := proto.Unmarshal(info, r.errInfo); err != nil {
			return r, errGeneric
		}
	}
	return r, nil
}
