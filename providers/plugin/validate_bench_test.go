package plugin

import (
	"context"
	"testing"

	"google.golang.org/protobuf/proto"

	"svc.dev/svc/providers"
	"svc.dev/svc/providers/internal/pluginpb"
	"svc.dev/svc/providers/simulated"
)

func listResponse(b *testing.B) *pluginpb.ListResponse {
	p, _ := simulated.New(context.Background(), providers.Config{"objects": "1000"})
	page, err := p.List(context.Background(), providers.ListRequest{SourceRef: "files", PageSize: 1000})
	if err != nil {
		b.Fatal(err)
	}
	resp := &pluginpb.ListResponse{Marker: markerToProto(page.Marker)}
	for i := range page.Objects {
		resp.Objects = append(resp.Objects, objectToProto(&page.Objects[i]))
	}
	return resp
}

// BenchmarkValidateListPage measures the host's protovalidate check of a
// page of 1000 objects.
func BenchmarkValidateListPage(b *testing.B) {
	resp := listResponse(b)
	if err := validate(resp); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for range b.N {
		if err := validate(resp); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*1000)/b.Elapsed().Seconds(), "obj/s")
}

// BenchmarkConvertListPage measures converting a page to and from the wire.
func BenchmarkConvertListPage(b *testing.B) {
	p, _ := simulated.New(context.Background(), providers.Config{"objects": "1000"})
	page, _ := p.List(context.Background(), providers.ListRequest{SourceRef: "files", PageSize: 1000})
	b.ResetTimer()
	for range b.N {
		resp := &pluginpb.ListResponse{}
		for i := range page.Objects {
			resp.Objects = append(resp.Objects, objectToProto(&page.Objects[i]))
		}
		for _, o := range resp.Objects {
			_ = objectFromProto(o)
		}
	}
	b.ReportMetric(float64(b.N*1000)/b.Elapsed().Seconds(), "obj/s")
}

// BenchmarkWireListPage measures marshal (plugin side) and unmarshal (host
// side) of a page of 1000 objects.
func BenchmarkWireListPage(b *testing.B) {
	resp := listResponse(b)
	raw, _ := proto.Marshal(resp)
	b.Run("marshal", func(b *testing.B) {
		for range b.N {
			_, _ = proto.Marshal(resp)
		}
		b.ReportMetric(float64(b.N*1000)/b.Elapsed().Seconds(), "obj/s")
	})
	b.Run("unmarshal", func(b *testing.B) {
		for range b.N {
			var m pluginpb.ListResponse
			_ = proto.Unmarshal(raw, &m)
		}
		b.ReportMetric(float64(b.N*1000)/b.Elapsed().Seconds(), "obj/s")
	})
	b.ReportMetric(float64(len(raw))/1000, "bytes/obj")
}

func simulatedPage(b *testing.B, src string) providers.Page {
	p, _ := simulated.New(context.Background(), providers.Config{"objects": "1000"})
	page, err := p.List(context.Background(), providers.ListRequest{SourceRef: src, PageSize: 1000})
	if err != nil {
		b.Fatal(err)
	}
	return page
}

// BenchmarkEncodeListPage measures the plugin's side of a page of 1000
// objects as shipped: providers.Objects written straight into the wire
// format, in a reused buffer.
func BenchmarkEncodeListPage(b *testing.B) {
	for _, src := range []string{"files", "mail"} {
		b.Run(src, func(b *testing.B) {
			page := simulatedPage(b, src)
			var buf []byte // reused, as server.List does for a lane
			for range b.N {
				buf = appendListResponse(buf[:0], &page)
			}
			n := len(buf)
			b.ReportMetric(float64(b.N*1000)/b.Elapsed().Seconds(), "obj/s")
			b.ReportMetric(float64(n)/1000, "bytes/obj")
		})
	}
}

// BenchmarkDecodeListPage measures the host's side of a page of 1000
// objects: the fast path as shipped (decode and check in one pass) and the
// generic path it falls back to (proto.Unmarshal, protovalidate, checkItems,
// conversion).
func BenchmarkDecodeListPage(b *testing.B) {
	for _, src := range []string{"files", "mail"} {
		page := simulatedPage(b, src)
		raw := appendListResponse(nil, &page)
		b.Run(src+"/fast", func(b *testing.B) {
			for range b.N {
				if _, err := decodeListResponse(raw, nil); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N*1000)/b.Elapsed().Seconds(), "obj/s")
		})
		b.Run(src+"/generic", func(b *testing.B) {
			for range b.N {
				if _, err := decodeListResponseGeneric(raw, nil); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N*1000)/b.Elapsed().Seconds(), "obj/s")
		})
	}
}
