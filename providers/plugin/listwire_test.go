package plugin

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"
	"pgregory.net/rapid"

	"svc.dev/svc/providers"
	"svc.dev/svc/providers/internal/pluginpb"
)

// The listing fast path (listwire.go) must accept exactly what the generic
// path (proto.Unmarshal, protovalidate, checkItems) accepts and decode it to
// the same page. These tests hold it to that with protovalidate as the
// oracle.

// genString draws a string for a field limited to limit bytes: usually
// short and clean, sometimes at or around the limit, sometimes with the
// characters the rules care about (controls, upper case, multi-byte).
func genString(t *rapid.T, label string, limit int, edgy bool) string {
	n := rapid.IntRange(0, 12).Draw(t, label+".len")
	if edgy && rapid.IntRange(0, 4).Draw(t, label+".edge") == 0 {
		n = rapid.SampledFrom([]int{0, 1, limit - 1, limit, limit + 1}).Draw(t, label+".edgelen")
	}
	alphabet := "abcdefxyz0189/-_."
	if edgy && rapid.IntRange(0, 5).Draw(t, label+".chars") == 0 {
		alphabet = "aF9 \x00\x1f\x7fé€"
	}
	var b strings.Builder
	for b.Len() < n {
		r := []rune(alphabet)
		b.WriteRune(r[rapid.IntRange(0, len(r)-1).Draw(t, label+".c")])
	}
	return b.String()
}

func genEnum(t *rapid.T, label string, max int32, edgy bool) int32 {
	if edgy && rapid.IntRange(0, 5).Draw(t, label+".edge") == 0 {
		return rapid.SampledFrom([]int32{-1, 0, max + 1, 1 << 20}).Draw(t, label)
	}
	return rapid.Int32Range(1, max).Draw(t, label)
}

func genCount(t *rapid.T, label string, limit int, edgy bool) int {
	if edgy && rapid.IntRange(0, 9).Draw(t, label+".edge") == 0 {
		return rapid.SampledFrom([]int{limit, limit + 1}).Draw(t, label)
	}
	return rapid.IntRange(0, 3).Draw(t, label)
}

func genTime(t *rapid.T, label string) *timestamppb.Timestamp {
	if rapid.Bool().Draw(t, label+".nil") {
		return nil
	}
	return &timestamppb.Timestamp{
		Seconds: rapid.Int64Range(-1e10, 1e10).Draw(t, label+".s"),
		Nanos:   rapid.Int32Range(-5, 999_999_999).Draw(t, label+".n"),
	}
}

func genObjectProto(t *rapid.T, edgy bool) *pluginpb.Object {
	o := &pluginpb.Object{
		Id:         genString(t, "id", maxIDBytes, edgy),
		ParentId:   genString(t, "parent", maxIDBytes, edgy),
		Version:    genString(t, "version", maxIDBytes, edgy),
		Kind:       pluginpb.ObjectKind(genEnum(t, "kind", int32(len(providers.Kinds)), edgy)),
		Name:       genString(t, "name", maxNameBytes, edgy),
		Path:       genString(t, "path", maxPathBytes, edgy),
		SizeBytes:  rapid.Int64Range(0, 1<<40).Draw(t, "size"),
		MimeType:   genString(t, "mime", maxMIMEBytes, edgy),
		CreatedAt:  genTime(t, "created"),
		ModifiedAt: genTime(t, "modified"),
		Starred:    rapid.Bool().Draw(t, "starred"),
		Shared:     rapid.Bool().Draw(t, "shared"),
	}
	if o.Id == "" && !edgy {
		o.Id = "x"
	}
	if edgy && rapid.IntRange(0, 9).Draw(t, "size.edge") == 0 {
		o.SizeBytes = rapid.SampledFrom([]int64{-1, -1 << 40}).Draw(t, "size.neg")
	}
	o.Sha256 = rapid.SampledFrom([]string{"", strings.Repeat("0123456789abcdef", 4)}).Draw(t, "sha")
	if edgy && rapid.IntRange(0, 5).Draw(t, "sha.edge") == 0 {
		o.Sha256 = rapid.SampledFrom([]string{
			strings.Repeat("0123456789ABCDEF", 4), strings.Repeat("a", 63), strings.Repeat("a", 65), strings.Repeat("g", 64), " ",
		}).Draw(t, "sha.bad")
	}
	for i := range genCount(t, "containers", maxItems, edgy) {
		limit := maxContainerBytes
		if i > 3 {
			limit = 8 // many items: keep them short
		}
		o.Containers = append(o.Containers, genString(t, "container", limit, edgy && i <= 3))
	}
	if rapid.Bool().Draw(t, "hasMessage") {
		h := &pluginpb.MessageHeaders{
			From:                genString(t, "from", maxFromBytes, edgy),
			Subject:             genString(t, "subject", maxSubjectBytes, edgy),
			Date:                genTime(t, "date"),
			ThreadId:            genString(t, "thread", maxThreadBytes, edgy),
			ListId:              genString(t, "listid", maxThreadBytes, edgy),
			ListUnsubscribe:     genString(t, "unsub", maxListUnsubBytes, edgy),
			ListUnsubscribePost: rapid.Bool().Draw(t, "unsubpost"),
			Snippet:             genString(t, "snippet", maxSnippetBytes, edgy),
		}
		for i := range genCount(t, "to", maxItems, edgy) {
			h.To = append(h.To, genString(t, "to", maxRecipientBytes, edgy && i <= 3))
		}
		for i := range genCount(t, "cc", maxItems, edgy) {
			h.Cc = append(h.Cc, genString(t, "cc", maxRecipientBytes, edgy && i <= 3))
		}
		o.Message = h
	}
	for i := range genCount(t, "permissions", maxItems, edgy) {
		p := &pluginpb.Permission{
			Principal: genString(t, "principal", maxPrincipalBytes, edgy && i <= 3),
			Role:      pluginpb.PermissionRole(genEnum(t, "role", int32(len(roles)), edgy && i <= 3)),
			Type:      pluginpb.PermissionType(genEnum(t, "ptype", int32(len(ptype)), edgy && i <= 3)),
		}
		if p.Principal == "" && !edgy {
			p.Principal = "p"
		}
		o.Permissions = append(o.Permissions, p)
	}
	if n := genCount(t, "metadata", maxMetadataPairs, edgy); n > 0 {
		o.Metadata = make(map[string]string)
		for i := range n {
			k := genString(t, "key", maxMetaKeyBytes, edgy && i <= 3)
			if i > 3 || (k == "" && !edgy) {
				k = "k" + string(rune('a'+i%26)) + strings.Repeat("z", i/26)
			}
			o.Metadata[k] = genString(t, "value", maxMetaValueBytes, edgy && i <= 3)
		}
	}
	return o
}

func genListResponse(t *rapid.T) *pluginpb.ListResponse {
	edgy := rapid.Bool().Draw(t, "edgy")
	resp := &pluginpb.ListResponse{NextPageToken: genString(t, "token", maxTokenBytes, edgy)}
	for range rapid.IntRange(0, 3).Draw(t, "objects") {
		resp.Objects = append(resp.Objects, genObjectProto(t, edgy))
	}
	if rapid.Bool().Draw(t, "hasMarker") {
		resp.Marker = &pluginpb.Marker{
			Kind:  pluginpb.MarkerKind(genEnum(t, "markerKind", int32(len(providers.MarkerKinds)), edgy)),
			Value: genString(t, "markerValue", maxMarkerBytes, edgy),
		}
	}
	return resp
}

// agree checks that the fast and the generic path give the same verdict on
// raw, and the same page when they accept it.
func agree(t interface {
	Helper()
	Fatalf(string, ...any)
}, raw []byte, fastMayDefer bool) {
	t.Helper()
	fast, ferr := decodeListResponse(raw, nil)
	if errors.Is(ferr, errGeneric) {
		if !fastMayDefer {
			t.Fatalf("canonical encoding left to the generic path")
		}
		return
	}
	ref, rerr := decodeListResponseGeneric(raw, nil)
	if (ferr == nil) != (rerr == nil) {
		t.Fatalf("fast path: %v; generic path: %v", ferr, rerr)
	}
	if ferr != nil {
		if !errors.Is(ferr, providers.ErrInvalidResponse) {
			t.Fatalf("fast path error %v does not wrap ErrInvalidResponse", ferr)
		}
		return
	}
	if !reflect.DeepEqual(fast, ref) {
		t.Fatalf("pages differ:\nfast    %+v\ngeneric %+v", fast, ref)
	}
}

// TestListDecodeAgreesWithProtovalidate draws pages near every limit of
// provider.proto's rules and the rules checked in Go, encodes them with
// proto.Marshal and checks the fast path against the generic one: whole
// pages, and each object on a page of its own (on a whole page, one invalid
// object would hide the verdict on the others).
func TestListDecodeAgreesWithProtovalidate(t *testing.T) {
	t.Parallel()
	rapid.Check(t, func(t *rapid.T) {
		resp := genListResponse(t)
		raw, err := proto.Marshal(resp)
		if err != nil {
			t.Fatal(err)
		}
		agree(t, raw, false)
		for _, o := range resp.Objects {
			raw, err := proto.Marshal(&pluginpb.ListResponse{Objects: []*pluginpb.Object{o}})
			if err != nil {
				t.Fatal(err)
			}
			agree(t, raw, false)
		}
	})
}

// TestListDecodeLimits walks every rule at its limit: the value just inside
// must pass and the value just outside must fail, on both paths (so the
// expectations here are protovalidate's too).
func TestListDecodeLimits(t *testing.T) {
	t.Parallel()
	a := func(n int) string { return strings.Repeat("a", n) }
	items := func(n, size int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = a(size)
		}
		return out
	}
	perms := func(n int) []*pluginpb.Permission {
		out := make([]*pluginpb.Permission, n)
		for i := range out {
			out[i] = &pluginpb.Permission{Principal: "p", Role: 1, Type: 1}
		}
		return out
	}
	meta := func(n int) map[string]string {
		out := make(map[string]string, n)
		for i := range n {
			out[strings.Repeat("k", i+1)] = "v"
		}
		return out
	}
	type edit func(r *pluginpb.ListResponse, o *pluginpb.Object)
	rules := []struct {
		name       string
		in, out    edit
		outIsValid bool
	}{
		{"id", func(_ *pluginpb.ListResponse, o *pluginpb.Object) { o.Id = a(1024) }, func(_ *pluginpb.ListResponse, o *pluginpb.Object) { o.Id = a(1025) }, false},
		{"id empty", func(_ *pluginpb.ListResponse, o *pluginpb.Object) { o.Id = "é" }, func(_ *pluginpb.ListResponse, o *pluginpb.Object) { o.Id = "" }, false},
		{"id bytes", func(_ *pluginpb.ListResponse, o *pluginpb.Object) { o.Id = strings.Repeat("é", 512) }, func(_ *pluginpb.ListResponse, o *pluginpb.Object) { o.Id = strings.Repeat("é", 512) + "a" }, false},
		{"id control", func(_ *pluginpb.ListResponse, o *pluginpb.Object) { o.Id = "a\u0080" }, func(_ *pluginpb.ListResponse, o *pluginpb.Object) { o.Id = "a\x1f" }, false},
		{"id delete", func(_ *pluginpb.ListResponse, o *pluginpb.Object) { o.Id = "a~" }, func(_ *pluginpb.ListResponse, o *pluginpb.Object) { o.Id = "a\x7f" }, false},
		{"parent_id", func(_ *pluginpb.ListResponse, o *pluginpb.Object) { o.ParentId = a(1024) }, func(_ *pluginpb.ListResponse, o *pluginpb.Object) { o.ParentId = a(1025) }, false},
		{"parent_id control", func(_ *pluginpb.ListResponse, o *pluginpb.Object) { o.ParentId = " " }, func(_ *pluginpb.ListResponse, o *pluginpb.Object) { o.ParentId = "\x00" }, false},
		{"version", func(_ *pluginpb.ListResponse, o *pluginpb.Object) { o.Version = a(1024) }, func(_ *pluginpb.ListResponse, o *pluginpb.Object) { o.Version = a(1025) }, false},
		{"version control", func(_ *pluginpb.ListResponse, o *pluginpb.Object) { o.Version = "v" }, func(_ *pluginpb.ListResponse, o *pluginpb.Object) { o.Version = "v\n" }, false},
		{"kind low", func(_ *pluginpb.ListResponse, o *pluginpb.Object) { o.Kind = 1 }, func(_ *pluginpb.ListResponse, o *pluginpb.Object) { o.Kind = 0 }, false},
		{"kind high", func(_ *pluginpb.ListResponse, o *pluginpb.Object) { o.Kind = 8 }, func(_ *pluginpb.ListResponse, o *pluginpb.Object) { o.Kind = 9 }, false},
		{"kind negative", func(_ *pluginpb.ListResponse, o *pluginpb.Object) { o.Kind = 2 }, func(_ *pluginpb.ListResponse, o *pluginpb.Object) { o.Kind = -1 }, false},
		{"name", func(_ *pluginpb.ListResponse, o *pluginpb.Object) { o.Name = a(4096) }, func(_ *pluginpb.ListResponse, o *pluginpb.Object) { o.Name = a(4097) }, false},
		{"path", func(_ *pluginpb.ListResponse, o *pluginpb.Object) { o.Path = a(8192) }, func(_ *pluginpb.ListResponse, o *pluginpb.Object) { o.Path = a(8193) }, false},
		{"size", func(_ *pluginpb.ListResponse, o *pluginpb.Object) { o.SizeBytes = 0 }, func(_ *pluginpb.ListResponse, o *pluginpb.Object) { o.SizeBytes = -1 }, false},
		{"sha256 case", func(_ *pluginpb.ListResponse, o *pluginpb.Object) { o.Sha256 = strings.Repeat("af09", 16) }, func(_ *pluginpb.ListResponse, o *pluginpb.Object) { o.Sha256 = strings.Repeat("AF09", 16) }, false},
		{"sha256 length", func(_ *pluginpb.ListResponse, o *pluginpb.Object) { o.Sha256 = "" }, func(_ *pluginpb.ListResponse, o *pluginpb.Object) { o.Sha256 = strings.Repeat("a", 63) }, false},
		{"sha256 long", func(_ *pluginpb.ListResponse, o *pluginpb.Object) { o.Sha256 = strings.Repeat("f", 64) }, func(_ *pluginpb.ListResponse, o *pluginpb.Object) { o.Sha256 = strings.Repeat("f", 65) }, false},
		{"sha256 digit", func(_ *pluginpb.ListResponse, o *pluginpb.Object) { o.Sha256 = strings.Repeat("9", 64) }, func(_ *pluginpb.ListResponse, o *pluginpb.Object) { o.Sha256 = strings.Repeat("g", 64) }, false},
		{"mime_type", func(_ *pluginpb.ListResponse, o *pluginpb.Object) { o.MimeType = a(255) }, func(_ *pluginpb.ListResponse, o *pluginpb.Object) { o.MimeType = a(256) }, false},
		{"containers", func(_ *pluginpb.ListResponse, o *pluginpb.Object) { o.Containers = items(1000, 1) }, func(_ *pluginpb.ListResponse, o *pluginpb.Object) { o.Containers = items(1001, 1) }, false},
		{"container", func(_ *pluginpb.ListResponse, o *pluginpb.Object) { o.Containers = items(2, 4096) }, func(_ *pluginpb.ListResponse, o *pluginpb.Object) { o.Containers = items(2, 4097) }, false},
		{"from", func(_ *pluginpb.ListResponse, o *pluginpb.Object) { o.Message.From = a(2048) }, func(_ *pluginpb.ListResponse, o *pluginpb.Object) { o.Message.From = a(2049) }, false},
		{"to", func(_ *pluginpb.ListResponse, o *pluginpb.Object) { o.Message.To = items(1000, 1) }, func(_ *pluginpb.ListResponse, o *pluginpb.Object) { o.Message.To = items(1001, 1) }, false},
		{"to item", func(_ *pluginpb.ListResponse, o *pluginpb.Object) { o.Message.To = items(1, 2048) }, func(_ *pluginpb.ListResponse, o *pluginpb.Object) { o.Message.To = items(1, 2049) }, false},
		{"cc", func(_ *pluginpb.ListResponse, o *pluginpb.Object) { o.Message.Cc = items(1000, 1) }, func(_ *pluginpb.ListResponse, o *pluginpb.Object) { o.Message.Cc = items(1001, 1) }, false},
		{"cc item", func(_ *pluginpb.ListResponse, o *pluginpb.Object) { o.Message.Cc = items(1, 2048) }, func(_ *pluginpb.ListResponse, o *pluginpb.Object) { o.Message.Cc = items(1, 2049) }, false},
		{"subject", func(_ *pluginpb.ListResponse, o *pluginpb.Object) { o.Message.Subject = a(4096) }, func(_ *pluginpb.ListResponse, o *pluginpb.Object) { o.Message.Subject = a(4097) }, false},
		{"thread_id", func(_ *pluginpb.ListResponse, o *pluginpb.Object) { o.Message.ThreadId = a(1024) }, func(_ *pluginpb.ListResponse, o *pluginpb.Object) { o.Message.ThreadId = a(1025) }, false},
		{"list_id", func(_ *pluginpb.ListResponse, o *pluginpb.Object) { o.Message.ListId = a(1024) }, func(_ *pluginpb.ListResponse, o *pluginpb.Object) { o.Message.ListId = a(1025) }, false},
		{"list_unsubscribe", func(_ *pluginpb.ListResponse, o *pluginpb.Object) { o.Message.ListUnsubscribe = a(4096) }, func(_ *pluginpb.ListResponse, o *pluginpb.Object) { o.Message.ListUnsubscribe = a(4097) }, false},
		{"snippet", func(_ *pluginpb.ListResponse, o *pluginpb.Object) { o.Message.Snippet = a(1024) }, func(_ *pluginpb.ListResponse, o *pluginpb.Object) { o.Message.Snippet = a(1025) }, false},
		{"permissions", func(_ *pluginpb.ListResponse, o *pluginpb.Object) { o.Permissions = perms(1000) }, func(_ *pluginpb.ListResponse, o *pluginpb.Object) { o.Permissions = perms(1001) }, false},
		{"principal", func(_ *pluginpb.ListResponse, o *pluginpb.Object) { o.Permissions[0].Principal = a(1024) }, func(_ *pluginpb.ListResponse, o *pluginpb.Object) { o.Permissions[0].Principal = a(1025) }, false},
		{"principal empty", func(_ *pluginpb.ListResponse, o *pluginpb.Object) { o.Permissions[0].Principal = "x" }, func(_ *pluginpb.ListResponse, o *pluginpb.Object) { o.Permissions[0].Principal = "" }, false},
		{"role", func(_ *pluginpb.ListResponse, o *pluginpb.Object) { o.Permissions[0].Role = 5 }, func(_ *pluginpb.ListResponse, o *pluginpb.Object) { o.Permissions[0].Role = 6 }, false},
		{"role unspecified", func(_ *pluginpb.ListResponse, o *pluginpb.Object) { o.Permissions[0].Role = 1 }, func(_ *pluginpb.ListResponse, o *pluginpb.Object) { o.Permissions[0].Role = 0 }, false},
		{"type", func(_ *pluginpb.ListResponse, o *pluginpb.Object) { o.Permissions[0].Type = 6 }, func(_ *pluginpb.ListResponse, o *pluginpb.Object) { o.Permissions[0].Type = 7 }, false},
		{"type unspecified", func(_ *pluginpb.ListResponse, o *pluginpb.Object) { o.Permissions[0].Type = 1 }, func(_ *pluginpb.ListResponse, o *pluginpb.Object) { o.Permissions[0].Type = 0 }, false},
		{"metadata", func(_ *pluginpb.ListResponse, o *pluginpb.Object) { o.Metadata = meta(256) }, func(_ *pluginpb.ListResponse, o *pluginpb.Object) { o.Metadata = meta(257) }, false},
		{"metadata key", func(_ *pluginpb.ListResponse, o *pluginpb.Object) { o.Metadata = map[string]string{a(256): ""} }, func(_ *pluginpb.ListResponse, o *pluginpb.Object) { o.Metadata = map[string]string{a(257): ""} }, false},
		{"metadata key empty", func(_ *pluginpb.ListResponse, o *pluginpb.Object) { o.Metadata = map[string]string{"k": ""} }, func(_ *pluginpb.ListResponse, o *pluginpb.Object) { o.Metadata = map[string]string{"": "v"} }, false},
		{"metadata value", func(_ *pluginpb.ListResponse, o *pluginpb.Object) { o.Metadata = map[string]string{"k": a(4096)} }, func(_ *pluginpb.ListResponse, o *pluginpb.Object) { o.Metadata = map[string]string{"k": a(4097)} }, false},
		{"next_page_token", func(r *pluginpb.ListResponse, _ *pluginpb.Object) { r.NextPageToken = a(8192) }, func(r *pluginpb.ListResponse, _ *pluginpb.Object) { r.NextPageToken = a(8193) }, false},
		{"marker kind", func(r *pluginpb.ListResponse, _ *pluginpb.Object) { r.Marker.Kind = 7 }, func(r *pluginpb.ListResponse, _ *pluginpb.Object) { r.Marker.Kind = 8 }, false},
		{"marker kind unspecified", func(r *pluginpb.ListResponse, _ *pluginpb.Object) { r.Marker.Kind = 1 }, func(r *pluginpb.ListResponse, _ *pluginpb.Object) { r.Marker.Kind = 0 }, false},
		{"marker value", func(r *pluginpb.ListResponse, _ *pluginpb.Object) { r.Marker.Value = a(4096) }, func(r *pluginpb.ListResponse, _ *pluginpb.Object) { r.Marker.Value = a(4097) }, false},
		{"objects", func(r *pluginpb.ListResponse, o *pluginpb.Object) {
			for range 9999 {
				r.Objects = append(r.Objects, o)
			}
		}, func(r *pluginpb.ListResponse, o *pluginpb.Object) {
			for range 10000 {
				r.Objects = append(r.Objects, o)
			}
		}, false},
		{"timestamps are free", func(_ *pluginpb.ListResponse, o *pluginpb.Object) {
			o.CreatedAt = &timestamppb.Timestamp{Seconds: -1 << 40}
		}, func(_ *pluginpb.ListResponse, o *pluginpb.Object) {
			o.ModifiedAt = &timestamppb.Timestamp{Nanos: -1}
			o.Message.Date = &timestamppb.Timestamp{Seconds: 1 << 50, Nanos: 2e9}
		}, true},
	}
	page := func(t *testing.T, e edit) []byte {
		o := &pluginpb.Object{
			Id: "a", Kind: pluginpb.ObjectKind_OBJECT_KIND_FILE, Message: &pluginpb.MessageHeaders{},
			Permissions: perms(1),
		}
		r := &pluginpb.ListResponse{Objects: []*pluginpb.Object{o}, Marker: &pluginpb.Marker{Kind: 1}}
		e(r, o)
		raw, err := proto.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		return raw
	}
	for _, rule := range rules {
		t.Run(rule.name, func(t *testing.T) {
			for _, c := range []struct {
				e     edit
				valid bool
			}{{rule.in, true}, {rule.out, rule.outIsValid}} {
				raw := page(t, c.e)
				agree(t, raw, false)
				if _, err := decodeListResponse(raw, nil); (err == nil) != c.valid {
					t.Errorf("valid %v: got %v", c.valid, err)
				}
			}
		})
	}
}

// TestListDecodeRejects pins the rules one by one, on single-object pages
// written by the plugin's encoder.
func TestListDecodeRejects(t *testing.T) {
	ok := func() providers.Object {
		return providers.Object{
			ID: "a", Kind: providers.KindFile, Containers: []string{"c"},
			Message:     &providers.MessageHeaders{To: []string{"t"}},
			Permissions: []providers.Permission{{Principal: "p", Role: providers.RoleOwner, Type: providers.PrincipalUser}},
			Metadata:    map[string]string{"k": "v"},
		}
	}
	cases := map[string]func(o *providers.Object){
		"empty id":            func(o *providers.Object) { o.ID = "" },
		"long id":             func(o *providers.Object) { o.ID = strings.Repeat("a", 1025) },
		"control in id":       func(o *providers.Object) { o.ID = "a\nb" },
		"control in version":  func(o *providers.Object) { o.Version = "\x7f" },
		"control in parent":   func(o *providers.Object) { o.ParentID = "\x00" },
		"long multibyte name": func(o *providers.Object) { o.Name = strings.Repeat("é", 2049) },
		"long path":           func(o *providers.Object) { o.Path = strings.Repeat("a", 8193) },
		"unknown kind":        func(o *providers.Object) { o.Kind = "spaceship" },
		"negative size":       func(o *providers.Object) { o.SizeBytes = -1 },
		"upper-case sha256":   func(o *providers.Object) { o.SHA256 = strings.Repeat("A", 64) },
		"short sha256":        func(o *providers.Object) { o.SHA256 = "abc" },
		"long mime type":      func(o *providers.Object) { o.MIMEType = strings.Repeat("a", 256) },
		"long container":      func(o *providers.Object) { o.Containers = []string{strings.Repeat("a", 4097)} },
		"many containers":     func(o *providers.Object) { o.Containers = make([]string, 1001) },
		"long recipient":      func(o *providers.Object) { o.Message.Cc = []string{strings.Repeat("a", 2049)} },
		"long from":           func(o *providers.Object) { o.Message.From = strings.Repeat("a", 2049) },
		"long snippet":        func(o *providers.Object) { o.Message.Snippet = strings.Repeat("a", 1025) },
		"empty principal":     func(o *providers.Object) { o.Permissions[0].Principal = "" },
		"unknown role":        func(o *providers.Object) { o.Permissions[0].Role = "boss" },
		"empty metadata key":  func(o *providers.Object) { o.Metadata[""] = "v" },
		"long metadata value": func(o *providers.Object) { o.Metadata["k"] = strings.Repeat("a", 4097) },
		"invalid UTF-8":       func(o *providers.Object) { o.Name = "\xff" },
		"invalid UTF-8 label": func(o *providers.Object) { o.Containers = []string{"\xc3"} },
	}
	for name, mutate := range cases {
		t.Run(name, func(t *testing.T) {
			o := ok()
			mutate(&o)
			page := providers.Page{Objects: []providers.Object{o}, NextPageToken: "n"}
			if _, err := decodeList(appendListResponse(nil, &page), nil); !errors.Is(err, providers.ErrInvalidResponse) {
				t.Fatalf("got %v, want ErrInvalidResponse", err)
			}
		})
	}
	page := providers.Page{Objects: []providers.Object{ok()}, Marker: providers.Marker{Kind: providers.MarkerHistoryID, Value: "7"}}
	got, err := decodeList(appendListResponse(nil, &page), nil)
	if err != nil || !reflect.DeepEqual(got, page) {
		t.Fatalf("valid page: %+v, %v", got, err)
	}
}

// genObject draws a providers.Object as a provider returns it.
func genObject(t *rapid.T) providers.Object {
	str := func(label string) string { return rapid.StringN(0, 8, -1).Draw(t, label) }
	tm := func(label string) time.Time {
		if rapid.Bool().Draw(t, label+".zero") {
			return time.Time{}
		}
		return time.Unix(rapid.Int64Range(-1e10, 1e10).Draw(t, label+".s"), rapid.Int64Range(0, 999_999_999).Draw(t, label+".n"))
	}
	o := providers.Object{
		ID: str("id"), ParentID: str("parent"), Version: str("version"),
		Kind: rapid.SampledFrom(append([]providers.Kind{"", "bogus"}, providers.Kinds...)).Draw(t, "kind"),
		Name: str("name"), Path: str("path"), SizeBytes: rapid.Int64().Draw(t, "size"),
		SHA256: str("sha"), MIMEType: str("mime"),
		Containers: rapid.SliceOfN(rapid.StringN(0, 5, -1), 0, 3).Draw(t, "containers"),
		CreatedAt:  tm("created"), ModifiedAt: tm("modified"),
		Starred: rapid.Bool().Draw(t, "starred"), Shared: rapid.Bool().Draw(t, "shared"),
		Metadata: rapid.MapOfN(rapid.StringN(0, 5, -1), rapid.StringN(0, 5, -1), 0, 3).Draw(t, "metadata"),
	}
	if rapid.Bool().Draw(t, "hasMessage") {
		o.Message = &providers.MessageHeaders{
			From: str("from"), To: rapid.SliceOfN(rapid.StringN(0, 5, -1), 0, 3).Draw(t, "to"),
			Cc: rapid.SliceOfN(rapid.StringN(0, 5, -1), 0, 3).Draw(t, "cc"), Subject: str("subject"),
			Date: tm("date"), ThreadID: str("thread"), ListID: str("listid"), ListUnsubscribe: str("unsub"),
			ListUnsubscribePost: rapid.Bool().Draw(t, "post"), Snippet: str("snippet"),
		}
	}
	for range rapid.IntRange(0, 2).Draw(t, "perms") {
		o.Permissions = append(o.Permissions, providers.Permission{
			Principal: str("principal"),
			Role:      rapid.SampledFrom(append([]providers.PermissionRole{"", "x"}, roles...)).Draw(t, "role"),
			Type:      rapid.SampledFrom(append([]providers.PermissionType{"", "x"}, ptype...)).Draw(t, "ptype"),
		})
	}
	return o
}

// TestListEncodeMatchesMarshal checks the plugin's encoder against
// proto.Marshal of the generated messages.
func TestListEncodeMatchesMarshal(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		page := providers.Page{NextPageToken: rapid.StringN(0, 8, -1).Draw(t, "token")}
		for range rapid.IntRange(0, 3).Draw(t, "n") {
			page.Objects = append(page.Objects, genObject(t))
		}
		if rapid.Bool().Draw(t, "hasMarker") {
			page.Marker = providers.Marker{Kind: rapid.SampledFrom(providers.MarkerKinds).Draw(t, "mk"), Value: rapid.StringN(0, 8, -1).Draw(t, "mv")}
		}
		want := &pluginpb.ListResponse{NextPageToken: page.NextPageToken, Marker: markerToProto(page.Marker)}
		for i := range page.Objects {
			want.Objects = append(want.Objects, objectToProto(&page.Objects[i]))
		}
		var got pluginpb.ListResponse
		if err := proto.Unmarshal(appendListResponse(nil, &page), &got); err != nil {
			t.Fatal(err)
		}
		if !proto.Equal(&got, want) {
			t.Fatalf("encoded %v\nwant    %v", &got, want)
		}
	})
}

// oddEncodings are valid protobuf the plugin's encoder never writes: the
// fast path must hand them to the generic one, or decide as it does.
func oddEncodings() [][]byte {
	obj := func(fields ...[]byte) []byte {
		var b []byte
		for _, f := range fields {
			b = append(b, f...)
		}
		return protowire.AppendBytes(protowire.AppendTag(nil, fListObjects, protowire.BytesType), b)
	}
	str := func(num protowire.Number, s string) []byte {
		return protowire.AppendString(protowire.AppendTag(nil, num, protowire.BytesType), s)
	}
	vint := func(num protowire.Number, v uint64) []byte {
		return protowire.AppendVarint(protowire.AppendTag(nil, num, protowire.VarintType), v)
	}
	msg := func(num protowire.Number, parts ...[]byte) []byte {
		var b []byte
		for _, p := range parts {
			b = append(b, p...)
		}
		return protowire.AppendBytes(protowire.AppendTag(nil, num, protowire.BytesType), b)
	}
	kind := vint(fObjKind, 3)
	marker := msg(fListMarker, vint(fMarkerKind, 1))
	join := func(parts ...[]byte) []byte {
		var b []byte
		for _, p := range parts {
			b = append(b, p...)
		}
		return b
	}
	return [][]byte{
		join(obj(str(fObjID, "a"), kind), marker),
		join(obj(str(fObjID, "a"), kind, str(fObjID, "b")), marker),                                           // last one wins
		join(obj(str(fObjID, ""), kind, str(fObjID, "b")), marker),                                            // an empty id overwritten
		join(obj(str(fObjID, "a"), kind), msg(fListMarker, vint(fMarkerKind, 0)), marker),                     // merged marker
		join(obj(str(fObjID, "a"), kind, msg(fObjCreated, vint(1, 5)), msg(fObjCreated, vint(2, 7))), marker), // merged time
		join(obj(str(fObjID, "a"), kind, msg(fObjMessage, str(fHdrFrom, "x")), msg(fObjMessage, str(fHdrTo, "y"))), marker),
		join(obj(vint(fObjID, 1), str(fObjID, "a"), kind), marker), // id with another wire type: unknown
		join(obj(str(fObjID, "a"), kind, vint(99, 1), str(1000, "\xff")), marker),
		join(obj(str(fObjID, "a"), kind, msg(fObjMetadata, str(fMapKey, "k"), str(fMapValue, strings.Repeat("v", 5000))), msg(fObjMetadata, str(fMapKey, "k"), str(fMapValue, "short"))), marker),
		join(obj(str(fObjID, "a"), kind, msg(fObjPermissions, str(fPermPrincipal, "p"), vint(fPermRole, 1), vint(fPermType, 1), vint(fPermRole, 9))), marker),
		join(obj(str(fObjID, "a"), vint(fObjKind, 1<<32+3)), marker), // enum truncated to int32
		join(obj(str(fObjID, "a"), kind), str(fListNextPageToken, "\xff")),
		join(obj(str(fObjID, "a"), kind), marker, vint(fListLaneBytes, 9)), // inline and on a lane
		join(obj(str(fObjID, "a"), kind), marker, vint(fListLaneBytes, 0)),
		vint(fListLaneBytes, 9),                                 // only an announcement: not a page
		join(obj(str(fObjID, "a"), kind), marker)[:5],           // truncated
		append(join(obj(str(fObjID, "a"), kind), marker), 0x0c), // end group
		{},
	}
}

func TestListDecodeOddEncodings(t *testing.T) {
	for _, raw := range oddEncodings() {
		agree(t, raw, true)
		// And through decodeList, which falls back.
		got, err := decodeList(raw, nil)
		ref, rerr := decodeListResponseGeneric(raw, nil)
		if (err == nil) != (rerr == nil) || (err == nil && !reflect.DeepEqual(got, ref)) {
			t.Fatalf("%x: decodeList %+v, %v; generic %+v, %v", raw, got, err, ref, rerr)
		}
	}
}

// FuzzListDecode checks the fast path against the generic one on arbitrary
// bytes (go test -fuzz FuzzListDecode ./providers/plugin/).
func FuzzListDecode(f *testing.F) {
	for _, raw := range oddEncodings() {
		f.Add(raw)
	}
	page := providers.Page{NextPageToken: "t", Objects: []providers.Object{{
		ID: "a", Kind: providers.KindMessage, CreatedAt: time.Unix(5, 6), Containers: []string{"x"},
		Message: &providers.MessageHeaders{To: []string{"t"}, Date: time.Unix(1, 0)}, Metadata: map[string]string{"k": "v"},
		Permissions: []providers.Permission{{Principal: "p", Role: providers.RoleOwner, Type: providers.PrincipalUser}},
	}}}
	f.Add(appendListResponse(nil, &page))
	f.Fuzz(func(t *testing.T, raw []byte) {
		got, err := decodeList(raw, nil)
		ref, rerr := decodeListResponseGeneric(raw, nil)
		if (err == nil) != (rerr == nil) || (err == nil && !reflect.DeepEqual(got, ref)) {
			t.Fatalf("decodeList %+v, %v; generic %+v, %v", got, err, ref, rerr)
		}
	})
}
