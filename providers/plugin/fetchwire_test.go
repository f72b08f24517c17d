package plugin

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"pgregory.net/rapid"

	"svc.dev/svc/providers"
	"svc.dev/svc/providers/internal/pluginpb"
)

// TestFetchBatchEncodeMatchesMarshal checks the plugin's encoder of batch fetch results against
// proto.Marshal of the generated messages.
func TestFetchBatchEncodeMatchesMarshal(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		want := &pluginpb.FetchBatchResponse{}
		var b []byte
		for i := range rapid.IntRange(0, 4).Draw(t, "n") {
			var out providers.FetchOutcome
			index := i + rapid.IntRange(0, 300).Draw(t, "skip")*i
			r := &pluginpb.FetchBatchResult{Index: uint32(index)}
			switch rapid.IntRange(0, 3).Draw(t, "kind") {
			case 0:
				out.Err = fmt.Errorf("boom %d: %w", i, rapid.SampledFrom([]error{providers.ErrNotFound, providers.ErrTransient, errors.New("x")}).Draw(t, "err"))
				r.Error, r.ErrorMessage = itemError(out.Err)
			case 1:
				out.Err = &providers.VersionMismatchError{ObjectID: "o", Expected: "v1", Actual: "v2"}
				r.Error, r.ErrorMessage = itemError(out.Err)
			case 2:
				out.Deferred, r.Deferred = true, true
			default:
				out.Object = genObject(t)
				out.Content = make([]byte, rapid.SampledFrom([]int{0, 1, 127, 128, 16<<10 - 1100, 16 << 10, 70000}).Draw(t, "size"))
				r.Object, r.Content = objectToProto(&out.Object), out.Content
			}
			want.Results = append(want.Results, r)
			b = appendFetchBatchResult(b, index, &out)
		}
		var got pluginpb.FetchBatchResponse
		if err := proto.Unmarshal(b, &got); err != nil {
			t.Fatal(err)
		}
		if !proto.Equal(&got, want) {
			t.Fatalf("encoded %v\nwant    %v", &got, want)
		}
	})
}

// TestFetchBatchDecodeAgreesWithGeneric holds the host's fast decoder of batch fetch results to
// the generic path (proto.Unmarshal, protovalidate, checkItems) on generated messages whose
// objects break the rules now and then, and on a few encodings the plugin never writes.
func TestFetchBatchDecodeAgreesWithGeneric(t *testing.T) {
	check := func(t interface {
		Helper()
		Fatalf(string, ...any)
	}, raw []byte) {
		t.Helper()
		fast, ferr := decodeFetchBatchFast(raw)
		if errors.Is(ferr, errGeneric) {
			return // left to the generic path, which decides
		}
		slow, serr := decodeFetchBatchGeneric(raw)
		if (ferr == nil) != (serr == nil) {
			t.Fatalf("fast path says %v, generic path %v", ferr, serr)
		}
		if ferr != nil {
			if !errors.Is(ferr, providers.ErrInvalidResponse) {
				t.Fatalf("fast path error %v does not wrap ErrInvalidResponse", ferr)
			}
			return
		}
		norm := func(rs []batchResult) []batchResult {
			for i := range rs {
				if len(rs[i].content) == 0 {
					rs[i].content = nil
				}
			}
			return rs
		}
		if len(fast) != len(slow) {
			t.Fatalf("fast path %d results, generic %d", len(fast), len(slow))
		}
		fast, slow = norm(fast), norm(slow)
		for i := range fast {
			f, s := fast[i], slow[i]
			if f.index != s.index || f.deferred != s.deferred || f.errMsg != s.errMsg || !bytes.Equal(f.content, s.content) ||
				!proto.Equal(f.errInfo, s.errInfo) || (f.object == nil) != (s.object == nil) || (f.object != nil && !reflect.DeepEqual(*f.object, *s.object)) {
				t.Fatalf("result %d: fast %+v, generic %+v", i, f, s)
			}
		}
	}
	rapid.Check(t, func(t *rapid.T) {
		resp := &pluginpb.FetchBatchResponse{}
		for i := range rapid.IntRange(0, 3).Draw(t, "n") {
			r := &pluginpb.FetchBatchResult{Index: uint32(i)}
			switch rapid.IntRange(0, 2).Draw(t, "kind") {
			case 0:
				r.Error = &pluginpb.ErrorInfo{Code: "not_found"}
				r.ErrorMessage = genString(t, "msg", maxResultErrorBytes, true)
			case 1:
				r.Deferred = true
			default:
				r.Object = genObjectProto(t, true)
				r.Content = make([]byte, rapid.IntRange(0, 300).Draw(t, "size"))
			}
			resp.Results = append(resp.Results, r)
		}
		raw, err := proto.Marshal(resp)
		if err != nil {
			t.Fatal(err)
		}
		check(t, raw)
	})
	vint := func(num protowire.Number, v uint64) []byte {
		return protowire.AppendVarint(protowire.AppendTag(nil, num, protowire.VarintType), v)
	}
	msg := func(num protowire.Number, parts ...[]byte) []byte {
		return protowire.AppendBytes(protowire.AppendTag(nil, num, protowire.BytesType), bytes.Join(parts, nil))
	}
	obj := msg(fResObject, protowire.AppendString(protowire.AppendTag(nil, fObjID, protowire.BytesType), "a"), vint(fObjKind, 3))
	for _, raw := range [][]byte{
		msg(fBatchResults, obj, obj),                                 // an object sent twice is merged
		msg(fBatchResults, vint(fResIndex, 1<<33+2), obj),            // index truncated to uint32
		msg(fBatchResults, msg(fResIndex), obj),                      // index with another wire type
		msg(fBatchResults, obj, msg(fResErrorMessage, []byte{0xff})), // invalid UTF-8
		msg(fBatchResults, obj, vint(99, 1)),                         // unknown field
		vint(fBatchResults, 1),
		msg(fBatchResults, obj)[:4],
		{},
	} {
		check(t, raw)
		if _, err := decodeFetchBatch(raw); err != nil && !errors.Is(err, providers.ErrInvalidResponse) {
			t.Fatalf("%x: %v", raw, err)
		}
	}
}
