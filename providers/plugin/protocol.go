package plugin

import (
	"context"
	"sync"

	goplugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
	"google.golang.org/grpc/encoding"
	grpcproto "google.golang.org/grpc/encoding/proto"
	"google.golang.org/grpc/mem"

	"svc.dev/svc/providers"
	"svc.dev/svc/providers/internal/pluginpb"
)

// Handshake is the go-plugin handshake of protocol v1. The magic cookie is
// not a secret: it only stops a user from running a plugin binary by hand.
var Handshake = goplugin.HandshakeConfig{
	ProtocolVersion:  providers.ProtocolVersion,
	MagicCookieKey:   "SVC_PROVIDER_PLUGIN",
	MagicCookieValue: "7d1f0a3c-provider-plugin-v1",
}

// pluginName is the name of the one plugin in the set.
const pluginName = "provider"

// chunkSize is the size of the content chunks of Fetch and Write streams.
// Larger chunks mean fewer messages; gRPC's 4 MiB default message limit
// caps it.
const chunkSize = 1 << 20

// maxMessageSize is the receive limit set on both sides; a page of
// MaxPageSize objects with long metadata stays well below it.
const maxMessageSize = 64 << 20

// Transport tuning for bulk content on a local socket: large HTTP/2 flow
// control windows (which also turn off gRPC's slow-starting window
// estimation) and large socket buffers, on both sides.
const (
	streamWindow = 16 << 20
	connWindow   = 32 << 20
	ioBuffer     = 1 << 20
)

func serverOptions() []grpc.ServerOption {
	return []grpc.ServerOption{
		grpc.MaxRecvMsgSize(maxMessageSize),
		grpc.InitialWindowSize(streamWindow),
		grpc.InitialConnWindowSize(connWindow),
		grpc.ReadBufferSize(ioBuffer),
		grpc.WriteBufferSize(ioBuffer),
	}
}

func dialOptions() []grpc.DialOption {
	return []grpc.DialOption{
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(maxMessageSize), grpc.MaxCallSendMsgSize(maxMessageSize)),
		grpc.WithInitialWindowSize(streamWindow),
		grpc.WithInitialConnWindowSize(connWindow),
		grpc.WithReadBufferSize(ioBuffer),
		grpc.WithWriteBufferSize(ioBuffer),
	}
}

func pluginSet(srv pluginpb.ProviderServiceServer) map[int]goplugin.PluginSet {
	return map[int]goplugin.PluginSet{
		providers.ProtocolVersion: {pluginName: &grpcPlugin{server: srv}},
	}
}

// grpcPlugin is the go-plugin glue: it registers the server in the plugin
// process and returns the generated client on the host.
type grpcPlugin struct {
	goplugin.NetRPCUnsupportedPlugin
	server pluginpb.ProviderServiceServer
}

func (p *grpcPlugin) GRPCServer(_ *goplugin.GRPCBroker, s *grpc.Server) error {
	pluginpb.RegisterProviderServiceServer(s, p.server)
	return nil
}

func (p *grpcPlugin) GRPCClient(_ context.Context, _ *goplugin.GRPCBroker, c *grpc.ClientConn) (any, error) {
	return &grpcClient{ProviderServiceClient: pluginpb.NewProviderServiceClient(c), conn: c}, nil
}

// grpcClient is the host's end of the connection: the generated client,
// and the connection itself for the List calls that decode pages with
// listCodec.
type grpcClient struct {
	pluginpb.ProviderServiceClient
	conn *grpc.ClientConn
}

// listCodec is the codec of the host's List and FetchBatch calls: it
// decodes a ListResponse straight into a checked providers.Page (decodeList,
// see listwire.go), a FetchBatchResponse into checked results
// (decodeFetchBatch, fetchwire.go), and leaves every other message to the
// proto codec. Its name
// is "proto", so the plugin sees an ordinary call. (grpc.ForceCodecV2 is
// marked experimental; grpc is pinned, and a test covers the path.)
type listCodec struct{}

// listResult is what listCodec decodes a ListResponse into. A page that
// fails its checks is a result (err), not a transport error.
type listResult struct {
	early     func(nextPageToken string) // called once the token is read and checked
	laneBytes uint64                     // the page comes on the lane
	page      providers.Page
	err       error
}

var protoCodec = encoding.GetCodecV2(grpcproto.Name)

func (listCodec) Name() string { return grpcproto.Name }

func (listCodec) Marshal(v any) (mem.BufferSlice, error) { return protoCodec.Marshal(v) }

func (listCodec) Unmarshal(data mem.BufferSlice, v any) error {
	if m, ok := v.(*batchMessage); ok {
		// A batch fetch's results (fetchwire.go): decoded in place when in one buffer.
		if len(data) == 1 {
			m.results, m.err = decodeFetchBatch(data[0].ReadOnlyData())
			return nil
		}
		b := data.Materialize()
		m.results, m.err = decodeFetchBatch(b)
		return nil
	}
	res, ok := v.(*listResult)
	if !ok {
		return protoCodec.Unmarshal(data, v)
	}
	// The decoder copies what it keeps, so a page in one buffer is read in
	// place, and one in several is gathered into a reused buffer.
	if len(data) == 1 {
		b := data[0].ReadOnlyData()
		if n, ok := laneResponse(b); ok {
			res.laneBytes = n
			return nil
		}
		res.page, res.err = decodeList(b, res.early)
		return nil
	}
	bp := pageBuffers.Get().(*[]byte)
	b := *bp
	if n := data.Len(); cap(b) < n {
		b = make([]byte, n)
	} else {
		b = b[:n]
	}
	data.CopyTo(b)
	if n, ok := laneResponse(b); ok {
		res.laneBytes = n
	} else {
		res.page, res.err = decodeList(b, res.early)
	}
	if cap(b) <= maxPooledPage {
		*bp = b
		pageBuffers.Put(bp)
	}
	return nil
}

// pageBuffers holds the buffers listCodec gathers pages into; a page
// larger than maxPooledPage gets a buffer of its own.
var pageBuffers = sync.Pool{New: func() any { return new([]byte) }}

const maxPooledPage = 4 << 20
